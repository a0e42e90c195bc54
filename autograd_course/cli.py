"""The ``autograd-course`` command line."""

from __future__ import annotations

import argparse
import sys

from autograd_course import __version__


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``autograd-course``."""
    parser = argparse.ArgumentParser(
        prog="autograd-course",
        description="An auto-graded Jupyter course on PyTorch's automatic differentiation.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stdout)
        return 0
    return 0

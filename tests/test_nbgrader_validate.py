"""``nbgrader validate`` on source/ and release/, and release/ == what nbgrader generates.

One nbgrader process per check, all notebooks at once, in a module fixture (minutes): marked
``nbgrader_run``, which ``make test-fast`` leaves out. Only tests that need that fixture
belong here (release/'s contents are checked in test_exercise_structure.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support.exercises import ROOT, release_path, source_path
from support.units import UNITS

from autograd_course.grading.release import generate

pytestmark = pytest.mark.nbgrader_run


def _nbgrader(*args, cwd) -> str:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONUNBUFFERED"] = "1"  # keep nbgrader's log (stderr) and results (stdout) in order
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return result.stdout


def _split_by_notebook(output: str) -> dict[str, str]:
    """nbgrader validate's output, one section per notebook (keyed by unit)."""
    sections: dict[str, str] = {}
    current = None
    for line in output.splitlines():
        match = re.search(r"Validating '.*/(\d\d_[a-z_]+)\.ipynb'", line)
        if match:
            current = match.group(1)
            sections[current] = ""
        elif current:
            sections[current] += line + "\n"
    return sections


@pytest.fixture(scope="module")
def nbgrader_results(tmp_path_factory):
    """Validate all of source/, validate --invert all of release/, and regenerate release/,
    concurrently, each in one process, outside the course directory (no gradebook.db here)."""
    work = tmp_path_factory.mktemp("nbgrader")
    sources = [str(source_path(u)) for u in UNITS]
    releases = [str(release_path(u)) for u in UNITS]
    # A cell's timeout as generous as the suite's load needs: nbgrader's default (30 s) is
    # about 15 times the slowest test cell (08's, under 2 s on an idle machine).
    timeout = "--Execute.timeout=300"
    with ThreadPoolExecutor(3) as pool:
        validated = pool.submit(_nbgrader, "validate", timeout, *sources, cwd=work)
        inverted = pool.submit(_nbgrader, "validate", "--invert", timeout, *releases, cwd=work)
        generated = pool.submit(generate, ROOT, dest=work / "release")
        return {
            "source": _split_by_notebook(validated.result()),
            "release": _split_by_notebook(inverted.result()),
            "generated": generated.result(),
        }


@pytest.mark.parametrize("unit", UNITS)
def test_nbgrader_validate_source_passes(nbgrader_results, unit):
    output = nbgrader_results["source"].get(unit, "(not validated)")
    assert "Success! Your notebook passes all the tests." in output, output


@pytest.mark.parametrize("unit", UNITS)
def test_nbgrader_validate_invert_release_passes(nbgrader_results, unit):
    output = nbgrader_results["release"].get(unit, "(not validated)")
    assert "Success! The notebook does not pass any tests." in output, output


@pytest.mark.parametrize("unit", UNITS)
def test_release_is_exactly_what_nbgrader_generates(nbgrader_results, unit):
    generated = nbgrader_results["generated"] / unit
    committed = ROOT / "release" / unit
    assert sorted(p.name for p in generated.iterdir()) == sorted(
        p.name for p in committed.iterdir()
    )
    for path in generated.iterdir():
        assert json.loads((committed / path.name).read_text()) == json.loads(path.read_text())
        assert (committed / path.name).read_text() == path.read_text(), "byte-for-byte"

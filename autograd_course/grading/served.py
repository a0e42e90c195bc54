"""The names under which a student's files are kept where Jupyter serves them: never a page.

Jupyter's ``/files/`` route serves a file with the Content-Type that its name gives
(``mimetypes``): a student's ``.html``, ``.svg``, ``.xhtml`` or ``.xml`` would open as a live
page on the server's origin, with the instructor's session. The rules:

- a file the student submitted, or the kernel wrote, keeps its name in ``autograded/`` only if
  its suffix is in :data:`SAFE_SUFFIXES` (an allowlist of types a browser shows as text or an
  image, or downloads) and this machine's ``mimetypes`` gives it the type listed there; any
  other name gets ``.txt`` added (served as ``text/plain``): :func:`safe_name`,
  :func:`make_safe`;
- ``feedback/`` keeps none of them (:class:`.preprocessors.ListOtherFiles`): only nbgrader's
  pages and its ``timestamp.txt``; the feedback page lists the files as text.

>>> [safe_name(n) for n in ("data.csv", "evil.html", "Evil.SVG", "notes", "model.npy")]
['data.csv', 'evil.html.txt', 'Evil.SVG.txt', 'notes.txt', 'model.npy']
"""

from __future__ import annotations

import mimetypes
import os
from pathlib import Path

#: Suffix -> the type ``mimetypes`` must give it (None: none, which Jupyter serves as
#: ``text/plain`` or ``application/octet-stream``).
SAFE_SUFFIXES: dict[str, str | None] = {
    ".txt": "text/plain", ".log": None, ".csv": "text/csv",
    ".tsv": "text/tab-separated-values", ".json": "application/json", ".py": "text/x-python",
    ".npy": None, ".npz": None, ".pth": None, ".png": "image/png", ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
}
#: What a kept name gets added when its own is not safe.
TEXT = ".txt"


def is_safe(name: str) -> bool:
    """Whether ``name`` (a file's name, or a path: its last part counts) is served as text,
    an image or a download."""
    base = os.path.basename(name)
    suffix = os.path.splitext(base)[1].lower()
    if suffix not in SAFE_SUFFIXES or base.startswith("."):
        return False
    return mimetypes.guess_type(base) == (SAFE_SUFFIXES[suffix], None)


def safe_name(name: str) -> str:
    """``name`` if :func:`is_safe`, else ``name`` with ``.txt`` added."""
    return name if is_safe(name) else name + TEXT


def make_safe(folder: Path, keep: set[str] = frozenset()) -> dict[str, str]:
    """Give every file under ``folder`` a safe name (renamed in place, never over another
    file), except the relative paths in ``keep``; remove links and anything that is not a
    regular file or folder. Return what was renamed (old -> new relative path)."""
    renamed = {}
    for path in sorted(folder.rglob("*"), reverse=True):  # a folder's files before it
        relative = str(path.relative_to(folder))
        if relative in keep:
            continue
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            path.unlink(missing_ok=True)
        elif path.is_file() and not is_safe(path.name):
            target = path.with_name(safe_name(path.name))
            count = 0
            while target.exists() or target.is_symlink():
                count += 1
                target = path.with_name(f"{path.name}.{count}{TEXT}")
            path.rename(target)
            renamed[relative] = str(target.relative_to(folder))
    return renamed

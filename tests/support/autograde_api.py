"""nbgrader's Autograde as formgrader's *Autograde* button runs it: ``NbGraderAPI.autograde``
in a process of its own (the Jupyter server's, in formgrader), its log collected by nbgrader's
``capture_log`` on a logger that traitlets leaves at DEBUG, as formgrader's is.

:func:`start` starts it and returns the process: its stdout is the API's answer as JSON (read
it with :func:`answer`), its stderr the log as the server's console shows it (INFO), line by
line as it comes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import json, logging, sys
from nbgrader.apps import NbGraderAPI
from autograd_course.grading.course import Course

course = Course.load(sys.argv[1])
api = NbGraderAPI(config=course.config)
console = logging.StreamHandler(sys.stderr)  # the server's console: INFO
console.setLevel(logging.INFO)
api.log.addHandler(console)
api.log_level = logging.DEBUG  # formgrader sets the level of the server's logger: DEBUG
print(json.dumps(api.autograde(sys.argv[2], sys.argv[3])), flush=True)
"""


def start(course: Path, assignment: str, student: str) -> subprocess.Popen:
    """Run formgrader's Autograde of ``student``'s ``assignment`` in ``course``."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = dict(os.environ, PATH=path, PYTHONWARNINGS="ignore")
    return subprocess.Popen([sys.executable, "-c", SCRIPT, str(course), assignment, student],
                            cwd=course, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def answer(process: subprocess.Popen, timeout: float = 300) -> dict:
    """The API's answer (``success``, ``log``, ``error``) of a run :func:`start` started."""
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def autograde(course: Path, assignment: str, student: str) -> dict:
    """Formgrader's Autograde of ``student``'s ``assignment``, run to its end: its answer."""
    return answer(start(course, assignment, student))

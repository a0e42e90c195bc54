"""The course's JupyterHub settings, shared by every deployment (docs/deploy.md, section 2).

A site's own ``jupyterhub_config.py`` loads this file (``load_subconfig``), then chooses how
users log in and where their servers run: ``jupyterhub_config_docker.py`` beside this file
(DockerSpawner, the production example of docs/deploy.md), or local processes with real
accounts (tests/test_hub.py, which runs this file for real). The site's names come from the
environment of the Hub:

- ``AUTOGRAD_COURSE_INSTRUCTORS``: the instructors' Hub user names, separated by spaces;
- ``AUTOGRAD_COURSE_GRADER``: the account the course's formgrader runs as, which owns the
  course root (default ``grader-autograd-course``);
- ``AUTOGRAD_COURSE_ROOT``: the course root, a clone of the course with its gradebook and
  grader secret, readable by the grader alone (mode 0700);
- ``AUTOGRAD_COURSE_EXCHANGE``: the shared exchange (default ``/srv/nbgrader/exchange``,
  mode 1777, as nbgrader requires);
- ``AUTOGRAD_COURSE_SERVICE_PORT``: the formgrader service's port on loopback (default 9999).
"""

import os

c = get_config()  # noqa: F821  (provided by JupyterHub when it loads this file)

INSTRUCTORS = os.environ.get("AUTOGRAD_COURSE_INSTRUCTORS", "").split()
GRADER = os.environ.get("AUTOGRAD_COURSE_GRADER", "grader-autograd-course")
COURSE_ROOT = os.environ.get("AUTOGRAD_COURSE_ROOT", f"/home/{GRADER}/autograd-course")
EXCHANGE = os.environ.get("AUTOGRAD_COURSE_EXCHANGE", "/srv/nbgrader/exchange")
SERVICE_PORT = int(os.environ.get("AUTOGRAD_COURSE_SERVICE_PORT", "9999"))

# Every user's server opens JupyterLab, and nbgrader's Assignment List there uses the shared
# exchange (the students' nbgrader_config.py beside this file reads this variable).
c.Spawner.default_url = "/lab"
c.Spawner.environment = {"AUTOGRAD_COURSE_EXCHANGE": EXCHANGE}

# The course's formgrader: a Jupyter server run by the Hub as the grader, at the course root
# (nbgrader's "Using nbgrader with JupyterHub"), at /services/autograd-course/formgrader.
c.JupyterHub.services = [{
    "name": "autograd-course",
    "url": f"http://127.0.0.1:{SERVICE_PORT}",
    "command": ["jupyterhub-singleuser", "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={SERVICE_PORT}"],
    "user": GRADER,
    "cwd": COURSE_ROOT,
    "environment": {"AUTOGRAD_COURSE_EXCHANGE": EXCHANGE},
    "oauth_no_confirm": True,  # the course's own service: no "authorize access?" page
}]
# Only the instructors may open it; a student's request gets 403.
c.JupyterHub.load_groups = {"formgrade-autograd-course": {"users": INSTRUCTORS}}
c.JupyterHub.load_roles = [{
    "name": "formgrader",
    "groups": ["formgrade-autograd-course"],
    "scopes": ["access:services!service=autograd-course"],
}]

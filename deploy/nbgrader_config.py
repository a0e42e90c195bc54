"""nbgrader's settings for the users of a course server (docs/deploy.md, section 2).

Install it where every user's Jupyter server reads it: ``/etc/jupyter/nbgrader_config.py`` in
the image, or the folder named by ``JUPYTER_CONFIG_PATH``. The Assignment List then shows the
course and uses the shared exchange that the Hub names (deploy/jupyterhub_config.py). The
course root's own nbgrader_config.py is the instructors'; students never see it.
"""

import os

c = get_config()  # noqa: F821  (provided by nbgrader when it loads this file)

c.CourseDirectory.course_id = "autograd-course"
c.Exchange.root = os.environ.get("AUTOGRAD_COURSE_EXCHANGE", "/srv/nbgrader/exchange")

"""A production Hub for the course: DockerSpawner, one container per user (docs/deploy.md).

The course's settings are in jupyterhub_config.py beside this file; this part only says
where the users' servers run. Start the Hub with ``jupyterhub -f jupyterhub_config_docker.py``
after setting the variables that jupyterhub_config.py lists.
"""

import os
from pathlib import Path

c = get_config()  # noqa: F821  (provided by JupyterHub when it loads this file)
load_subconfig(str(Path(__file__).with_name("jupyterhub_config.py")))  # noqa: F821

c.JupyterHub.spawner_class = "dockerspawner.DockerSpawner"
c.JupyterHub.hub_ip = "0.0.0.0"  # the containers reach the Hub over Docker's network
# An image built from environment.yml, with deploy/nbgrader_config.py in /etc/jupyter/.
c.DockerSpawner.image = "registry.example.org/autograd-course:2026.1"
# The exchange is one folder shared by all containers and the formgrader, at one path.
exchange = os.environ.get("AUTOGRAD_COURSE_EXCHANGE", "/srv/nbgrader/exchange")
c.DockerSpawner.volumes = {exchange: exchange}

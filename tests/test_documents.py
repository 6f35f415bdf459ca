"""Chapters 00-09: the documents a newcomer reads first hold together; a run leaves nothing behind.

* every "§N.M" in README.md, INSTRUCTORS.md and CONTRIBUTING.md is a heading ``N.M ...`` of
  chapter N's notebook;
* every relative link in them points at a file that exists, and no link holds a placeholder;
* README.md's chapter times are INSTRUCTORS.md's (which ``scripts/estimate_time.py`` writes);
* README.md's table of measured figures is there and well formed
  (``scripts/write_readme_figures.py --check``), and ``benchmarks/run_all.py`` reads the RESULT
  lines that fill it;
* the class hub's login page says what to type, and that solutions/ is not in a student's folder;
* a test run leaves no scene's scratch folder in the machine's temporary folder (``conftest.py``).
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ("README.md", "INSTRUCTORS.md", "CONTRIBUTING.md")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def load(relative: str):
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(f"_doc_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def text(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def chapter_headings(number: int) -> list[str]:
    """The Markdown headings of notebook ``NN_*.ipynb``."""
    import nbformat

    (path,) = ROOT.glob(f"notebooks/{number:02d}_*.ipynb")
    cells = nbformat.read(path, as_version=4).cells
    return [line.lstrip("#").strip() for cell in cells if cell.cell_type == "markdown"
            for line in cell.source.splitlines() if line.startswith("#")]


def between(document: str, begin: str, end: str) -> str:
    body = text(document)
    assert body.count(begin) == 1 and body.count(end) == 1, f"{document}: {begin} ... {end} missing"
    return body.split(begin)[1].split(end)[0]


# ------------------------------------------------------------------ references and links
def test_every_section_reference_is_a_heading_of_the_chapter_it_names():
    found, missing = 0, []
    for name in DOCUMENTS:
        for chapter, section in re.findall(r"§(\d+)\.(\d+)", text(name)):
            found += 1
            headings = chapter_headings(int(chapter))
            if not any(h.startswith(f"{int(chapter)}.{section} ") for h in headings):
                missing.append(f"{name}: §{chapter}.{section}")
    assert found >= 10, "the widget list names its sections"
    assert missing == []


def test_a_widget_named_in_instructors_is_in_the_section_it_cites():
    """'Chapter NN, §N.M — the X panel': the section cited is one of chapter NN's own."""
    cited = re.findall(r"\*\*Chapter (\d\d), §(\d+)\.(\d+) — ", text("INSTRUCTORS.md"))
    assert len(cited) == 7
    assert [int(a) for a, b, _ in cited] == [int(b) for a, b, _ in cited]


def test_every_relative_link_points_at_a_file_that_exists():
    broken, seen = [], 0
    for name in DOCUMENTS:
        for target in LINK.findall(text(name)):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            seen += 1
            if not (ROOT / name).parent.joinpath(target.split("#")[0]).exists():
                broken.append(f"{name}: {target}")
    assert seen >= 5 and broken == []


def test_no_link_holds_a_placeholder_and_the_picture_is_a_real_png():
    for name in DOCUMENTS:
        for target in LINK.findall(text(name)):
            assert not re.search(r"OWNER|REPOSITORY|<owner>|<repository>", target), (
                f"{name}: {target}")
    pictures = [t for t in LINK.findall(text("README.md")) if t.endswith(".png")]
    assert pictures, "README.md shows the course before it is installed"
    for picture in pictures:
        assert (ROOT / picture).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_readme_tells_binder_in_words_a_student_can_follow():
    quick = text("README.md").split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "mybinder.org/v2/gh/" not in quick
    assert "`binder/`" in quick and "`notebooks/00_start_here.ipynb`" in quick


# ------------------------------------------------------------------ the README's commands, tables
def test_the_readme_puts_the_environment_first_with_windows_and_uv_lines():
    quick = text("README.md").split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert quick.index("python -m venv .venv") < quick.index("python -m pip install -e .")
    assert ".venv\\Scripts\\activate" in quick
    uv = quick[quick.index("uv venv"):]
    assert uv.startswith("uv venv --seed"), "without --seed there is no pip for `python -m pip`"
    assert uv.index("uv pip install -e .") < uv.index("python scripts/open_course.py")


def test_the_readme_and_ci_give_the_same_test_command():
    command = 'python -m pip install -e ".[test]" && python -m pytest'
    assert f"```bash\n{command}\n```" in text("README.md")
    assert f"{command} || status=$?" in text(".ci/run")


def test_readme_chapter_times_are_instructors_times():
    """README's "core + exercise" column is INSTRUCTORS.md's generated one, chapter by chapter."""
    readme = between("README.md", "<!-- chapters:begin -->", "<!-- chapters:end -->")
    table = between("INSTRUCTORS.md", "<!-- chapter-times:begin -->", "<!-- chapter-times:end -->")
    ours = re.findall(r"^\| (\d\d) \| ([^|]+) \|[^|]+\| (\d+ min) \|$", readme, re.M)
    cell = r"[^|]+\|"
    theirs = re.findall(rf"^\| (\d\d) (.+?) \|{cell * 3} (\d+ min) \|{cell}$", table, re.M)
    assert len(theirs) == 10
    assert [(n, t) for n, _, t in ours] == [(n, t) for n, _, t in theirs]
    for (number, title, _), (_, full, _) in zip(ours, theirs):
        assert title.strip().lower() in full.lower(), (
            f"chapter {number}: README says {title.strip()!r}, the notebook {full!r}")


def test_the_readme_figures_are_well_formed():
    figures = load("scripts/write_readme_figures.py")
    assert figures.main(["--check"]) == 0
    _, inside, _ = figures.split(text("README.md"))
    assert figures.problems(inside) == []
    assert "not measured" not in inside, "run benchmarks/run_all.py, then the script"


def test_the_figures_script_writes_what_its_check_accepts(tmp_path):
    figures = load("scripts/write_readme_figures.py")
    run = {"machine": {"cpus": 2, "python": "3.11.7", "finished": "today", "load_at_start": 0.4},
           "results": {"import_ratio": {"value": "0.061"}, "legality_ratio": {"value": "1.340"}}}
    written = figures.table(run)
    assert figures.problems(written) == []
    assert "| `import toolkit` vs `import pydantic, jsonschema` | 0.061x | at most 1.2x |" in (
        written)
    assert "| worst hostile stream | not measured | under 1 s, 50 MB |" in written
    assert "(2 cores, load average 0.4 when it started, Python 3.11.7, finished today)." in written
    broken = written.replace("| 0.061x |", "|  |").replace("| benchmark |", "| what |")
    assert len(figures.problems(broken)) == 2
    assert figures.problems("\n".join(written.splitlines()[:-3])) != []


def test_run_all_reads_every_kind_of_result_line():
    run_all = load("benchmarks/run_all.py")
    assert run_all.parse_result("RESULT import_ratio 0.061 aim<=1.2 ok") == (
        "import_ratio", {"value": "0.061", "aim": "<=1.2", "verdict": "ok"})
    storm = run_all.parse_result("RESULT ledger_storm_effects_per_key 1 aim==1 ok")
    assert storm[1]["value"] == "1"
    assert run_all.parse_result("RESULT browser_click_to_update skipped") == (
        "browser_click_to_update", {"value": "skipped", "aim": "", "verdict": ""})


# ------------------------------------------------------------------ the class hub's login page
def test_the_hub_login_page_says_what_to_type(tmp_path, monkeypatch):
    from traitlets.config import Config

    monkeypatch.setenv("COURSE_CLASS_PASSWORD", "a class password")
    monkeypatch.setenv("COURSE_HUB_STATE_DIR", str(tmp_path / "state"))
    config = Config()
    path = ROOT / "deploy" / "jupyterhub_config.py"
    code = compile(path.read_text(encoding="utf-8"), str(path), "exec")
    exec(code, {"get_config": lambda: config, "__file__": str(path)})
    note = config.JupyterHub.template_vars["announcement_login"]
    assert "Username:" in note and "Password:" in note and "class password" in note
    student_copy = re.search(r"STUDENT_COPY = \(([^)]*)\)", path.read_text(encoding="utf-8"))
    assert "solutions" not in student_copy.group(1)
    assert "<code>solutions/</code>) are not on this hub" in note
    login = Path(sys.prefix, "share", "jupyterhub", "templates", "login.html")
    if login.is_file():                                  # the hub's own page shows this variable
        assert "announcement_login" in login.read_text(encoding="utf-8")


# ------------------------------------------------------------------ nothing left in TMPDIR
def nbval_run(notebook: str, outside: Path, *extra: str) -> subprocess.CompletedProcess:
    """The suite's way of running one notebook, as a run of its own with TMPDIR at ``outside``."""
    env = {k: v for k, v in os.environ.items() if k != "COURSE_TEST_TMPDIR"}
    env["TMPDIR"] = str(outside)
    argv = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:randomly", *extra, notebook]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_a_run_leaves_no_scratch_folder_behind(tmp_path):
    outside = tmp_path / "machine-tmp"
    outside.mkdir()
    done = nbval_run("solutions/03_inspect_exports.ipynb", outside)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert [p.name for p in outside.iterdir() if not p.name.startswith("pytest-of-")] == []
    # the control: without the run's own TMPDIR (no conftest), the killed kernel leaves its folder
    done = nbval_run("solutions/03_inspect_exports.ipynb", outside, "--noconftest")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    left = [p.name for p in outside.iterdir() if not p.name.startswith("pytest-of-")]
    assert len(left) == 1 and left[0].startswith("exercise03-"), left

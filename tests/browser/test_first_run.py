"""A newcomer's first ten minutes, in a real headless Chromium.

The server is the session's ``lab``: the README's "open the course" command after the install
(``python scripts/open_course.py``), run from a scratch copy of the repository's root, with
Jupyter folders of its own and no JupyterLab setting about notifications (``browser_harness``),
so the page shows what a learner's first run shows:

* the browser is sent to the start page, and the file browser's root is the course folder;
* nothing pops up (no "Would you like to get notified about official Jupyter news?", no update
  notice), the page never asks the server for news or updates, and the server would not look
  for one if asked; a bare ``jupyter lab`` on the same folder does ask, so the check can see it;
* the start page, and a chapter opened from the file browser, show no unsaved-changes dot once
  the kernel has connected and JupyterLab has written the kernel's details into the notebook;
* exercises/ is reached by clicking through the file browser (and toolkit/kernel/legality.py, which
  the start page says to open), and an exercise opened there is unchanged too;
* how long the server takes to answer, the start page to show and its kernel to be ready
  (``first_run.json`` in the artifacts folder, and the summary at the end of the run).

The checks that need no browser (what README.md and INSTRUCTORS.md say, what the launcher passes
to JupyterLab, that the course's settings are valid JupyterLab settings, that a kernel started the
course's way runs code and leaves no "eavesdropping" warning in the terminal) run on every machine.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import json
import uuid
import os
import re
import time
from pathlib import Path

import nbformat
import pytest

import browser_harness as harness
import widget_driver as drive
from widget_chapters import ROOT, start_page_title

README_OPEN = "python -m pip install -e . && python scripts/open_course.py"
NEWS_PROMPT = "Would you like to get notified about official Jupyter news?"
START_PAGE = "notebooks/00_start_here.ipynb"
FIRST_CHAPTER = "notebooks/01_a_request_is_not_an_action.ipynb"
FIRST_EXERCISE = "exercises/01_read_file_hands_on.ipynb"
#: ipykernel's warning at every start of a kernel whose sockets are not encrypted.
EAVESDROPPING = "susceptible to eavesdropping"
#: How long to watch for a pop-up after JupyterLab has restored its layout; a bare JupyterLab
#: shows the news prompt about 0.7 s after that (measured here).
WATCH_S = 4.0


def launcher():
    spec = importlib.util.spec_from_file_location("_open_course", ROOT / "scripts" / "open_course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def section(text: str, heading: str) -> str:
    """The Markdown section under ``heading`` (up to the next heading of the same level or above)."""
    level = heading.split(" ", 1)[0]
    part = text.split(heading + "\n", 1)[1]
    match = re.search(rf"^#{{1,{len(level)}}} ", part, re.M)
    return part[:match.start()] if match else part


# ------------------------------------------------------------------ no browser needed
def test_readme_and_instructors_give_the_one_open_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    instructors = (ROOT / "INSTRUCTORS.md").read_text(encoding="utf-8")
    quick_start = section(readme, "## Quick start")
    assert f"```bash\n{README_OPEN}\n```" in quick_start
    assert "--allow-root" not in quick_start, "a student's machine does not run as root: keep it out of the README"
    assert "python scripts/open_course.py" in instructors
    for name, text in (("README.md", readme), ("INSTRUCTORS.md", instructors)):
        # the old command rooted JupyterLab at notebooks/: exercises/, solutions/ and toolkit/ out of reach
        assert not re.search(r"jupyter lab notebooks/", text), f"{name} still opens JupyterLab in notebooks/"
        assert "urlpath=lab/tree/notebooks/00_start_here.ipynb" in text, f"{name}: Binder must open the start page"


def test_the_launcher_roots_the_course_and_lands_on_the_start_page(monkeypatch):
    from jupyterlab.labapp import LabApp

    module = launcher()
    launched = []
    monkeypatch.setattr(LabApp, "launch_instance", classmethod(lambda cls, argv=None: launched.append(argv)))
    module.main(["--no-browser", "--port=8890"])
    options = launched[0]
    assert options[-2:] == ["--no-browser", "--port=8890"], "the learner's own options come last, so they win"
    given = dict(option.split("=", 1) for option in options[:-2])
    assert given == {"--ServerApp.root_dir": str(ROOT),
                     "--LabApp.default_url": f"/lab/tree/{START_PAGE}",
                     "--LabApp.app_settings_dir": str(ROOT / "lab-settings"),
                     "--LabApp.check_for_updates_class": "jupyterlab.NeverCheckForUpdate",
                     "--KernelManager.transport_encryption": "auto"}
    assert (ROOT / START_PAGE).is_file()
    from jupyterlab import NeverCheckForUpdate  # noqa: F401  (the class the server is told to use exists)


def settings_schema(plugin: str) -> dict:
    """The schema of a JupyterLab plugin's settings, where JupyterLab reads it: the application's
    own plugins in its app directory, a prebuilt extension's (such as ipywidgets' manager) in its
    labextensions folder, ``<extension>/schemas/<package>/<plugin>.json``."""
    from jupyter_core.paths import jupyter_path
    from jupyterlab.commands import get_app_dir

    package, name = plugin.split(":")
    places = [Path(get_app_dir()) / "schemas" / package / f"{name}.json"]
    places += [Path(folder) / package / "schemas" / package / f"{name}.json"
               for folder in jupyter_path("labextensions")]
    found = [place for place in places if place.is_file()]
    assert found, f"{plugin}: no settings schema in {[str(p) for p in places]}"
    return json.loads(found[0].read_text(encoding="utf-8"))


def test_the_course_settings_are_valid_jupyterlab_settings():
    """lab-settings/overrides.json: each plugin's values validate against the installed schema."""
    import jsonschema

    overrides = json.loads((ROOT / "lab-settings" / "overrides.json").read_text(encoding="utf-8"))
    assert overrides["@jupyterlab/apputils-extension:notification"] == {"fetchNews": "false",
                                                                         "checkForUpdates": False}
    for plugin, values in overrides.items():
        schema = settings_schema(plugin)
        jsonschema.validate(values, schema)
        assert set(values) <= set(schema["properties"]), f"{plugin}: a setting its schema lacks"


def test_the_widget_manager_is_left_to_its_own_default():
    """ipywidgets' manager can save widget state at every save (``saveState``, in its schema in
    its labextensions folder); the course leaves it off. With it on, every widget model restored
    from a notebook's stored state marks the notebook modified (the manager's ``register_model``
    calls ``setDirty``), so each chapter would open with the unsaved-changes dot that
    test_the_start_page_is_what_loads forbids. The stored state is scripts/run_notebooks.py's."""
    schema = settings_schema("@jupyter-widgets/jupyterlab-manager:plugin")
    assert schema["properties"]["saveState"]["default"] is False
    overrides = json.loads((ROOT / "lab-settings" / "overrides.json").read_text(encoding="utf-8"))
    assert "@jupyter-widgets/jupyterlab-manager:plugin" not in overrides


def kernel_stderr(tmp_path: Path, **manager) -> str:
    """What a kernel started by a KernelManager with ``manager``'s settings prints on stderr."""
    from jupyter_client import KernelManager

    with open(tmp_path / "kernel.err", "wb") as err:
        km = KernelManager(kernel_name="python3", **manager)
        km.start_kernel(stderr=err)
        try:
            client = km.client()
            client.start_channels()
            try:
                client.wait_for_ready(timeout=120)
                reply = client.execute_interactive("x = 6 * 7", timeout=60)
                assert reply["content"]["status"] == "ok"
            finally:
                client.stop_channels()
        finally:
            km.shutdown_kernel()
    return (tmp_path / "kernel.err").read_text(encoding="utf-8", errors="replace")


def test_kernel_keys_are_what_silences_the_eavesdropping_warning(tmp_path):
    """The control: a kernel without keys from its manager warns; one with them does not."""
    assert EAVESDROPPING in kernel_stderr(tmp_path)
    given = dict(option.split("=", 1) for option in launcher().kernel_options())
    assert given == {"--KernelManager.transport_encryption": "auto"}
    assert EAVESDROPPING not in kernel_stderr(tmp_path, transport_encryption="auto")


def test_a_kernel_started_the_courses_way_runs_code_quietly(course: Path, scratch: Path):
    """The README's command serves the course; a kernel it starts answers over encrypted sockets."""
    lab = harness.Lab(course, scratch / "quiet-lab")
    try:
        status, kernel = lab.api("/api/kernels", method="POST")
        assert status == 201, kernel
        # in a thread of its own: a Playwright test may already run an event loop in this one
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            printed = pool.submit(lambda: asyncio.run(asyncio.wait_for(
                run_in_kernel(lab, kernel["id"], "print(6 * 7)"), 120))).result()
    finally:
        left = lab.stop()
    assert printed == "42\n"
    log = lab.process.log_path.read_text(encoding="utf-8", errors="replace")
    assert "Kernel started" in log
    assert EAVESDROPPING not in log, f"the terminal shows ipykernel's warning:\n{log[-2000:]}"
    assert not left, f"processes outlived JupyterLab: {[harness.command_line(p) for p in left]}"


async def run_in_kernel(lab, kernel_id: str, code: str) -> str:
    """Run ``code`` through the server's websocket, as a notebook tab does; what it printed."""
    from tornado.websocket import websocket_connect

    address = f"ws://127.0.0.1:{lab.port}/api/kernels/{kernel_id}/channels?token={lab.token}"
    socket = await websocket_connect(address)
    msg_id = uuid.uuid4().hex
    socket.write_message(json.dumps({
        "header": {"msg_id": msg_id, "username": "test", "session": uuid.uuid4().hex, "date": "",
                   "msg_type": "execute_request", "version": "5.3"},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True}}))
    printed = ""
    try:
        while True:
            message = json.loads(await socket.read_message())
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "stream":
                printed += message["content"]["text"]
            if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
                return printed
    finally:
        socket.close()


# ------------------------------------------------------------------ in the browser
def test_the_server_was_started_by_the_readme_command_at_the_course_root(lab, course: Path):
    assert lab.argv[1:2] == README_OPEN.split(" && python ")[1].split()
    assert Path(os.readlink(f"/proc/{lab.process.pid}/cwd")) == course
    assert (course / "pyproject.toml").is_file() and (course / "exercises").is_dir(), "a copy of the repository root"


def test_the_start_page_is_what_loads(lab, lab_page, course: Path, artifacts: Path):
    page = lab_page                        # sent where the server told the "browser" to go
    first = drive.FIRST_RUN["_first address"]   # what the tab showed first (it is shared by the run)
    assert re.search(drive.START_PAGE_ADDRESS, first), f"the README's command landed on {first}"
    drive.FIRST_RUN["start page shown (s)"] = round(
        drive.FIRST_RUN["_start page shown"] - drive.FIRST_RUN["_page requested"], 2)
    if not page.evaluate(drive.START_PAGE_IN_FRONT):   # a test before this one used the tab
        drive.open_in_lab(page, "00_start_here")
    heading = page.get_by_role("heading", name=start_page_title())
    heading.wait_for(state="visible", timeout=drive.WAIT_MS)
    drive.wait_for_kernel(page, START_PAGE)
    drive.FIRST_RUN["its kernel ready (s)"] = round(time.monotonic() - drive.FIRST_RUN["_page requested"], 2)
    (artifacts / "first_run.json").write_text(
        json.dumps({k: v for k, v in drive.FIRST_RUN.items() if not k.startswith("_")}, indent=1) + "\n",
        encoding="utf-8")
    # the file browser's root is the course folder, not notebooks/
    assert page.locator("#filebrowser .jp-BreadCrumbs-home").get_attribute("title") == str(course)
    page.screenshot(path=str(artifacts / "first-run-1-start-page.png"))
    assert_unchanged_after_kernel(page, START_PAGE, course)


def test_nothing_pops_up(lab, lab_page, lab_requests: list[str], artifacts: Path):
    page = lab_page
    wait_restored(page)
    time.sleep(WATCH_S)
    page.screenshot(path=str(artifacts / "first-run-2-no-pop-up.png"))
    assert NEWS_PROMPT not in page.locator("body").inner_text()
    assert page.locator(".Toastify__toast").count() == 0, page.locator(".Toastify__toast").all_inner_texts()
    # the status bar's bell counts every notification, shown or dismissed
    assert page.locator(".jp-Notification-Status-Text").inner_text().strip() == "0"
    asked = [url for url in lab_requests if re.search(r"/lab/api/(news|update)\b", url)]
    assert asked == [], f"the page asked the server for news or updates: {asked}"
    status, answer = lab.api("/lab/api/update")     # and the server would not look for one
    assert (status, answer) == (200, {"notification": None})


def test_a_chapter_opened_from_the_file_browser_is_unchanged(lab_page, course: Path, artifacts: Path):
    page = lab_page
    show_file_browser(page)
    open_folder(page, "notebooks")
    item(page, Path(FIRST_CHAPTER).name).dblclick(timeout=drive.WAIT_MS)
    drive.wait_for_kernel(page, FIRST_CHAPTER)
    try:
        page.screenshot(path=str(artifacts / "first-run-3-chapter-01.png"))
        assert_unchanged_after_kernel(page, FIRST_CHAPTER, course)
    finally:
        drive.close_in_lab(page)


def test_exercises_are_reached_by_clicking_through_the_file_browser(lab_page, course: Path, artifacts: Path):
    page = lab_page
    show_file_browser(page)
    go_home(page)                                             # up to the course folder
    for folder in ("exercises", "notebooks", "solutions", "toolkit"):
        item(page, folder).wait_for(state="visible", timeout=drive.WAIT_MS)
    enter(page, "exercises")
    expected = sorted(p.name for p in (course / "exercises").glob("*.ipynb"))
    for name in expected:
        item(page, name).wait_for(state="visible", timeout=drive.WAIT_MS)
    assert listed(page) == expected
    page.screenshot(path=str(artifacts / "first-run-4-exercises.png"))

    item(page, Path(FIRST_EXERCISE).name).dblclick(timeout=drive.WAIT_MS)
    drive.wait_for_kernel(page, FIRST_EXERCISE)
    try:
        page.screenshot(path=str(artifacts / "first-run-5-exercise-01.png"))
        state = drive.unsaved_state(page, FIRST_EXERCISE)
    finally:
        drive.close_in_lab(page)

    # the module the start page says to open is reachable the same way
    go_home(page)
    enter(page, "toolkit")
    enter(page, "toolkit/kernel")
    item(page, "legality.py").wait_for(state="visible", timeout=drive.WAIT_MS)
    open_folder(page, "notebooks")                            # leave the browser where the course starts
    check_unchanged(state, FIRST_EXERCISE, course)


def test_a_bare_jupyter_lab_would_have_asked(browser, course: Path, scratch: Path, artifacts: Path):
    """The control: without the course's settings the news prompt does show, and the check above sees it."""
    plain = harness.Lab(course, scratch / "plain-lab", command=harness.PLAIN_LAB)
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            page = context.new_page()
            page.goto(f"{plain.url}/lab?token={plain.token}", timeout=drive.WAIT_MS)
            page.get_by_text(NEWS_PROMPT).wait_for(state="visible", timeout=drive.WAIT_MS)
            page.screenshot(path=str(artifacts / "first-run-0-bare-jupyter-lab.png"))
            assert page.locator(".Toastify__toast").count() >= 1
            assert page.locator(".jp-Notification-Status-Text").inner_text().strip() != "0"
        finally:
            context.close()
    finally:
        left = plain.stop()
    assert not left, f"processes outlived the bare JupyterLab: {[harness.command_line(p) for p in left]}"


# ------------------------------------------------------------------ helpers
def wait_restored(page) -> None:
    """Wait until JupyterLab has started and restored its layout (the news prompt comes after that)."""
    page.wait_for_function(drive.LAB_READY, timeout=drive.WAIT_MS, polling=100)
    page.evaluate("() => window.jupyterapp.restored.then(() => true)")


def show_file_browser(page) -> None:
    """Open the left sidebar's file browser if it is not showing (a click on its tab)."""
    wait_restored(page)                                   # the layout is what it is going to be
    if not page.locator("#filebrowser").is_visible():
        page.locator('.lm-TabBar-tab[data-id="filebrowser"]').click(timeout=drive.WAIT_MS)
    listing = page.locator("#filebrowser .jp-DirListing-content")
    listing.wait_for(state="visible", timeout=drive.WAIT_MS)


def item(page, name: str):
    """The file browser's entry called ``name`` (a file or a folder)."""
    text = page.locator(".jp-DirListing-itemText", has_text=re.compile(rf"^\s*{re.escape(name)}\s*$"))
    return page.locator("#filebrowser .jp-DirListing-item", has=text)


def listed(page) -> list[str]:
    return sorted(t.strip() for t in page.locator("#filebrowser .jp-DirListing-itemText").all_inner_texts())


#: True once the file browser lists the folder ``path`` ("" is the course folder): its model has
#: that path, no listing is still on its way, and the crumbs show it.
IN_FOLDER = """(path) => {
  const app = window.jupyterapp;
  if (!app) return false;
  for (const w of app.shell.widgets('left')) {
    if (w.id !== 'filebrowser') continue;
    const crumb = path === ''
      || !!w.node.querySelector('.jp-BreadCrumbs-item[data-path="' + path + '"]');
    return w.model.path === path && !w.model._pending && crumb;
  }
  return false;
}"""


#: What the file browser shows: its model's path, whether a listing is on its way, the crumbs.
FOLDER_SHOWN = """() => {
  for (const w of window.jupyterapp.shell.widgets('left')) {
    if (w.id !== 'filebrowser') continue;
    return {path: w.model.path, pending: !!w.model._pending,
            crumbs: [...w.node.querySelectorAll('.jp-BreadCrumbs-item')].map(c => c.dataset.path),
            items: [...w.node.querySelectorAll('.jp-DirListing-itemText')].map(i => i.innerText)};
  }
  return null;
}"""


def wait_in_folder(page, path: str) -> None:
    """Wait until the file browser lists ``path`` (in the course folder; "" for the folder)."""
    try:
        page.wait_for_function(IN_FOLDER, arg=path, timeout=drive.WAIT_MS, polling=100)
    except Exception as error:      # a Playwright timeout: say what the file browser shows instead
        raise AssertionError(f"the file browser did not list {path!r}; it shows "
                             f"{page.evaluate(FOLDER_SHOWN)}") from error


def go_home(page) -> None:
    """Click the file browser's first crumb (the course folder); wait until it is listed."""
    page.locator("#filebrowser .jp-BreadCrumbs-home").click(timeout=drive.WAIT_MS)
    wait_in_folder(page, "")


def enter(page, path: str) -> None:
    """Double-click the entry of the folder ``path`` in the listing; wait until it is listed."""
    item(page, path.rsplit("/", 1)[-1]).dblclick(timeout=drive.WAIT_MS)
    wait_in_folder(page, path)


def open_folder(page, folder: str) -> None:
    """Go to ``folder`` (a child of the course folder) by clicking: the course folder, then the folder."""
    go_home(page)
    enter(page, folder)


def assert_unchanged_after_kernel(page, path: str, course: Path) -> None:
    check_unchanged(drive.unsaved_state(page, path), path, course)


def check_unchanged(state: dict, path: str, course: Path) -> None:
    """No unsaved-changes dot, once JupyterLab has written the kernel's language_info into the notebook."""
    stored = nbformat.read(course / path, as_version=4).metadata.get("language_info", {})
    kernel = state["kernel_language_info"]
    assert state["tab"] is not None, f"{path}: no tab found for the notebook"
    if stored.get("version") and kernel.get("version") != stored["version"] \
            and {**stored, "version": kernel.get("version")} == kernel:
        pytest.skip(f"{path} was stored by Python {stored['version']} and this kernel is Python "
                    f"{kernel.get('version')}: JupyterLab writes the kernel's version into the notebook on "
                    f"open, so it shows as changed here (only the Python that stored it sees it unchanged)")
    assert not state["dirty"] and "jp-mod-dirty" not in state["tab"], (
        f"{path} shows the unsaved-changes dot right after opening: JupyterLab replaced the stored language_info "
        f"{stored} with the kernel's {kernel}; re-run `python scripts/run_notebooks.py {path}`")

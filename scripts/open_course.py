"""Open the course in JupyterLab: the whole repository in the file browser, the start page in front.

    python -m pip install -e . && python scripts/open_course.py   # README.md's "open the course"
    python scripts/open_course.py --no-browser --port=8890          # other options go to JupyterLab
    python scripts/open_course.py --allow-root                      # in a container that runs as root

This is ``python -m jupyter lab``, run in this very process (it starts no process of its own, so
Ctrl+C and SIGTERM reach the server itself, which shuts its kernels down), with these options
before any given on the command line:

* ``--ServerApp.root_dir=<this repository>``: notebooks/, exercises/, solutions/ and toolkit/ are
  all in JupyterLab's file browser, whatever folder the command is run from (it opens in
  notebooks/, the start page's folder; its first crumb goes up to the course folder);
* ``--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb``: the browser opens the start page;
* ``--LabApp.app_settings_dir=<this repository>/lab-settings``: JupyterLab's defaults come from
  ``lab-settings/overrides.json``: no "Would you like to get notified about official Jupyter
  news?" prompt and no update check from the page (either can still be changed in Settings);
* ``--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate``: none from the server either;
* ``--KernelManager.transport_encryption=auto``: every kernel gets CurveZMQ keys from the server
  that starts it (the Python kernel declares that it supports them), so its sockets are encrypted
  and ipykernel does not print "Kernel is running over TCP without encryption ... susceptible to
  eavesdropping" at every kernel start. Left out when this Python's ZeroMQ has no CurveZMQ.

Binder gets the same start page from its link (``?urlpath=lab/tree/notebooks/00_start_here.ipynb``)
and the same defaults from ``binder/postBuild``.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START_PAGE = "notebooks/00_start_here.ipynb"
SETTINGS = "lab-settings"


def kernel_options() -> list[str]:
    """Kernels get keys from their manager: encrypted sockets, no "eavesdropping" warning."""
    import zmq

    return ["--KernelManager.transport_encryption=auto"] if zmq.has("curve") else []


def course_options(root: Path = ROOT) -> list[str]:
    """The JupyterLab options that open the course rooted at ``root``."""
    return [f"--ServerApp.root_dir={root}",
            f"--LabApp.default_url=/lab/tree/{START_PAGE}",
            f"--LabApp.app_settings_dir={root / SETTINGS}",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            *kernel_options()]


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    missing = [name for name in (START_PAGE, f"{SETTINGS}/overrides.json") if not (ROOT / name).is_file()]
    if missing:
        sys.exit(f"open_course: {', '.join(missing)} not found under {ROOT}: is this the course's folder?")
    try:
        from jupyterlab.labapp import LabApp
    except ImportError:
        sys.exit("open_course: JupyterLab is not installed in this Python; run `python -m pip install -e .` first")
    LabApp.launch_instance(argv=course_options() + args)


if __name__ == "__main__":
    main()

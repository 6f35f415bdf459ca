"""Chapters 01-08 and chapter 05's class dashboard: a notebook in Voila, the projector view.

Voila shows text, outputs and live widgets, and hides the code.

    python scripts/show_chapter.py notebooks/02_contracts_and_legality.ipynb
    python scripts/show_chapter.py notebooks/ --no-browser --port=8866   # options go to Voila

This is ``voila``, run in this very process (Ctrl+C reaches the server, which shuts its kernels
down), with two of the course's settings before any given on the command line:

* ``--template=course``: the course's page template, ``lab-settings/voila/templates/course/``, is
  Voila's own "lab" template without its two links to Font Awesome on a CDN (Voila's bundle already
  carries Font Awesome), so the page asks nothing of the network and works offline. The folder is
  put first on ``JUPYTER_PATH``, where Voila looks for templates;
* ``--KernelManager.transport_encryption=auto``: encrypted kernel sockets and no "eavesdropping"
  warning at each kernel start, as in ``scripts/open_course.py``.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from open_course import ROOT, SETTINGS, kernel_options  # noqa: E402  (the launcher beside this one)

TEMPLATE = "course"


def template_root(root: Path = ROOT) -> Path:
    """The Jupyter data folder of the course's own, which holds ``voila/templates/course/``."""
    return root / SETTINGS


def show_options() -> list[str]:
    """The Voila options that show a chapter the course's way."""
    return [f"--template={TEMPLATE}", *kernel_options()]


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    folder = template_root() / "voila" / "templates" / TEMPLATE
    if not (folder / "index.html.j2").is_file():
        sys.exit(f"show_chapter: {folder} not found: is this the course's folder?")
    try:
        from voila.app import Voila
    except ImportError:
        sys.exit("show_chapter: Voila is not installed in this Python; "
                 'run `python -m pip install -e ".[test]"`')
    others = [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    os.environ["JUPYTER_PATH"] = os.pathsep.join([str(template_root()), *others])
    Voila.launch_instance(argv=show_options() + args)


if __name__ == "__main__":
    main()

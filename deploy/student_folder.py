"""Chapters 00-09: on the class hub, a student's folder starts as their own copy of the course.

    python deploy/student_folder.py COURSE_FOLDER STUDENT_FOLDER NAME...

deploy/jupyterhub_config.py runs this before every start of a student's server, as the student
(one Unix user per student) or as the hub's user (the shared mode): each NAME (``notebooks``,
``exercises``, ``pyproject.toml``) is copied from the course folder into the student's folder
unless the student already has something of that name, which is never overwritten. Run as the
student, it can read only what every user may read and write only where the student may, and
what it makes belongs to the student. It prints what it copied.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

SKIPPED = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")


def copy_course(course: Path, folder: Path, names: list[str]) -> list[str]:
    """Copy each of ``names`` from ``course`` into ``folder`` where it is missing; those copied."""
    folder.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in names:
        source, target = course / name, folder / name
        if target.exists() or target.is_symlink() or not source.exists():
            continue
        if source.is_dir():
            shutil.copytree(source, target, ignore=SKIPPED)
        else:
            shutil.copyfile(source, target)
        copied.append(name)
    return copied


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__.splitlines()[2].strip(), file=sys.stderr)
        return 2
    course, folder, *names = argv
    copied = copy_course(Path(course), Path(folder), names)
    print("copied: " + (", ".join(copied) if copied else "nothing (all there)"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

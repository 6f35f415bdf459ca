"""Chapter 00: the start page's environment check: what is installed against the course's declared minimums.

``version_report()`` returns the lines the start page prints: where the
minimums were read from, then one line per requirement with ``ok``,
``TOO OLD`` or ``MISSING`` and what to do about it. The minimums come from
the course folder's ``pyproject.toml`` when the notebook sits inside it, and
from the installed package's own metadata otherwise, so the check says the
same thing in a clone, on Binder, or on a class hub.
"""
from __future__ import annotations

import importlib.metadata as md
import re
import sys
import tomllib
from pathlib import Path

PROJECT = "toolcontract-course"


def release_of(version: str) -> tuple[int, ...]:
    """The numeric release part of a version: '4.2' -> (4, 2), '2.14.0rc1' -> (2, 14, 0)."""
    match = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(part) for part in match.group().split(".")) if match else ()


def course_minimums(start: Path | None = None) -> tuple[str, dict[str, str], str]:
    """The course's minimum Python and package versions, and where they were read from."""
    here = Path.cwd() if start is None else start
    for folder in (here, *here.parents):      # the course folder, seen from notebooks/ or the root
        file = folder / "pyproject.toml"
        project = tomllib.loads(file.read_text(encoding="utf-8")).get("project", {}) if file.is_file() else {}
        if project.get("name") == PROJECT:
            python, requirements, source = project["requires-python"], project["dependencies"], "pyproject.toml"
            break
    else:   # no course folder around: the same list, from the installed package's own metadata
        metadata = md.metadata(PROJECT)
        python, source = metadata["Requires-Python"], "the installed package's metadata"
        requirements = [r for r in md.requires(PROJECT) or [] if ";" not in r]
    packages = {}
    for requirement in requirements:
        name, _, version = requirement.partition(">=")
        packages[name.strip()] = version.strip()
    return python.strip().removeprefix(">="), packages, source


def version_report(start: Path | None = None) -> list[str]:
    """One line per requirement: ``ok``, ``TOO OLD`` (with the installed version) or ``MISSING`` (with the fix)."""
    python_min, packages, source = course_minimums(start)
    here = ".".join(map(str, sys.version_info[:3]))
    ok = sys.version_info[:3] >= release_of(python_min)
    lines = [f"minimum versions read from {source}",
             f"{'python':<11} >= {python_min:<6} " + ("ok" if ok else f"TOO OLD: this is {here}")]
    for package, minimum in packages.items():
        try:
            installed = md.version(package)
        except md.PackageNotFoundError:
            lines.append(f"{package:<11} >= {minimum:<6} MISSING: run  python -m pip install -e .  in the course folder")
            continue
        verdict = "ok" if release_of(installed) >= release_of(minimum) else f"TOO OLD: {installed} is installed; upgrade it"
        lines.append(f"{package:<11} >= {minimum:<6} {verdict}")
    return lines

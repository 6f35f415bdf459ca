"""The book's publication manifest: which chapters are published, in which order.

    load_publication_manifest(book_dir) -> {"title": ..., "chapters": [...]}

The names in ``__all__`` are this module's whole public interface. Everything
else (``MANIFEST_NAME``, ``_load_manifest_text``) may change without notice.
"""
from __future__ import annotations

import json
from pathlib import Path

__all__ = ["ManifestError", "load_publication_manifest"]

MANIFEST_NAME = "manifest.json"


class ManifestError(ValueError):
    """The manifest is missing or malformed, or it lists a chapter file that does not exist."""


def _load_manifest_text(book_dir: Path) -> str:
    path = Path(book_dir) / MANIFEST_NAME
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError(f"no {MANIFEST_NAME} in {Path(book_dir).name}/") from None


def load_publication_manifest(book_dir: Path | str) -> dict:
    """The manifest's title and its published chapters, in order.

    Draft chapters are left out, and every chapter that stays must have its file.
    """
    try:
        data = json.loads(_load_manifest_text(Path(book_dir)))
        title, entries = data["title"], data["chapters"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ManifestError(f"malformed {MANIFEST_NAME}: {exc}") from None
    chapters = []
    for entry in entries:
        if entry.get("draft", False):
            continue
        if not (Path(book_dir) / entry["file"]).is_file():
            raise ManifestError(f"chapter file missing: {entry['file']}")
        chapters.append({"slug": entry["slug"], "title": entry["title"], "file": entry["file"]})
    return {"title": title, "chapters": chapters}

"""Build the book's website: one HTML page per chapter, and a pages.json index.

Run it from anywhere:

    python scripts/build_site.py
"""
import html
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOK_DIR = ROOT / "book"
SITE_DIR = ROOT / "site"
sys.path.insert(0, str(ROOT))  # lets the build import the root-level modules

MANIFEST = json.loads((BOOK_DIR / "manifest.json").read_text(encoding="utf-8"))


def render(title: str, text: str) -> str:
    """One chapter as a minimal HTML page."""
    paragraphs = "\n".join(f"<p>{html.escape(p)}</p>" for p in text.split("\n\n") if p.strip())
    return f"<!doctype html>\n<title>{html.escape(title)}</title>\n<h1>{html.escape(title)}</h1>\n{paragraphs}\n"


def build(site_dir: Path = SITE_DIR) -> list[str]:
    """Write every chapter listed in the manifest; return the page names, in order."""
    site_dir.mkdir(exist_ok=True)
    pages = []
    for chapter in MANIFEST["chapters"]:
        text = (BOOK_DIR / chapter["file"]).read_text(encoding="utf-8")
        page = chapter["slug"] + ".html"
        (site_dir / page).write_text(render(chapter["title"], text), encoding="utf-8")
        pages.append(page)
    (site_dir / "pages.json").write_text(json.dumps(pages, indent=2) + "\n", encoding="utf-8")
    return pages


if __name__ == "__main__":
    for name in build():
        print(name)

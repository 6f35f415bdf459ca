"""Fingerprint the course's source texts, so a test can spot a sentence copied from them.

    python scripts/source_overlap.py FOLDER        # read FOLDER's texts, write tests/data/source_shingles.txt

The course is written in its own words: no run of 12 consecutive words of a source text may appear in a
notebook's markdown (tests/test_own_words.py). The sources themselves stay out of the repository. This
script reads every UTF-8 text file under FOLDER, lowercases it, splits it into words (``[a-z0-9]+``), and
stores each distinct run of ``RUN`` consecutive words of one file only as a short digest (``DIGEST_BYTES``
bytes of BLAKE2b, in hex), one a line, sorted. A digest cannot be turned back into the words, and the test
needs only the file this writes.
"""
from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path
from typing import Iterable, Iterator

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "source_shingles.txt"
RUN = 12            # words in a run: long enough that a shared run is a copied sentence, not a stock phrase
DIGEST_BYTES = 5    # 10 hex digits: ~1e12 values, so a chance hit among ~10^4 runs x ~10^5 checked is ~1e-3
HEADER = (f"# Digests of every distinct run of {RUN} consecutive words in the course's source texts\n"
          f"# (lowercase words [a-z0-9]+, joined by one space, BLAKE2b with a {DIGEST_BYTES}-byte digest, hex).\n"
          "# Written by scripts/source_overlap.py; read by tests/test_own_words.py. Not the texts themselves.\n")


def words(text: str) -> list[str]:
    """The normalised words of ``text``."""
    return re.findall(r"[a-z0-9]+", text.lower())


def runs(ws: list[str], size: int = RUN) -> Iterator[tuple[int, tuple[str, ...]]]:
    """(position, run) for every run of ``size`` consecutive words."""
    for i in range(len(ws) - size + 1):
        yield i, tuple(ws[i:i + size])


def digest(run: Iterable[str]) -> str:
    return hashlib.blake2b(" ".join(run).encode("utf-8"), digest_size=DIGEST_BYTES).hexdigest()


def source_texts(folder: Path) -> Iterator[tuple[Path, str]]:
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        try:
            yield path, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            print(f"skipped {path.name}: not UTF-8 text", file=sys.stderr)


def digests_of(texts: Iterable[str]) -> list[str]:
    """The sorted distinct digests of every run within each text (a run never spans two texts)."""
    return sorted({digest(run) for text in texts for _, run in runs(words(text))})


def file_text(digests: list[str]) -> str:
    return HEADER + "".join(d + "\n" for d in digests)


def read_digests(path: Path = OUT) -> set[str]:
    """The digests stored in ``path`` (comment lines skipped)."""
    return {line.strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, help="the folder holding the source texts")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write (default {OUT.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        parser.error(f"{args.folder} is not a folder")
    texts = [text for _, text in source_texts(args.folder)]
    if not texts:
        parser.error(f"{args.folder} holds no text files")
    digests = digests_of(texts)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        f.write(file_text(digests))
    print(f"{len(texts)} text(s), {len(digests)} distinct {RUN}-word runs -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

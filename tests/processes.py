"""What a test process has started and not ended: its live child processes, read from /proc."""
from __future__ import annotations

import os
from pathlib import Path


def live_children() -> list[int]:
    """Live (not zombie) child processes of this test process."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                found.append(int(entry.name))
    return found

"""What the three-rung path ladder costs, against a naive read of the same file.

    python benchmarks/bench_read_file.py

Measured on a 1 KB file two folders deep (``src/app/main.py``) in a temporary workspace:

* ``Workspace.read(path)``: rung 1 (lexical), rung 2 (``realpath``), rung 3 (open each folder
  with ``O_NOFOLLOW`` from the workspace descriptor, ``lstat``, open, ``fstat``, read, close),
  then SHA-256;
* ``Host.execute`` of a ``read_file`` call: schema, path guard, ``file_exists`` precondition,
  the executor above and the postcondition, i.e. the whole governed call;
* the reference systems' method: ``os.path.realpath``, a containment check, then an
  ordinary open, read and SHA-256 (it has the check/use race the ladder closes);
* the naive read ``(root / path).read_bytes()`` plus SHA-256, with no confinement at all,
  for scale.

Each is timed with ``timeit`` in interleaved batches; best and median batch are reported.
Aim: the ladder costs at most 3x the realpath-then-open reference. In absolute terms all of
them take microseconds to tens of microseconds, far below one model round trip, so the aim
guards against an accidental slowdown (say, a rung that lists directories).
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

from timing import time_each

AIM = 3.0


def setup(base: Path) -> dict:
    import toolkit as tk
    from toolkit.kernel import make_read_file
    from toolkit._workspace import Workspace

    root = base / "ws"
    (root / "src" / "app").mkdir(parents=True)
    (root / "src" / "app" / "main.py").write_bytes(b"print('hello')\n" * 68)     # 1020 bytes
    ws = Workspace(root)
    host = tk.Host.of([make_read_file(ws)])
    call = tk.request("read_file", {"path": "src/app/main.py"}, call_id="call_1")
    assert host.execute(call).ok
    naive_path = ws.root / "src/app/main.py"

    def realpath_then_open(path: str = "src/app/main.py") -> str:
        real = os.path.realpath(os.path.join(ws.root, path))
        if os.path.commonpath([real, ws.root]) != str(ws.root):
            raise PermissionError(path)
        with open(real, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()

    return {
        "naive read + sha256": lambda: hashlib.sha256(naive_path.read_bytes()).hexdigest(),
        "realpath, then open": realpath_then_open,
        "Workspace.read (3 rungs)": lambda: ws.read("src/app/main.py"),
        "Host.execute(read_file)": lambda: host.execute(call),
    }


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        cases = setup(Path(tmp))
        timings = time_each(cases, repeat=15, number=2000)
    print(f"{'case':<28}{'best µs':>10}{'median µs':>12}")
    for name, (best, median) in timings.items():
        print(f"{name:<28}{best * 1e6:>10.1f}{median * 1e6:>12.1f}")
    reference = timings["realpath, then open"][0]
    ladder = timings["Workspace.read (3 rungs)"][0] / reference
    naive = timings["Workspace.read (3 rungs)"][0] / timings["naive read + sha256"][0]
    governed = timings["Host.execute(read_file)"][0] / reference
    print(f"ladder / realpath-then-open: {ladder:.2f}x   ladder / naive: {naive:.2f}x   "
          f"whole governed call / realpath-then-open: {governed:.2f}x")
    print(f"RESULT read_file_ladder_ratio {ladder:.2f} aim<={AIM:g} {'ok' if ladder <= AIM else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

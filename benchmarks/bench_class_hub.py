"""A class on one hub: the whole cycle's time and each student's memory, for a room of any size.

    python benchmarks/bench_class_hub.py              # five students, as tests/test_class_hub.py
    python benchmarks/bench_class_hub.py 20           # twenty (half with keys off, half with keys on)

It runs the cycle of tests/test_class_hub.py (deploy/jupyterhub_config.py on 127.0.0.1, every
server started at once, chapter 05's class experiment in every kernel, the dashboard, everything
stopped and checked gone) and prints what each phase took and what a student costs. The aims are
for five students on two cores: the whole cycle within 40 s, a student within 256 MiB of RSS
(single-user server and its kernel, with the start page open).
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from test_class_hub import MIB, class_cycle  # noqa: E402

AIM_CYCLE_S = 40.0     # five students
AIM_STUDENT_MIB = 256.0


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv else 5
    students = {f"student{i:02d}": i % 2 == 1 for i in range(n)}      # even: keys off, odd: keys on
    with tempfile.TemporaryDirectory(prefix="bench-class-hub-") as base:
        cycle = class_cycle(Path(base), students, ready_within=max(60.0, 6.0 * n))
    off = sum(1 for keyed in students.values() if not keyed)
    found = (cycle.counts.invoices, cycle.counts.duplicates)
    print("\n".join(cycle.report()))
    print(f"the shared service counted {found[0]} invoices and {found[1]} duplicates "
          f"(expected {n + off} and {off})")
    per_student = sum(sum(m) for m in cycle.memory.values()) / n / MIB
    whole = cycle.figures["whole cycle"]
    scaled = AIM_CYCLE_S * max(1.0, n / 5)
    print(f"RESULT class_hub_cycle_{n}_students_s {whole:.1f} aim<={scaled:g} {'ok' if whole <= scaled else 'missed'}")
    print(f"RESULT class_hub_student_rss_mib {per_student:.0f} aim<={AIM_STUDENT_MIB:g} "
          f"{'ok' if per_student <= AIM_STUDENT_MIB else 'missed'}")
    return 0 if found == (n + off, off) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A class on one hub: the whole cycle's time and each student's memory, for a room of any size.

    python benchmarks/bench_class_hub.py             # five students, as tests/test_class_hub.py
    python benchmarks/bench_class_hub.py 20          # twenty (half with keys off, half on)
    python benchmarks/bench_class_hub.py 20 --apart  # a room: twenty, one Unix user each (root)

It runs the cycle of tests/test_class_hub.py (deploy/jupyterhub_config.py on 127.0.0.1, every
server started at once, chapter 05's class experiment in every kernel, the dashboard, everything
stopped and checked gone) and prints what each phase took and what a student costs. Without
``--apart`` every student runs as the hub's user (the shared mode); with it the hub creates a
throwaway Unix user per student, runs each server and kernel as that student, and the benchmark
removes the students and whatever they left afterwards (tests/hub_students.py). The aims are for
two cores: five students' whole cycle within 40 s, twenty students apart all ready within 120 s
of being asked for, a student within 256 MiB of RSS (single-user server and its kernel, with the
start page open), and the class's counts exact: one invoice per student with keys on, two (one
duplicate) per student with keys off. The room (``20 --apart``) takes minutes on a busy machine:
run_all.py runs it only when asked (``--room``).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from test_class_hub import MIB, class_cycle, students_apart  # noqa: E402

AIM_CYCLE_S = 40.0     # five students
AIM_ROOM_READY_S = 120.0     # twenty students apart, from asking to all ready
AIM_STUDENT_MIB = 256.0


def verdict(ok: bool) -> str:
    return "ok" if ok else "missed"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("students", nargs="?", type=int, default=5)
    parser.add_argument("--apart", action="store_true", help="one Unix user per student (root)")
    options = parser.parse_args(argv)
    n, ready_within = options.students, max(120.0, 8.0 * options.students)
    with tempfile.TemporaryDirectory(prefix="bench-class-hub-") as base:
        if options.apart:
            with students_apart() as (setup, throwaway):
                students = {throwaway.name(f"s{i:02d}"): i % 2 == 1 for i in range(n)}
                cycle = class_cycle(Path(base), students, ready_within, setup=setup)
        else:
            students = {f"student{i:02d}": i % 2 == 1 for i in range(n)}  # even: keys off
            cycle = class_cycle(Path(base), students, ready_within)
    off = sum(1 for keyed in students.values() if not keyed)
    found = (cycle.counts.invoices, cycle.counts.duplicates)
    rows_right = all((cycle.counts.student(s).invoices, cycle.counts.student(s).duplicates)
                     == ((1, 0) if keyed else (2, 1)) for s, keyed in students.items())
    print("\n".join(cycle.report()))
    print(f"the shared service counted {found[0]} invoices and {found[1]} duplicates "
          f"(expected {n + off} and {off}); every student's own row right: {rows_right}")
    per_student = sum(sum(m) for m in cycle.memory.values()) / n / MIB
    if options.apart:
        own = all(len(uids) == 1 and 0 not in uids for uids in cycle.uids.values())
        print(f"every server and kernel ran as its own student: {own}")
        ready = cycle.figures["servers ready"]
        print(f"RESULT class_hub_room_{n}_apart_ready_s {ready:.1f} aim<={AIM_ROOM_READY_S:g} "
              f"{verdict(ready <= AIM_ROOM_READY_S)}")
        print(f"RESULT class_hub_room_student_rss_mib {per_student:.0f} aim<={AIM_STUDENT_MIB:g} "
              f"{verdict(per_student <= AIM_STUDENT_MIB)}")
        print(f"RESULT class_hub_room_duplicates {found[1]} aim=={off} {verdict(found[1] == off)}")
        print(f"RESULT class_hub_room_invoices {found[0]} aim=={n + off} "
              f"{verdict(found[0] == n + off)}")
        return 0 if found == (n + off, off) and rows_right and own else 1
    whole = cycle.figures["whole cycle"]
    scaled = AIM_CYCLE_S * max(1.0, n / 5)
    print(f"RESULT class_hub_cycle_{n}_students_s {whole:.1f} aim<={scaled:g} "
          f"{verdict(whole <= scaled)}")
    print(f"RESULT class_hub_student_rss_mib {per_student:.0f} aim<={AIM_STUDENT_MIB:g} "
          f"{verdict(per_student <= AIM_STUDENT_MIB)}")
    return 0 if found == (n + off, off) and rows_right else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

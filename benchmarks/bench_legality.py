"""What the full legality verdict costs, against bare schema validation of the same arguments.

    python benchmarks/bench_legality.py [--profile]

Measured (steady state: the validator is compiled and jsonschema imported before timing):

* ``toolkit.kernel.legality.check(call, CREATE_INVOICE, caller, world)`` on a valid ``create_invoice``
  call: parse the arguments, validate the schema, check the permission and guards, run the
  preconditions and approval rule, build the ``Verdict`` with its three tests;
* ``Draft202012Validator(schema).is_valid(arguments)``, compiled once before timing: the
  least any schema-checking host does.

Each is timed with ``timeit`` in batches; the best batch (least disturbed by the machine) and
the median batch are reported, with their ratio.
Aim: the whole verdict costs at most 1.5x the bare validation.
With ``--profile`` (or when the aim is missed) a cProfile of ``check`` is printed as well.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import timeit

from timing import time_each

AIM = 1.5


def setup():
    from jsonschema import Draft202012Validator

    import toolkit as tk
    from course.worlds import CREATE_INVOICE, Books

    arguments = {"order_id": "order-431", "amount": 100, "currency": "EUR",
                 "idempotency_key": "invoice:order-431:v1"}
    caller = tk.Caller("agent-427", frozenset({"billing.write"}))
    world = Books(orders={"order-431": {"approved": True}})
    call = tk.request("create_invoice", arguments, call_id="call_1")
    verdict = tk.check(call, CREATE_INVOICE, caller, world)
    assert verdict.legal == 1, verdict
    bare = Draft202012Validator(CREATE_INVOICE.schema)
    assert bare.is_valid(arguments)
    return {
        "check (full verdict)": lambda: tk.check(call, CREATE_INVOICE, caller, world),
        "is_valid (bare schema)": lambda: bare.is_valid(arguments),
    }


def profile(fn, calls: int = 20000, lines: int = 18) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn()
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("tottime").print_stats(lines)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="legality check vs bare jsonschema validation")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    cases = setup()
    for fn in cases.values():  # warm up
        timeit.timeit(fn, number=args.number)
    results = time_each(cases, args.repeat, args.number)
    print(f"{args.repeat} batches of {args.number} calls, per call:")
    for name, (best, median) in results.items():
        print(f"  {name:<24} best {1e6 * best:7.2f} us   median {1e6 * median:7.2f} us")
    (best_c, med_c), (best_b, med_b) = results.values()
    ratio, ratio_median = best_c / best_b, med_c / med_b
    ok = ratio <= AIM
    print(f"ratio check / is_valid: best {ratio:.2f}x, median {ratio_median:.2f}x"
          f" -> {'meets' if ok else 'MISSES'} the aim of <= {AIM}x")
    if args.profile or not ok:
        print(profile(cases["check (full verdict)"]))
    print(f"RESULT legality_ratio {ratio:.3f} aim<={AIM} {'ok' if ok else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

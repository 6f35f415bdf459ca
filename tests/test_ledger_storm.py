"""A crash storm on the durable ledger: 8 worker processes, 600 keys, random SIGKILLs mid-call, a restart.

The storm itself lives in ``benchmarks/bench_ledger_storm.py`` (which prints the figures); this test runs it and
holds the promises: exactly one effect per key, no result lost, no key left pending once its lease has expired.
Marked slow (a few seconds); CI runs it like every other test.
"""
import importlib.util
import signal
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_ledger_storm.py"


def load_storm():
    spec = importlib.util.spec_from_file_location("bench_ledger_storm", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.storm


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@pytest.mark.parametrize("lease", [0.2, 2.0], ids=["short-lease", "long-lease"])
def test_one_effect_per_key_through_kills_and_a_restart(lease):
    found = load_storm()(workers=8, keys=600, kills=40, lease=lease, seed=7)
    assert found["keys"] == 600 and found["kills"] >= 40
    assert found["kills_mid_call"] > 0, f"no kill landed inside a call, so nothing was tested: {found}"
    assert found["effects_per_key"] == [1] and found["duplicate_effects"] == 0, found
    assert found["lost_results"] == 0, f"a key's recorded result is not the effect the record holds: {found}"
    assert found["stuck_keys"] == 0, f"a key stayed pending after its lease expired: {found}"
    assert set(found["answers_after_restart"]) <= {"ran", "replayed", "reconciled"}, found
    assert sum(found["answers_after_restart"].values()) == 600
    assert set(found["reaped"]) <= {"reconciled", "failed"}, "the effect log always answers: nothing stays dark"

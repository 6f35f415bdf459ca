"""A crash storm on the durable ledger: 8 worker processes, 600 keys, random SIGKILLs mid-call, a restart.

The storm itself lives in ``benchmarks/bench_ledger_storm.py`` (which prints the figures); this
module runs it on a SQLite file and on a throwaway PostgreSQL cluster (``tests/postgres.py``:
started for this module, stopped and removed after it) and holds the same promises on both:
exactly one effect per key, no result lost, no key left pending once its lease has expired. Each
run prints its figures (time, kills, effects, keys/s), so the two databases can be compared.
Marked slow (seconds each); CI runs them like every other test, PostgreSQL included.
"""
import importlib.util
import signal
from pathlib import Path

import pytest

import postgres

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_ledger_storm.py"
LEASES = pytest.mark.parametrize("lease", [0.2, 2.0], ids=["short-lease", "long-lease"])


def load_storm():
    spec = importlib.util.spec_from_file_location("bench_ledger_storm", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.storm


@pytest.fixture(scope="module")
def server():
    postgres.needed()
    with postgres.cluster() as cluster:
        yield cluster


def holds_the_promises(found: dict) -> None:
    assert found["keys"] == 600 and found["kills"] >= 40
    assert found["kills_mid_call"] > 0, f"no kill landed inside a call, so nothing was tested: {found}"
    assert found["effects_per_key"] == [1] and found["duplicate_effects"] == 0, found
    assert found["effects"] == 600, found
    assert found["lost_results"] == 0, f"a key's recorded result is not the effect the record holds: {found}"
    assert found["stuck_keys"] == 0, f"a key stayed pending after its lease expired: {found}"
    assert set(found["answers_after_restart"]) <= {"ran", "replayed", "reconciled"}, found
    assert sum(found["answers_after_restart"].values()) == 600
    assert set(found["reaped"]) <= {"reconciled", "failed"}, "the effect log always answers: nothing stays dark"


def report(database: str, lease: float, found: dict, capsys) -> None:
    with capsys.disabled():
        print(f"\nledger storm on {database}, lease {lease:g} s: {found['keys']} keys, "
              f"{found['kills']} SIGKILLs ({found['kills_mid_call']} inside a call), "
              f"{found['effects']} effects, {found['seconds']} s, "
              f"{found['keys_per_second']} keys/s")


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@LEASES
def test_one_effect_per_key_through_kills_and_a_restart(lease, capsys):
    found = load_storm()(workers=8, keys=600, kills=40, lease=lease, seed=7)
    holds_the_promises(found)
    report("SQLite", lease, found, capsys)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@LEASES
def test_the_same_storm_on_postgresql(server, lease, capsys):
    url = server.create(f"storm_{int(lease * 1000)}")
    found = load_storm()(workers=8, keys=600, kills=40, lease=lease, seed=7, url=url)
    holds_the_promises(found)
    import psycopg

    with psycopg.connect(url) as check:      # the rows are on the server, one per key, all done
        rows = "SELECT count(*), count(*) FILTER (WHERE state = 'done') FROM ledger"
        assert check.execute(rows).fetchone() == (600, 600)
    report("PostgreSQL", lease, found, capsys)

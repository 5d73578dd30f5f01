"""The short fault-injection profile of bench/chaos.py (which runs the long one and prints the
figures): SIGKILL of a real load process mid-load, a torn last write of DuckDB's WAL, a full
disk under FINOPS_HOME, a policy run killed mid-run, cloud API errors / throttling /
timeouts / resets through a fault proxy in front of moto, and a benchmark launch / teardown
process killed mid-run. Each fault is followed by what an
Airflow retry does; nothing may be lost, doubled, mixed or left running."""

from __future__ import annotations

import random

import pytest

from tests.fixtures.bench_scripts import bench_script


@pytest.fixture(scope="module")
def chaos(tmp_path_factory):  # type: ignore[no-untyped-def]
    mod = bench_script("chaos")
    work = tmp_path_factory.mktemp("chaos")
    old, new = mod.make_deliveries(work / "exports", 1500, 7)
    return mod, work, old, new


def test_billing_loads_survive_kill_torn_wal_and_full_disk(chaos, finops_home):
    mod, work, old, new = chaos
    tally, rng = mod.Tally(), random.Random(7)
    (work / "calibrate").mkdir()
    import time

    t0 = time.monotonic()
    mod.load("duckdb", work / "calibrate", old)
    duration = time.monotonic() - t0
    base = work / "calibrate" / "warehouse.duckdb"  # holds the old month: copied, not loaded again
    mod.billing_round(tally, "kill_load_duckdb", "duckdb", work, old, new, rng, duration, base, rerun=False)
    mod.torn_wal_round(tally, work, old, new, rng, base)
    ran_disk_full = mod.disk_full_round(tally, work, old, new, base)
    assert tally.lost == [], mod.report(tally)
    assert tally.survived["kill_load_duckdb"] == tally.survived["torn_wal"] == 1
    assert not ran_disk_full or tally.survived["disk_full"] == 1


def test_policy_survives_kill_and_cloud_faults(chaos, finops_home, moto_endpoint):
    mod, work, _, _ = chaos
    mod.load_proxy()
    tally, rng = mod.Tally(), random.Random(11)
    faults = mod.cloud_errors_round(tally, work, moto_endpoint, 2, rng)
    mod.policy_kill_round(tally, work, moto_endpoint, 2, rng, 3.0)
    assert tally.lost == [], mod.report(tally)
    assert sum(faults.values()) > 0 and tally.survived["kill_policy"] == 1


def test_benchmark_launch_and_teardown_survive_a_kill(chaos, finops_home, moto_endpoint):
    """A benchmark process killed while launching or tearing down (the reaper killed mid-call:
    tests/gpubench/test_kill_between_call_and_row.py and bench/chaos.py): after the retry and the
    reaper nothing runs, each instance's end and each launch is on record exactly once, no row
    is left pending."""
    mod, work, _, _ = chaos
    tally, rng = mod.Tally(), random.Random(5)
    mod.bench_kill_round(tally, work, moto_endpoint, 2, rng, 2.0)
    assert tally.lost == [], mod.report(tally)
    assert tally.survived["kill_bench"] == 1

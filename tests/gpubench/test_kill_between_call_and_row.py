"""A benchmark task killed between a cloud call and its audit row: the row is written (pending)
before the call, and the next try settles it from what the cloud shows, so every launch /
terminate / reap is on record exactly once and says no more than is known. The kill is a
BaseException raised by the launcher right before or after the real call (moto EC2): like a
SIGKILL, nothing in the task catches it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from finops.gpubench import lifecycle
from finops.gpubench.launchers.aws import AwsLauncher
from finops.gpubench.operators import make_presign
from finops.policies.audit import outcome_of

RUN = "scheduled__2026-11-20T06:00:00+00:00"


class Killed(BaseException):
    """The task process died here."""


class DiesAround:
    """The real AWS launcher; the process dies right `before` or `after` the named call."""

    def __init__(self, inner: AwsLauncher, call: str, when: str):
        self.inner, self.call, self.when = inner, call, when
        self.provider = inner.provider

    def _around(self, name: str, fn: Any, *a: Any) -> Any:
        if name == self.call and self.when == "before":
            raise Killed(name)
        out = fn(*a)
        if name == self.call:
            raise Killed(name)
        return out

    def launch(self, spec: Any) -> list[str]:
        return self._around("launch", self.inner.launch, spec)  # type: ignore[no-any-return]

    def find(self, bench_run_id: str | None = None) -> Any:
        return self.inner.find(bench_run_id)

    def terminate(self, ids: list[str]) -> None:
        self._around("terminate", self.inner.terminate, ids)


def _rows(wh, action: str) -> list[tuple[str, str, str, str]]:  # type: ignore[no-untyped-def]
    rows = wh.query(
        "SELECT resource_id, status, result, dry_run FROM policy_actions WHERE action = ? "
        "ORDER BY created_at",
        [action],
    )
    return [(rid, status, outcome_of(status, result, dry), result) for rid, status, result, dry in rows]


def _states(client) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {
        i["InstanceId"]: i["State"]["Name"]
        for r in client.describe_instances()["Reservations"]
        for i in r["Instances"]
    }


@pytest.mark.parametrize("when", ["before", "after"])
def test_killed_launch_is_recorded_once(bench_ec2, bench_settings, duckdb_wh, aws_conn, bench_alerts, when):
    client, _ = bench_ec2
    real = AwsLauncher(client, bench_settings.targets[0], max_running=bench_settings.max_running)
    targets, _ = lifecycle.plan(bench_settings)
    prepared = lifecycle.prepare(bench_settings, targets[0], RUN)
    with pytest.raises(Killed):
        lifecycle.launch(
            prepared,
            bench_settings,
            DiesAround(real, "launch", when),
            dry_run=False,
            wh=duckdb_wh,
            presign=make_presign(aws_conn),
        )
    [(bid, status, _, _)] = _rows(duckdb_wh, "launch")
    assert (bid, status) == (prepared["bench_run_id"], "pending")  # on record before the call
    again = lifecycle.launch(
        prepared, bench_settings, real, dry_run=False, wh=duckdb_wh, presign=make_presign(aws_conn)
    )
    states = _states(client)
    assert len(states) == 1 and again["instance_ids"] == list(states)  # launched once, never twice
    rows = _rows(duckdb_wh, "launch")
    if when == "after":  # the killed try's call made it: its row says so, the retry adopted it
        assert [(s, o, r) for _, s, o, r in rows] == [("done", "done", "ok")]
    else:  # the killed try never called: its row says so, the retry's call has its own row
        assert [(s, o) for _, s, o, _ in rows] == [("not_attempted", "not_attempted"), ("done", "done")]


class FailsAfterCreating:
    """The real AWS launcher whose create call fails after the instance exists (a timed-out or
    throttled reply): the shared cleanup path (launch_failed) ends it, and the task dies right
    after that terminate call, before the launch step records anything more."""

    def __init__(self, inner: AwsLauncher):
        self.inner = inner
        self.provider = inner.provider

    def launch(self, spec: Any) -> list[str]:
        from finops.gpubench.launchers.base import launch_failed

        self.inner.launch(spec)
        raise launch_failed(self, spec, TimeoutError("read timed out"), "run_instances")

    def find(self, bench_run_id: str | None = None) -> Any:
        return self.inner.find(bench_run_id)

    def terminate(self, ids: list[str]) -> None:
        self.inner.terminate(ids)
        raise Killed("right after the cleanup's terminate call")


def test_killed_failed_launch_cleanup_is_recorded_once(
    bench_ec2, bench_settings, duckdb_wh, aws_conn, bench_alerts
):
    client, _ = bench_ec2
    real = AwsLauncher(client, bench_settings.targets[0], max_running=bench_settings.max_running)
    targets, _ = lifecycle.plan(bench_settings)
    prepared = lifecycle.prepare(bench_settings, targets[0], RUN)
    with pytest.raises(Killed):
        lifecycle.launch(
            prepared, bench_settings, FailsAfterCreating(real), dry_run=False, wh=duckdb_wh,
            presign=make_presign(aws_conn),
        )  # fmt: skip
    [ended] = _states(client)
    # on record before the call, as every termination is
    assert [(r, s) for r, s, _, _ in _rows(duckdb_wh, "terminate")] == [(ended, "pending")]
    for _ in range(2):  # teardown's retry settles it; a second teardown adds nothing
        lifecycle.terminate(prepared, real, dry_run=False, wh=duckdb_wh, poll_s=0.01, sleep=lambda s: None)
    [(rid, status, outcome, _)] = _rows(duckdb_wh, "terminate")
    assert (rid, status, outcome) == (ended, "unknown", "unknown")  # ended, by that call or not: unknown


@pytest.mark.parametrize("when", ["before", "after"])
def test_killed_teardown_is_recorded_once(bench_ec2, bench_settings, duckdb_wh, aws_conn, bench_alerts, when):
    client, _ = bench_ec2
    real = AwsLauncher(client, bench_settings.targets[0], max_running=bench_settings.max_running)
    targets, _ = lifecycle.plan(bench_settings)
    prepared = lifecycle.prepare(bench_settings, targets[0], RUN)
    [iid] = lifecycle.launch(
        prepared, bench_settings, real, dry_run=False, wh=duckdb_wh, presign=make_presign(aws_conn)
    )["instance_ids"]
    with pytest.raises(Killed):
        lifecycle.terminate(
            prepared,
            DiesAround(real, "terminate", when),
            dry_run=False,
            wh=duckdb_wh,
            poll_s=0.01,
            sleep=lambda s: None,
        )
    assert [(r, s) for r, s, _, _ in _rows(duckdb_wh, "terminate")] == [(iid, "pending")]
    lifecycle.terminate(prepared, real, dry_run=False, wh=duckdb_wh, poll_s=0.01, sleep=lambda s: None)
    assert _states(client)[iid] in ("shutting-down", "terminated")
    rows = _rows(duckdb_wh, "terminate")
    effective = [o for _, _, o, _ in rows if o in ("done", "unknown")]
    assert len(effective) == 1 and not [r for r in rows if r[1] == "pending"]
    if when == "after":
        assert rows[0][1] == "unknown" and ("gone" in rows[0][3] or "shutting-down" in rows[0][3])
    else:
        assert [o for _, _, o, _ in rows] == ["not_attempted", "done"]


@pytest.mark.parametrize("when", ["before", "after"])
def test_killed_reaper_counts_its_call_against_the_cap(
    bench_ec2, bench_settings, duckdb_wh, aws_conn, bench_alerts, when
):
    client, _ = bench_ec2
    real = AwsLauncher(client, bench_settings.targets[0], max_running=5)
    targets, _ = lifecycle.plan(bench_settings)
    ids = []
    for k in range(3):
        p = lifecycle.prepare(
            bench_settings, targets[0], f"manual__{k}", now=datetime.now(UTC) - timedelta(hours=2)
        )
        ids += lifecycle.launch(
            p, bench_settings, real, dry_run=False, wh=None, presign=make_presign(aws_conn)
        )["instance_ids"]
    with pytest.raises(Killed):
        lifecycle.reap([DiesAround(real, "terminate", when)], dry_run=False, wh=duckdb_wh, run_id=RUN, cap=2)
    [(first, status, _, _)] = _rows(duckdb_wh, "reap")
    assert status == "pending"
    rep = lifecycle.reap([real], dry_run=False, wh=duckdb_wh, run_id=RUN, cap=2)  # Airflow's retry
    states = _states(client)
    ended = sorted(i for i in ids if states[i] in ("shutting-down", "terminated"))
    assert len(ended) == 2 and len(rep["capped"]) == 1  # the cap of 2 holds across the killed try
    rows = _rows(duckdb_wh, "reap")
    assert not [r for r in rows if r[1] == "pending"]
    for iid in ids:  # each ended instance on record exactly once as done / unknown, the other never
        n = sum(1 for rid, _, o, _ in rows if rid == iid and o in ("done", "unknown"))
        assert n == (1 if iid in ended else 0), rows
    settled = next(r for r in rows if r[0] == first)
    assert settled[2] == ("unknown" if when == "after" else "not_attempted"), settled
    if when == "after":
        assert any(e.kind == "benchmark_reap_outcome_unknown" for e in bench_alerts)

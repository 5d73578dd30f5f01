"""The job and attempt tables on DuckDB and PostgreSQL: exact money, tags, open attempts."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from finops.jobs.store import AttemptRecord, JobRecord, JobStore


def test_job_and_attempts_round_trip_exactly(any_wh):
    store = JobStore(any_wh)
    job = JobRecord(
        job_id="job-1",
        name="n",
        team="ml",
        project="p",
        spec_json='{"name": "n"}',
        state="running",
        steps_total=100,
        dag_id="d",
        run_id="manual__2026-11-25T00:00:00+00:00",
        task_id="t",
        budget_usd=Decimal("12.30"),
    )
    assert store.create_job(job) is True and store.create_job(job) is False  # a retry finds it
    start = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    att = AttemptRecord(
        job_id="job-1",
        attempt=1,
        provider="aws",
        region="us-east-1",
        instance_type="p4d.24xlarge",
        pricing_model="spot",
        precision="amp_bf16",
        price_per_hour=Decimal("9.834567"),
        started_at=start,
        steps_at_start=0,
        tags={"finops-job-id": "job-1", "finops-run-id": "manual__x'; DROP TABLE t;--"},
        launch_reason="normal: the cheapest expected cost",
    )
    store.add_attempt(att)
    assert store.open_attempt("job-1").outcome == "launching"
    att.instance_id, att.outcome = "i-0abc", "running"
    store.save_attempt(att)
    assert store.find_by_instance("i-0abc").attempt == 1
    att.outcome, att.steps_at_end, att.estimated_cost_usd = "preempted", 40, Decimal("1.2346")
    att.end_reason = "reclaimed"
    store.save_attempt(att)
    job.steps_done, job.spot_preemptions, job.estimated_cost_usd = 40, 1, Decimal("1.2346")
    job.excluded = ["aws/us-east-1/p5.48xlarge spot"]
    store.save_job(job)

    got = store.get_job("job-1")
    assert (got.steps_done, got.spot_preemptions, got.estimated_cost_usd) == (40, 1, Decimal("1.2346"))
    assert got.budget_usd == Decimal("12.30") and got.excluded == ["aws/us-east-1/p5.48xlarge spot"]
    (a,) = store.attempts("job-1")
    assert a.price_per_hour == Decimal("9.834567") and a.estimated_cost_usd == Decimal("1.2346")
    assert a.tags["finops-run-id"] == "manual__x'; DROP TABLE t;--" and a.precision == "amp_bf16"
    assert a.started_at == start.replace(tzinfo=None) and a.label == "aws/us-east-1/p4d.24xlarge spot"
    assert store.open_attempt("job-1") is None and [j.job_id for j in store.jobs()] == ["job-1"]

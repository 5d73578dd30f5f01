"""What a job cost on the bill: focus_costs rows joined to jobs and attempts by the instance
tags (AWS `user:` keys, GCP lower-case labels, rows without a tag by instance id), estimated
vs billed, savings against all on-demand and showback per team, on DuckDB and PostgreSQL."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from finops.jobs.billing import job_costs, showback
from finops.jobs.store import AttemptRecord, JobRecord, JobStore
from tests.fixtures.focus_data import focus_row, insert_focus


def _job(store, job_id, team, est, od, attempts):
    store.create_job(JobRecord(
        job_id=job_id, name=job_id, team=team, project="p", spec_json="{}", state="finished", steps_total=10,
        estimated_cost_usd=Decimal(est), ondemand_cost_usd=None if od is None else Decimal(od),
        created_at=datetime(2026, 11, 20 + len(job_id)),
    ))  # fmt: skip
    for n, (pm, iid, cost) in enumerate(attempts, start=1):
        store.add_attempt(AttemptRecord(
            job_id=job_id, attempt=n, provider="aws", region="us-east-1", instance_type="g5.xlarge",
            pricing_model=pm, precision="fp32", price_per_hour=Decimal("1.006"),
            started_at=datetime(2026, 11, 25, 10), steps_at_start=0, instance_id=iid,
            estimated_cost_usd=Decimal(cost), outcome="finished",
        ))  # fmt: skip


def test_bill_rows_join_jobs_by_tags_and_instances(any_wh):
    store = JobStore(any_wh)
    _job(store, "job-a", "ml", "3.2000", "10.00", [("spot", "i-a1", "1.2000"), ("ondemand", "i-a2", "2.0000"),
                                                   ("spot", None, "0")])  # fmt: skip
    _job(store, "job-B", "ml", "1.5000", "4.00", [("spot", "gce-b1", "0.5000"), ("spot", "gce-b2", "1.0000")])
    _job(store, "job-cc", "cv", "0.7000", None, [("spot", "vm-c1", "0.7000")])
    tag_a1 = {"user:finops-job-id": "job-a", "user:finops-attempt": "1", "user:finops-team": "ml"}
    insert_focus(any_wh, [
        focus_row("2026-11-25", "0.60", tags=tag_a1, resource_id="i-a1"),
        focus_row("2026-11-26", "0.55", tags=tag_a1, resource_id="i-a1"),
        focus_row("2026-11-25", "2.10", resource_id="i-a2"),  # tag not activated yet: by instance id
        focus_row("2026-11-25", "0.25", tags={"user:finops-job-id": "job-a"}, resource_id="vol-9"),
        focus_row("2026-11-25", "3.00", tags=tag_a1, resource_id="i-a1", billing_currency="EUR"),
        # GCP labels are lower case; attempt 2 of job-B is not on the bill yet
        focus_row("2026-11-25", "0.4512", tags={"finops-job-id": "job-b", "finops-attempt": "1"},
                  resource_id="gce-b1", provider_name="Google Cloud"),
        focus_row("2026-11-25", "50.00", tags={"finops-job-id": "other'; DROP TABLE focus_costs;--"}),
        focus_row("2026-11-25", "7.00", tags={"team": "ml"}, resource_id="i-unrelated"),
        focus_row("2026-10-01", "9.99", resource_id="i-a1"),  # before the job: an earlier owner of the id
    ])  # fmt: skip

    costs = {c.job_id: c for c in job_costs(any_wh)}
    a, b, c = costs["job-a"], costs["job-B"], costs["job-cc"]
    assert [x.billed for x in a.attempts] == [Decimal("1.15"), Decimal("2.10"), None]
    assert a.unattributed == Decimal("0.25") and a.other_currency == {"EUR": Decimal("3.00")}
    assert a.billed == Decimal("3.50") and a.fully_billed  # attempt 3 never got an instance
    assert a.known == Decimal("3.50") and a.savings == Decimal("6.50")
    assert [x.billed for x in b.attempts] == [Decimal("0.4512"), None] and not b.fully_billed
    assert b.known == Decimal("1.4512") and b.savings == Decimal("2.5488")  # billed + the estimate still open
    assert c.billed is None and c.known == Decimal("0.7000") and c.savings is None
    assert any_wh.query("SELECT COUNT(*) FROM focus_costs")[0][0] == 9

    ml, cv = showback(costs.values())
    assert (ml.team, ml.jobs, ml.estimated, ml.billed, ml.known) == (
        "ml",
        2,
        Decimal("4.7000"),
        Decimal("3.9512"),
        Decimal("4.9512"),
    )
    assert (ml.ondemand, ml.savings) == (Decimal("14.00"), Decimal("9.0488"))
    assert (cv.team, cv.billed, cv.known, cv.ondemand, cv.savings) == (
        "cv",
        Decimal(0),
        Decimal("0.7000"),
        Decimal(0),
        Decimal(0),
    )

    (only,) = job_costs(any_wh, ["job-cc"])
    assert only.job_id == "job-cc" and job_costs(any_wh, []) == []


def test_no_bill_table_rows_yet_means_estimates_only(any_wh):
    store = JobStore(any_wh)
    _job(store, "job-a", "ml", "1.0000", "2.00", [("spot", "i-1", "1.0000")])
    (c,) = job_costs(any_wh)
    assert c.billed is None and c.known == Decimal("1.0000") and c.savings == Decimal("1.00")

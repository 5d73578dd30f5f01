"""The Training jobs page's JSON endpoints through FastAPI's TestClient with Airflow's real
auth manager: jobs with estimated vs billed (bill rows joined by the job / attempt tags) and
savings against all on-demand, showback per team, and one job's attempts with the reason for
every move and what each was billed."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal

from finops.jobs.store import AttemptRecord, JobRecord, JobStore


def _bill(wh, resource_id: str, billed: str, tags: dict[str, str]) -> None:
    start = datetime(2026, 11, 25)
    row = {
        "billed_cost": Decimal(billed), "effective_cost": Decimal(billed), "list_cost": Decimal(billed),
        "contracted_cost": Decimal(billed), "billing_account_id": "acct",
        "billing_currency": "USD", "billing_period_start": datetime(2026, 11, 1),
        "billing_period_end": datetime(2026, 12, 1), "charge_category": "Usage", "charge_period_start": start,
        "charge_period_end": start, "invoice_issuer_name": "AWS", "provider_name": "AWS", "publisher_name": "AWS",
        "service_category": "Compute", "service_name": "Amazon EC2", "resource_id": resource_id,
        "tags": json.dumps(tags), "x_source": "aws-main", "x_billing_period": "2026-11",
        "x_provider": "aws", "x_load_id": "load-1",
    }  # fmt: skip
    wh.execute(
        f"INSERT INTO focus_costs ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
        list(row.values()),
    )


def test_jobs_and_attempts(ui_client, ui_headers, duckdb_wh):
    assert ui_client.get("/api/jobs", headers=ui_headers).json() == {"items": []}
    store = JobStore(duckdb_wh)
    store.create_job(JobRecord(
        job_id="job-a", name="resnet", team="ml", project="vision", spec_json="{}", state="finished",
        steps_total=100, steps_done=100, spot_preemptions=1, estimated_cost_usd=Decimal("3.4567"),
        ondemand_cost_usd=Decimal("9.0000"), plan_table="LAUNCH: <b>normal</b>",
    ))  # fmt: skip
    t = datetime(2026, 11, 25, 10)
    for n, (pm, outcome, iid, cost) in enumerate(
        [("spot", "preempted", "i-1", "1.2000"), ("ondemand", "finished", "i-2", "2.2567")], start=1
    ):
        store.add_attempt(AttemptRecord(
            job_id="job-a", attempt=n, provider="aws", region="us-east-1", instance_type="g5.xlarge",
            pricing_model=pm, precision="fp32", price_per_hour=Decimal("1.006"), started_at=t, steps_at_start=0,
            outcome=outcome, instance_id=iid, ended_at=t, steps_at_end=40 * n, estimated_cost_usd=Decimal(cost),
            launch_reason="normal: cheapest", end_reason="reclaimed" if n == 1 else "the job exited 0",
        ))  # fmt: skip
    _bill(duckdb_wh, "i-1", "1.10", {"user:finops-job-id": "job-a", "user:finops-attempt": "1"})  # AWS keys
    _bill(duckdb_wh, "i-2", "2.35", {"finops-job-id": "job-a"})  # no attempt tag: by its instance
    _bill(duckdb_wh, "i-other", "99.00", {"finops-job-id": "job-zzz", "finops-attempt": "1"})

    (job,) = ui_client.get("/api/jobs", headers=ui_headers).json()["items"]
    assert (job["estimated"], job["billed"], job["ondemand"], job["savings"], job["fully_billed"]) == (
        "3.46",
        "3.45",
        "9.00",
        "5.55",  # on the billed cost: 9.00 - 3.45
        True,
    )
    (team,) = ui_client.get("/api/jobs/showback", headers=ui_headers).json()["items"]
    assert team == {"team": "ml", "jobs": 1, "estimated": "3.46", "billed": "3.45", "known": "3.45",
                    "ondemand": "9.00", "savings": "5.55"}  # fmt: skip
    assert (job["attempts"], job["spot_preemptions"], job["state"]) == (2, 1, "finished")

    att = ui_client.get("/api/jobs/job-a/attempts", headers=ui_headers).json()
    assert [(a["pricing_model"], a["outcome"], a["end_reason"]) for a in att["items"]] == [
        ("spot", "preempted", "reclaimed"),
        ("ondemand", "finished", "the job exited 0"),
    ]
    assert att["plan"] == "LAUNCH: <b>normal</b>" and att["items"][1]["estimated"] == "2.26"
    assert [a["billed"] for a in att["items"]] == ["1.10", "2.35"]
    assert ui_client.get("/api/jobs/nope/attempts", headers=ui_headers).status_code == 404
    assert ui_client.get("/api/jobs/bad%20id;/attempts", headers=ui_headers).status_code == 422

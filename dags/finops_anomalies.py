"""Airflow DAG finops_anomalies: cost anomaly detection per monitor (provider, service,
account, team, tag) when billing data lands; new anomalies alert once via the routes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from airflow.sdk import Asset, Param, dag, task

FOCUS_COSTS = Asset("finops://focus_costs")


@dag(
    dag_id="finops_anomalies",
    description="Detect cost anomalies (seasonal median + MAD, $ floor and % threshold) and alert once.",
    schedule=[FOCUS_COSTS],
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"owner": "finops", "retries": 2, "retry_delay": timedelta(minutes=2),
                  "retry_exponential_backoff": True, "max_retry_delay": timedelta(minutes=30)},
    params={
        "send_alerts": Param(True, type="boolean", title="Send alerts",
                             description="Deliver new anomalies to the configured Slack / e-mail routes. "
                                         "Off: detect and store only (dry run)."),
        "lookback_days": Param(0, type="integer", minimum=0, maximum=730, title="Lookback days",
                               description="History used for the baseline; 0 = anomaly.lookback_days from "
                                           "finops.yaml (default 120)."),
    },
    tags=["finops", "anomaly", "alerts"],
    doc_md=__doc__,
)
def finops_anomalies():
    @task
    def detect() -> dict:
        from airflow.sdk import get_current_context

        from finops.allocation.tasks import run_anomalies_task

        p = get_current_context()["params"]
        res = run_anomalies_task(bool(p.get("send_alerts", True)), int(p.get("lookback_days") or 0) or None)
        print(f"anomalies: {len(res['new'])} new, {len(res['updated'])} updated, {len(res['alerted'])} alerted")
        return res

    detect()


finops_anomalies()

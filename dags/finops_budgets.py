"""Airflow DAG finops_budgets: month-end forecasts per team / service / account (80 % / 95 %
intervals) and the budgets of finops.yaml, each time finops_showback has allocated a billing
load (finops://showback). A budget threshold crossed on actual or on forecast spend alerts its
team's routes once per month; see docs/budgets-and-forecasts.md."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from airflow.sdk import Asset, Param, dag, get_current_context, task

from finops.alerts.task_failure import task_failed

SHOWBACK = Asset("finops://showback")


@dag(
    dag_id="finops_budgets",
    description="Month-end forecasts with intervals, and budget alerts before the overspend.",
    schedule=[SHOWBACK],
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    default_args={
        "owner": "finops",
        "on_failure_callback": task_failed,
        "retries": 2,
        "retry_delay": timedelta(minutes=2),
        "retry_exponential_backoff": True,
        "max_retry_delay": timedelta(minutes=30),
        "execution_timeout": timedelta(minutes=30),
    },
    params={
        "send_alerts": Param(
            True,
            type="boolean",
            title="Send alerts",
            description="Deliver newly crossed budget thresholds to the team routes. Off: "
            "evaluate and record only; they alert on the next run with alerts on.",
        ),
    },
    tags=["finops", "budgets", "forecast", "alerts"],
    doc_md=__doc__,
)
def finops_budgets():
    @task
    def forecast() -> dict:
        from finops.budgets.tasks import run_forecast_task

        return run_forecast_task()

    @task
    def budgets() -> dict:
        from finops.budgets.tasks import run_budgets_task

        return run_budgets_task(bool(get_current_context()["params"].get("send_alerts", True)))

    forecast() >> budgets()


finops_budgets()

"""The finops_budgets DAG: month-end forecasts, then the budgets of finops.yaml, each time
finops_showback announces finops://showback (finops.budgets.tasks does the work)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import Param, dag, get_current_context, task

from finops.orchestration.assets import SHOWBACK
from finops.orchestration.defaults import default_args

TASK_TIMEOUT = timedelta(minutes=30)


def build_budgets_dag(doc_md: str | None = None) -> Any:
    @dag(
        dag_id="finops_budgets",
        description="Month-end forecasts with intervals, and budget alerts before the overspend.",
        schedule=[SHOWBACK],
        start_date=datetime(2026, 1, 1, tzinfo=UTC),
        catchup=False,
        max_active_runs=1,
        default_args=default_args(execution_timeout=TASK_TIMEOUT),
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
        doc_md=doc_md,
    )
    def finops_budgets() -> None:
        @task
        def forecast() -> dict:
            from finops.budgets.tasks import run_forecast_task

            return run_forecast_task()

        @task
        def budgets() -> dict:
            from finops.budgets.tasks import run_budgets_task

            return run_budgets_task(bool(get_current_context()["params"].get("send_alerts", True)))

        forecast() >> budgets()

    return finops_budgets()

"""The finops_showback DAG: per billing period, allocate focus_costs to teams, then announce
finops://showback. Scheduled on finops://focus_costs (the billing DAGs); the allocation itself
is finops.allocation.tasks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import Param, dag, get_current_context, task

from finops.orchestration.assets import FOCUS_COSTS, SHOWBACK
from finops.orchestration.defaults import default_args

# every task ends: a run stuck on a warehouse lock must not hold max_active_runs=1
TASK_TIMEOUT = timedelta(minutes=15)
ALLOCATE_TIMEOUT = timedelta(hours=2)  # a month of focus_costs rewritten per period


def build_showback_dag(doc_md: str | None = None) -> Any:
    @dag(
        dag_id="finops_showback",
        description="Showback / chargeback: every cent of focus_costs allocated to a team (exact to the cent).",
        schedule=[FOCUS_COSTS],
        start_date=datetime(2026, 1, 1, tzinfo=UTC),
        catchup=False,
        max_active_runs=1,
        default_args=default_args(
            execution_timeout=TASK_TIMEOUT,
            retries=3,
            retry_delay=timedelta(minutes=1),
            max_retry_delay=timedelta(minutes=20),
        ),
        params={
            "billing_period": Param(
                "",
                type="string",
                pattern=r"^$|^\d{4}-(0[1-9]|1[0-2])(,\d{4}-(0[1-9]|1[0-2]))*$",
                title="Billing period",
                description="YYYY-MM (or several, comma-separated). Empty: the current month, plus the previous "
                "one during the first 14 days of a month.",
            ),
        },
        tags=["finops", "showback"],
        doc_md=doc_md,
    )
    def finops_showback() -> None:
        @task
        def periods() -> list[str]:
            from finops.allocation.tasks import showback_periods

            ctx = get_current_context()
            run_after = getattr(ctx.get("dag_run"), "run_after", None)
            today = (ctx.get("logical_date") or run_after or datetime.now(UTC)).date()
            return showback_periods(ctx["params"].get("billing_period"), today)

        # one writer at a time on the embedded DuckDB
        @task(max_active_tis_per_dagrun=1, execution_timeout=ALLOCATE_TIMEOUT)
        def allocate(period: str) -> dict:
            from finops.allocation.tasks import run_showback_task

            return run_showback_task(period)

        # all_success (the default): finops://showback means every period of this run is rewritten,
        # so the team monitors never score a showback half of which is still the previous one
        @task(outlets=[SHOWBACK])
        def summary(results: list[dict]) -> dict:
            out = {r["billing_period"]: r["totals"] for r in results}
            print(f"showback: {out}")
            return out

        summary(allocate.expand(period=periods()))  # type: ignore[arg-type]

    return finops_showback()

"""Airflow DAG finops_showback: allocate focus_costs to teams (showback_daily,
chargeback_monthly, GPU view) whenever billing data lands, per billing period; then announce
finops://showback, which schedules the team anomaly monitors (finops_anomalies_teams)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from airflow.sdk import Asset, Param, dag, get_current_context, task

from finops.alerts.task_failure import task_failed

FOCUS_COSTS = Asset("finops://focus_costs")
SHOWBACK = Asset("finops://showback")


@dag(
    dag_id="finops_showback",
    description="Showback / chargeback: every cent of focus_costs allocated to a team (exact to the cent).",
    schedule=[FOCUS_COSTS],
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"owner": "finops", "on_failure_callback": task_failed, "retries": 3, "retry_delay": timedelta(minutes=1),
                  "retry_exponential_backoff": True, "max_retry_delay": timedelta(minutes=20),
                  # every task ends: a run stuck on a warehouse lock must not hold max_active_runs=1
                  "execution_timeout": timedelta(minutes=15)},
    params={
        "billing_period": Param(
            "", type="string", pattern=r"^$|^\d{4}-(0[1-9]|1[0-2])(,\d{4}-(0[1-9]|1[0-2]))*$",
            title="Billing period",
            description="YYYY-MM (or several, comma-separated). Empty: the current month, plus the previous "
                        "one during the first 14 days of a month.",
        ),
    },
    tags=["finops", "showback"],
    doc_md=__doc__,
)
def finops_showback():
    @task
    def periods() -> list[str]:
        from finops.allocation.tasks import showback_periods

        ctx = get_current_context()
        today = (ctx.get("logical_date") or getattr(ctx.get("dag_run"), "run_after", None) or datetime.now(UTC)).date()
        return showback_periods(ctx["params"].get("billing_period"), today)

    # one writer at a time on the embedded DuckDB; a month of focus_costs rewritten per period
    @task(max_active_tis_per_dagrun=1, execution_timeout=timedelta(hours=2))
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

    summary(allocate.expand(period=periods()))


finops_showback()

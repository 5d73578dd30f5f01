"""The finops_commitments DAG: each time billing data lands (finops://focus_costs), rebuild the
commitment coverage / utilisation tables, read end dates from the configured provider APIs
(a failing one is recorded and the dates already known stand), check the expiry calendar (alerts 30 and 7 days
before an end, and under the utilisation floor, each once), then write purchase advice.
Params make an ad-hoc "what if we buy X" run. Advice only: nothing is ever purchased.
finops.commitments.tasks does the work."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from airflow.sdk import Param, dag, get_current_context, task

from finops.orchestration.assets import FOCUS_COSTS
from finops.orchestration.defaults import default_args

TASK_TIMEOUT = timedelta(minutes=30)
PRODUCTS = [
    "aws/savings_plan",
    "aws/reserved_instance",
    "gcp/resource_cud",
    "gcp/spend_cud",
    "azure/reservation",
    "azure/savings_plan",
]


def _today() -> date:
    ctx = get_current_context()
    when = ctx.get("logical_date") or getattr(ctx.get("dag_run"), "run_after", None) or datetime.now(UTC)
    return when.date()


def commitments_params() -> dict[str, Param]:
    return {
        "send_alerts": Param(
            True,
            type="boolean",
            title="Send alerts",
            description="Deliver expiry and low-utilisation alerts to the routes (each "
            "goes once). Off: compute and record only.",
        ),
        "what_if_product": Param(
            "aws/savings_plan",
            type="string",
            enum=PRODUCTS,
            title="What if: product",
            description="Provider and product of the ad-hoc commitment to price.",
        ),
        "what_if_hourly": Param(
            "",
            type="string",
            pattern=r"^$|^[0-9]{1,9}(\.[0-9]{1,6})?$",
            title="What if: $/h",
            description="Hourly commitment as the provider bills it (e.g. 12.5). Empty: "
            "the usual advice (the best amount per product).",
        ),
        "what_if_scope": Param(
            "all",
            type="string",
            pattern=r"^[A-Za-z0-9_.-]{1,64}$",
            title="What if: scope",
            description="Instance family for per-family products (RIs, resource CUDs, "
            "Azure reservations); 'all' for the others.",
        ),
    }


def build_commitments_dag(doc_md: str | None = None) -> Any:
    @dag(
        dag_id="finops_commitments",
        description="Commitment coverage, utilisation, expiry alerts and purchase advice (advice only).",
        schedule=[FOCUS_COSTS],
        start_date=datetime(2026, 1, 1, tzinfo=UTC),
        catchup=False,
        max_active_runs=1,
        default_args=default_args(execution_timeout=TASK_TIMEOUT),
        params=commitments_params(),
        tags=["finops", "commitments", "alerts"],
        doc_md=doc_md,
    )
    def finops_commitments() -> None:
        @task
        def refresh() -> dict:
            from finops.commitments.tasks import run_refresh_task

            return run_refresh_task(_today())

        @task
        def end_dates() -> dict:
            from finops.commitments.tasks import run_end_dates_task

            return run_end_dates_task()

        @task
        def expiry() -> dict:
            from finops.commitments.tasks import run_calendar_task

            return run_calendar_task(_today(), bool(get_current_context()["params"].get("send_alerts", True)))

        @task
        def advice() -> dict:
            from finops.commitments.tasks import run_advice_task

            ctx = get_current_context()
            p = dict(ctx["params"])
            provider, _, product = str(p.get("what_if_product") or "").partition("/")
            p.update(what_if_provider=provider, what_if_product=product)
            return run_advice_task(_today(), ctx["run_id"], p)

        r = refresh()
        r >> end_dates() >> expiry()  # in turn: the embedded warehouse takes one writer
        r >> advice()

    return finops_commitments()

"""The finops_report_monthly DAG: on the 3rd of each month, the previous month's showback
report per team, saved and e-mailed (finops.allocation.tasks.run_report_task does the work)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import Param, dag, get_current_context, task

from finops.orchestration.defaults import default_args

TASK_TIMEOUT = timedelta(hours=1)  # every team's report and e-mail


def build_report_dag(doc_md: str | None = None) -> Any:
    @dag(
        dag_id="finops_report_monthly",
        description="Monthly showback report per team: HTML + chart + CSV, saved and e-mailed.",
        schedule="0 7 3 * *",  # the 3rd, after the month's first restatements
        start_date=datetime(2026, 1, 1, tzinfo=UTC),
        catchup=False,
        max_active_runs=1,
        default_args=default_args(
            execution_timeout=TASK_TIMEOUT,
            retry_delay=timedelta(minutes=5),
            max_retry_delay=timedelta(hours=1),
        ),
        params={
            "billing_period": Param(
                "",
                type="string",
                pattern=r"^$|^\d{4}-(0[1-9]|1[0-2])$",
                title="Billing period",
                description="YYYY-MM; empty = the month before the run date.",
            ),
            "cost_view": Param(
                "amortised",
                type="string",
                enum=["amortised", "billed"],
                title="Cost view",
                description="amortised = EffectiveCost (commitments spread), billed = BilledCost "
                "(what the invoice says).",
            ),
            "send_email": Param(
                True,
                type="boolean",
                title="Send e-mail",
                description="E-mail each team's report to its alert routes; off = save files only.",
            ),
            "teams": Param(
                [],
                type="array",
                items={"type": "string"},
                title="Teams",
                description="Only these teams (empty = every team in chargeback_monthly).",
            ),
            "resend": Param(
                False,
                type="boolean",
                title="Send again",
                description="E-mail reports even to routes that already got these exact figures, once "
                "for this run (off: a re-run or retry sends each unchanged report once per "
                "route).",
            ),
        },
        tags=["finops", "showback", "report"],
        doc_md=doc_md,
    )
    def finops_report_monthly() -> None:
        @task
        def report() -> dict:
            from finops.allocation.tasks import previous_period, run_report_task

            ctx = get_current_context()
            p = ctx["params"]
            run_after = getattr(ctx.get("dag_run"), "run_after", None)
            today = (ctx.get("logical_date") or run_after or datetime.now(UTC)).date()
            period = p.get("billing_period") or previous_period(today)
            return run_report_task(
                period,
                p.get("cost_view", "amortised"),
                bool(p.get("send_email", True)),
                list(p.get("teams") or []),
                resend=bool(p.get("resend", False)),
                run_id=ctx["run_id"],
            )

        report()

    return finops_report_monthly()

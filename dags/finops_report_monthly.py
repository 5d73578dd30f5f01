"""Airflow DAG finops_report_monthly: the monthly showback report per team (HTML with a
chart + CSV) saved under FINOPS_HOME/reports/<period>/<team>-<view>.html|.csv and e-mailed to each team's route."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from airflow.sdk import Param, dag, get_current_context, task

from finops.alerts.task_failure import task_failed


@dag(
    dag_id="finops_report_monthly",
    description="Monthly showback report per team: HTML + chart + CSV, saved and e-mailed.",
    schedule="0 7 3 * *",  # the 3rd, after the month's first restatements
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"owner": "finops", "on_failure_callback": task_failed, "retries": 2, "retry_delay": timedelta(minutes=5),
                  "retry_exponential_backoff": True, "max_retry_delay": timedelta(hours=1),
                  "execution_timeout": timedelta(hours=1)},  # every team's report and e-mail
    params={
        "billing_period": Param("", type="string", pattern=r"^$|^\d{4}-(0[1-9]|1[0-2])$", title="Billing period",
                                description="YYYY-MM; empty = the month before the run date."),
        "cost_view": Param("amortised", type="string", enum=["amortised", "billed"], title="Cost view",
                           description="amortised = EffectiveCost (commitments spread), billed = BilledCost "
                                       "(what the invoice says)."),
        "send_email": Param(True, type="boolean", title="Send e-mail",
                            description="E-mail each team's report to its alert routes; off = save files only."),
        "teams": Param([], type="array", items={"type": "string"}, title="Teams",
                       description="Only these teams (empty = every team in chargeback_monthly)."),
        "resend": Param(False, type="boolean", title="Send again",
                        description="E-mail reports even to routes that already got these exact figures, once "
                                    "for this run (off: a re-run or retry sends each unchanged report once per "
                                    "route)."),
    },
    tags=["finops", "showback", "report"],
    doc_md=__doc__,
)
def finops_report_monthly():
    @task
    def report() -> dict:
        from finops.allocation.tasks import previous_period, run_report_task

        ctx = get_current_context()
        p = ctx["params"]
        today = (ctx.get("logical_date") or getattr(ctx.get("dag_run"), "run_after", None) or datetime.now(UTC)).date()
        period = p.get("billing_period") or previous_period(today)
        return run_report_task(period, p.get("cost_view", "amortised"), bool(p.get("send_email", True)),
                               list(p.get("teams") or []), resend=bool(p.get("resend", False)),
                               run_id=ctx["run_id"])

    report()


finops_report_monthly()

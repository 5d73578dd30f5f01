"""The billing DAGs (finops_billing_<provider>), one shape for every provider: plan -> mapped
load per (source, period) -> summary.

DAG files call `build_billing_dag("aws")` and nothing else, so AWS, GCP, Azure and Lambda share
retries, Params, mapping and the Asset outlet instead of copying them.

publish_summary announces `finops://focus_costs` (showback, anomalies) once every load is done
and at least one succeeded: partitions that did load are announced even when another one is
quarantined (a bad month that stays bad must not stall showback and alerts for the others);
nothing is announced by a dry run or by a run that loaded nothing. check_loads fails the run
when any load failed, so a partial load still reads as a failed run."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import Param, TriggerRule, dag, get_current_context, task

from finops.alerts.deadline import billing_deadline
from finops.orchestration.assets import FOCUS_COSTS
from finops.orchestration.defaults import default_args

# Every task ends: a call that never returns (a PostgreSQL lock wait, a stalled download)
# would otherwise hold its worker slot for ever and, with max_active_runs=1, every later run.
TASK_TIMEOUT = timedelta(minutes=30)
# One (source, period) load: a 10M-row CUR month takes ~4 min end to end on PostgreSQL
# (README); the hourly Lambda DAG must end before its next run.
LOAD_TIMEOUT = {"lambda": timedelta(minutes=18)}
DEFAULT_LOAD_TIMEOUT = timedelta(hours=3)
# The hourly Lambda DAG: its worst run (each task on the path plan -> load -> summary timing out
# on both tries, one minute between) is 2x3+1 + 2x18+1 + 2x5+1 = 55 min, inside the hour, so a
# stuck run never holds back the next (max_active_runs=1). A Lambda load is a few thousand
# instance-lifetime rows: 18 minutes is far above what one takes.
HOURLY_ARGS: dict[str, dict[str, Any]] = {
    "lambda": {"retries": 1, "retry_delay": timedelta(minutes=1), "exponential_backoff": False}
}
TASK_TIMEOUTS = {
    "lambda": {
        "plan_loads": timedelta(minutes=3),
        "publish_summary": timedelta(minutes=5),
        "check_loads": timedelta(minutes=1),
    }
}


def _timeout(provider: str, task_id: str) -> timedelta:
    return TASK_TIMEOUTS.get(provider, {}).get(task_id, TASK_TIMEOUT)


_TITLES = {
    "aws": "AWS (CUR 2.0 / legacy CUR / FOCUS)",
    "gcp": "GCP (BigQuery billing export)",
    "azure": "Azure (Cost Management exports)",
    "lambda": "Lambda Cloud (instance lifetimes)",
}


def billing_params() -> dict[str, Param]:
    return {
        "billing_period": Param(
            "",
            type="string",
            pattern=r"^$|^[0-9]{4}-(0[1-9]|1[0-2])(,[0-9]{4}-(0[1-9]|1[0-2]))*$",
            title="Billing period",
            description="YYYY-MM (or several, comma-separated). Empty: the current month, plus the "
            "previous one during the first 14 days of a month (restatements).",
        ),
        "source": Param(
            "all",
            type="string",
            title="Source",
            description="A configured source name from finops.yaml, or 'all'.",
        ),
        "dry_run": Param(
            False,
            type="boolean",
            title="Dry run",
            description="Extract, convert and validate, but write nothing to the warehouse.",
        ),
    }


def _refresh_ui_rollups() -> None:
    """Catch-up: each load_partition rebuilds its own partition's rollups; this refreshes any
    partition still stale (a refresh that failed there, loads from outside this DAG). Rollups are
    derived data: pages read stale partitions straight from focus_costs, so a failure here is
    logged, never a reason to fail the billing run."""
    import logging

    try:
        from finops.ui.rollup import refresh_stale
        from finops.warehouse import connect

        wh = connect()
        try:
            refresh_stale(wh)
        finally:
            wh.close()
    except Exception:  # noqa: BLE001 - see docstring
        logging.getLogger(__name__).exception("UI rollup refresh failed; pages fall back to focus_costs")


def billing_pool(provider: str) -> str:
    """Pool for the mapped loads, from the environment only (no metadata-DB I/O at parse time):
    FINOPS_BILLING_POOL_<PROVIDER>, then FINOPS_BILLING_POOL, else default_pool. A pool caps how
    many loads hit one cloud API / warehouse at once across all runs and workers."""
    return (
        os.environ.get(f"FINOPS_BILLING_POOL_{provider.upper()}")
        or os.environ.get("FINOPS_BILLING_POOL")
        or "default_pool"
    )


def build_billing_dag(provider: str, schedule: str = "15 6 * * *"):
    @dag(
        dag_id=f"finops_billing_{provider}",
        description=f"Load {_TITLES[provider]} billing into the FOCUS 1.2 warehouse, idempotently.",
        schedule=schedule,
        start_date=datetime(2026, 1, 1, tzinfo=UTC),
        catchup=False,
        max_active_runs=1,
        default_args=default_args(
            execution_timeout=TASK_TIMEOUT, **({"retries": 3} | HOURLY_ARGS.get(provider, {}))
        ),
        params=billing_params(),
        deadline=billing_deadline(provider, schedule),  # finops.yaml alerts.billing_deadlines
        tags=["finops", "billing", provider],
        doc_md=__doc__,
    )
    def billing():
        @task(task_id="plan_loads", execution_timeout=_timeout(provider, "plan_loads"))
        def plan_loads_task() -> list[dict]:
            from finops.orchestration.billing import plan_loads
            from finops.orchestration.failures import fail_on_bad_input

            ctx = get_current_context()
            p = ctx["params"]
            # run_after is on the DAG run, not a context key; a manual run may have no logical date
            dag_run = ctx.get("dag_run")
            run_after = dag_run.run_after if dag_run is not None else None
            today = (ctx.get("logical_date") or run_after or datetime.now(UTC)).date()
            with fail_on_bad_input():  # a retry cannot fix bad config / Params
                return plan_loads(provider, p.get("source"), p.get("billing_period"), today)

        @task(
            task_id="load_partition",
            map_index_template="{{ finops_label }}",
            max_active_tis_per_dagrun=4,
            pool=billing_pool(provider),
            execution_timeout=LOAD_TIMEOUT.get(provider, DEFAULT_LOAD_TIMEOUT),
        )
        def load_partition_task(item: dict) -> dict:
            from airflow.sdk.exceptions import AirflowFailException

            from finops.orchestration.billing import load_partition

            ctx = get_current_context()
            ctx["finops_label"] = f"{item['source']} {item['billing_period']}"  # type: ignore[typeddict-unknown-key]
            result = load_partition(item, dry_run=bool(ctx["params"].get("dry_run")), run_id=ctx["run_id"])
            if result.get("status") == "quarantined":
                # Bad input will not fix itself on retry: fail now, keep the data already loaded.
                raise AirflowFailException(
                    f"{item['source']} {item['billing_period']}: batch quarantined: {result.get('message')}"
                )
            invalid = [r for r in result.get("parts", [result]) if r.get("valid") is False]
            if invalid:
                # The dry run's answer to "would this load?" is no: say so as the real run would.
                raise AirflowFailException(
                    f"{item['source']} {item['billing_period']}: dry run: the batch would be quarantined: "
                    + "; ".join(str(f) for r in invalid for f in r.get("failures") or [])[:2000]
                )
            return result

        @task(
            task_id="publish_summary",
            outlets=[FOCUS_COSTS],
            trigger_rule=TriggerRule.ALL_DONE_MIN_ONE_SUCCESS,
            execution_timeout=_timeout(provider, "publish_summary"),
        )
        def publish_summary(results: list[dict]) -> dict:
            from airflow.sdk.exceptions import AirflowSkipException

            results = [r for r in results if r]  # a failed load pushed no result
            loaded = [r for r in results if r.get("status") in ("loaded", "unchanged")]
            summary = {
                "provider": provider,
                "partitions": len(results),
                "loaded": len(loaded),
                "rows": sum(int(r.get("rows") or 0) for r in results),
                "by_partition": {f"{r['source']}/{r['billing_period']}": r.get("status") for r in results},
            }
            print(f"billing {provider}: {summary}")
            # A skipped task emits no asset event: downstream DAGs only hear of written data.
            if get_current_context()["params"].get("dry_run"):
                raise AirflowSkipException("dry run: nothing written, finops://focus_costs not announced")
            if not loaded:
                raise AirflowSkipException("no partition loaded: finops://focus_costs not announced")
            _refresh_ui_rollups()
            return summary

        @task(
            task_id="check_loads",
            trigger_rule=TriggerRule.ONE_FAILED,
            execution_timeout=_timeout(provider, "check_loads"),
        )
        def check_loads() -> None:
            """Runs only when a load failed (skipped otherwise): keeps the run failed although
            publish_summary, the other leaf, announced the partitions that did load."""
            from airflow.sdk.exceptions import AirflowFailException

            raise AirflowFailException("one or more partitions failed to load; see the load_partition tasks")

        loads = load_partition_task.expand(item=plan_loads_task())
        publish_summary(loads)
        loads >> check_loads()

    return billing()

"""Hourly safety net: terminate every tagged GPU benchmark instance past its expiry, on every
cloud that has a configured benchmark target. Dry-run by default for manual runs; scheduled
runs follow benchmarks.dry_run, except that they always end an expired instance the audit log
shows this package launched for real (a manual live benchmark run while the config says dry).
Wiring only: finops.gpubench.lifecycle.reap does the work."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import Param, dag, get_current_context, task

from finops.alerts.task_failure import task_failed


@dag(
    dag_id="finops_bench_reaper",
    description="Hourly: terminate tagged GPU benchmark instances past their expiry on every cloud.",
    schedule="17 * * * *",
    start_date=datetime(2026, 1, 5, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"on_failure_callback": task_failed, "retries": 3, "retry_delay": timedelta(seconds=30), "retry_exponential_backoff": True,
                  "max_retry_delay": timedelta(minutes=10),
                  "execution_timeout": timedelta(minutes=30)},  # hourly: a hung run must not stall the next
    tags=["finops", "benchmarks", "safety"],
    doc_md=__doc__,
    params={
        "dry_run": Param(True, type="boolean", title="Dry run",
                         description="Report and audit what would be terminated; terminate nothing"),
        "max_terminations": Param(50, type="integer", minimum=0, maximum=500, title="Max terminations",
                                  description="Safety cap per run"),
    },
)
def finops_bench_reaper():
    @task
    def reap() -> dict[str, Any]:
        from finops.gpubench import lifecycle
        from finops.gpubench.launchers import for_target
        from finops.gpubench.settings import get_settings
        from finops.warehouse import connect

        ctx = get_current_context()
        settings = get_settings()
        scheduled = str(ctx["dag_run"].run_type).lower().endswith("scheduled")
        dry_run = settings.dry_run if scheduled else bool(ctx["params"]["dry_run"])
        # one launcher per (cloud, connection, region / project / subscription) that targets use
        seen: dict[tuple, Any] = {}
        for t in settings.targets:
            key = (t.provider, t.connection, t.region, t.project, t.subscription_id, t.resource_group)
            if key not in seen:
                seen[key] = for_target(t, settings.max_running)
        wh = connect()
        try:
            # scheduled: the safety net also ends what a manual live benchmark run left behind
            report = lifecycle.reap(list(seen.values()), dry_run=dry_run, wh=wh, run_id=ctx["run_id"],
                                    cap=int(ctx["params"]["max_terminations"]), clean_live_launches=scheduled)
        finally:
            wh.close()
        if report["errors"]:
            raise RuntimeError(f"reaper: {len(report['errors'])} error(s): {report['errors'][:5]}")
        return report

    reap()


finops_bench_reaper()

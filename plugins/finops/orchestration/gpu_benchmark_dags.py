"""The GPU benchmark DAGs: the weekly finops_gpu_benchmark and its hourly safety net,
finops_bench_reaper (the files in dags/ call the builders; the logic is in finops.gpubench).

finops_gpu_benchmark, for each configured (provider, region, instance type, pricing model), runs
a mapped task group: prepare + launch (setups) -> deferrable wait for the results object ->
collect -> terminate (teardown: always runs, finds instances by tag, polls until they are gone).
Then the figures are joined with the latest prices."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import Param, dag, get_current_context, task, task_group

from finops.gpubench.operators import WaitForBenchResultsOperator
from finops.orchestration.defaults import default_args

# Every cloud call ends; the deferred wait is bounded by its own timeout (wait_timeout_minutes).
TASK_TIMEOUT = timedelta(minutes=30)
# terminate polls until the instances are gone or terminate_timeout_s (at most 1 h) has passed
TERMINATE_TIMEOUT = timedelta(minutes=75)
RETRY_DELAY = timedelta(seconds=30)
MAX_RETRY_DELAY = timedelta(minutes=10)


def _scheduled(ctx: Any) -> bool:
    return str(ctx["dag_run"].run_type).lower().endswith("scheduled")


def build_gpu_benchmark_dag(doc_md: str | None = None) -> Any:
    @dag(
        dag_id="finops_gpu_benchmark",
        description="Weekly: GPU benchmarks on fresh instances (launch -> wait -> collect -> terminate), "
        "priced per unit of work.",
        schedule="0 6 * * 1",
        start_date=datetime(2026, 1, 5, tzinfo=UTC),
        catchup=False,
        max_active_runs=1,
        default_args=default_args(
            execution_timeout=TASK_TIMEOUT, retry_delay=RETRY_DELAY, max_retry_delay=MAX_RETRY_DELAY
        ),
        tags=["finops", "benchmarks", "gpu"],
        doc_md=doc_md,
        params={
            "dry_run": Param(
                True,
                type="boolean",
                title="Dry run",
                description="Render and audit what would be launched; launch nothing. "
                "Scheduled runs follow benchmarks.dry_run in finops.yaml.",
            ),
            "targets": Param(
                [],
                type="array",
                items={"type": "string"},
                title="Targets",
                description="provider/region/instance_type/pricing_model keys; empty = all configured",
            ),
            "max_instances": Param(
                None,
                type=["null", "integer"],
                minimum=0,
                maximum=64,
                title="Max instances",
                description="Launch at most this many (never more than benchmarks.max_instances)",
            ),
            "quick": Param(
                False, type="boolean", title="Quick", description="Small sizes: a smoke test of the setup"
            ),
        },
    )
    def finops_gpu_benchmark() -> None:
        @task
        def plan() -> list[dict[str, Any]]:
            from finops.gpubench import lifecycle
            from finops.gpubench.settings import get_settings
            from finops.orchestration.failures import fail_on_bad_input

            ctx = get_current_context()
            params = ctx["params"]
            with fail_on_bad_input():  # a bad benchmarks: section or an unknown target key
                settings = get_settings()
                chosen, dropped = lifecycle.plan(
                    settings, params.get("targets") or None, params.get("max_instances")
                )
            dry_run = settings.dry_run if _scheduled(ctx) else bool(params["dry_run"])
            if dropped:
                print(f"cap: not launching {dropped}")
            return [{"target": t, "dry_run": dry_run, "quick": bool(params.get("quick"))} for t in chosen]

        @task
        def prepare(item: dict[str, Any]) -> dict[str, Any]:
            from finops.gpubench import lifecycle
            from finops.gpubench.settings import get_settings

            ctx = get_current_context()
            out = lifecycle.prepare(get_settings(), item["target"], ctx["run_id"], dag_id=ctx["dag"].dag_id)
            return out | {"dry_run": item["dry_run"], "quick": item["quick"]}

        # One launch at a time: the max_running cap is check-then-launch (count tagged instances, then
        # create), so mapped launches running side by side would all pass the check (max_active_runs=1
        # covers other runs). A launch takes seconds; the benchmarks themselves still run in parallel.
        @task(retries=3, max_active_tis_per_dagrun=1)
        def launch(prepared: dict[str, Any]) -> dict[str, Any]:
            from finops.gpubench import lifecycle
            from finops.gpubench.launchers import for_target
            from finops.gpubench.operators import make_payload_store, make_presign
            from finops.gpubench.settings import get_settings
            from finops.warehouse import connect

            settings = get_settings()
            if prepared["quick"]:
                settings = settings.model_copy(update={"quick": True})
            dry = prepared["dry_run"]
            target = settings.target(prepared["target"]["key"])
            wh = connect()
            try:
                out = lifecycle.launch(
                    prepared,
                    settings,
                    None if dry else for_target(target, settings.max_running),
                    dry_run=dry,
                    wh=wh,
                    presign=None if dry else make_presign(settings.results_conn_id),
                    payloads=None if dry else make_payload_store(settings),
                )
            finally:
                wh.close()
            return out | {"dag_run_id": prepared["dag_run_id"]}

        @task
        def collect(launched: dict[str, Any], waited: dict[str, Any]) -> int:
            from finops.gpubench import lifecycle
            from finops.gpubench.operators import make_reader, results_conn
            from finops.gpubench.settings import get_settings
            from finops.warehouse import connect

            if launched.get("dry_run"):
                return 0
            settings = get_settings()
            wh = connect()
            try:
                return lifecycle.collect(
                    launched, make_reader(results_conn(settings, launched["target"])), wh
                )
            finally:
                wh.close()

        @task(retries=3, execution_timeout=TERMINATE_TIMEOUT)
        def terminate(prepared: dict[str, Any]) -> dict[str, Any]:
            from finops.gpubench import lifecycle
            from finops.gpubench.launchers import for_target
            from finops.gpubench.operators import make_payload_store
            from finops.gpubench.settings import get_settings
            from finops.warehouse import connect

            if prepared["dry_run"]:
                return {"dry_run": True, "terminated": []}
            settings = get_settings()
            launcher = for_target(settings.target(prepared["target"]["key"]), settings.max_running)
            wh = connect()
            try:
                rep = lifecycle.terminate(
                    prepared,
                    launcher,
                    dry_run=False,
                    wh=wh,
                    timeout_s=settings.terminate_timeout_s,
                    payloads=make_payload_store(settings),
                )
            finally:
                wh.close()
            return rep.as_dict()

        # TaskFlow passes XComArgs where the functions declare their run-time dict types; Airflow's
        # typing cannot say so, hence the ignores of this wiring block.
        @task_group
        def benchmark(item: dict[str, Any]) -> None:
            prepared = prepare(item)
            launched = launch(prepared)  # type: ignore[arg-type]
            waited = WaitForBenchResultsOperator(
                task_id="wait", launched=launched, retries=0, poll_s=30.0, execution_timeout=None
            )
            collected = collect(launched, waited.output)  # type: ignore[arg-type]
            done = terminate(prepared)  # type: ignore[arg-type]
            collected >> done
            done.as_teardown(setups=[prepared, launched], on_failure_fail_dagrun=True)  # type: ignore[list-item]

        @task(trigger_rule="all_done", retries=0)
        def report() -> list[dict[str, Any]]:
            """Join the figures with the latest prices; fail the run if any benchmark failed."""
            from finops.gpubench.report import failed_runs, price_performance
            from finops.gpubench.settings import get_settings
            from finops.warehouse import connect

            wh = connect()
            try:
                rows = price_performance(wh, get_settings())
                failed = failed_runs(wh, get_current_context()["run_id"])
            finally:
                wh.close()
            for r in rows:
                print(r)
            if failed:
                raise RuntimeError(f"{len(failed)} benchmark(s) failed: {failed}")
            return rows

        benchmark.expand(item=plan()) >> report()

    return finops_gpu_benchmark()


def build_bench_reaper_dag(doc_md: str | None = None) -> Any:
    @dag(
        dag_id="finops_bench_reaper",
        description="Hourly: terminate tagged GPU benchmark instances past their expiry on every cloud.",
        schedule="17 * * * *",
        start_date=datetime(2026, 1, 5, tzinfo=UTC),
        catchup=False,
        max_active_runs=1,
        # hourly: a hung run must not stall the next
        default_args=default_args(
            execution_timeout=TASK_TIMEOUT,
            retries=3,
            retry_delay=RETRY_DELAY,
            max_retry_delay=MAX_RETRY_DELAY,
        ),
        tags=["finops", "benchmarks", "safety"],
        doc_md=doc_md,
        params={
            "dry_run": Param(
                True,
                type="boolean",
                title="Dry run",
                description="Report and audit what would be terminated; terminate nothing",
            ),
            "max_terminations": Param(
                50,
                type="integer",
                minimum=0,
                maximum=500,
                title="Max terminations",
                description="Safety cap per run",
            ),
        },
    )
    def finops_bench_reaper() -> None:
        @task
        def reap() -> dict[str, Any]:
            from finops.gpubench import lifecycle
            from finops.gpubench.launchers import for_target
            from finops.gpubench.operators import make_payload_store
            from finops.gpubench.settings import get_settings
            from finops.warehouse import connect

            ctx = get_current_context()
            settings = get_settings()
            scheduled = _scheduled(ctx)
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
                report = lifecycle.reap(
                    list(seen.values()),
                    dry_run=dry_run,
                    wh=wh,
                    run_id=ctx["run_id"],
                    cap=int(ctx["params"]["max_terminations"]),
                    clean_live_launches=scheduled,
                    payloads=make_payload_store(settings),
                    payload_max_age=timedelta(minutes=settings.ttl_minutes),
                )
            finally:
                wh.close()
            if report["errors"]:
                raise RuntimeError(f"reaper: {len(report['errors'])} error(s): {report['errors'][:5]}")
            return report

        reap()

    return finops_bench_reaper()

"""The `finops_prices` DAG: plan_<provider> -> mapped fetch_<provider> (one per region for AWS
and Azure, one for GCP and Lambda) -> summary with the `finops://prices` Asset outlet.

Rate limits: each provider's mapped fetch runs in the pool named by the environment variable
`FINOPS_PRICES_POOL_<PROVIDER>` (e.g. FINOPS_PRICES_POOL_AWS=finops_prices_aws) or
`FINOPS_PRICES_POOL`, read when the DAG file is parsed (an env lookup, no I/O). Unset -> the
task runs in `default_pool`: a pool that does not exist would leave tasks unscheduled, and
pools cannot be created at parse time. Suggested pools: finops_prices_aws (4 slots),
finops_prices_azure (2), finops_prices_gcp (1), finops_prices_lambda (1).
Inside a task the HTTP client honours 429 Retry-After; task retries back off exponentially.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import Param, dag, get_current_context, task

from finops.orchestration.assets import PRICES
from finops.orchestration.defaults import default_args

PROVIDER_CHOICES = ["all", "aws", "azure", "gcp", "lambda"]

# A fetch that never returns would hold its pool slot for ever and, with max_active_runs=1,
# every later run: the HTTP client's per-request timeout does not bound a whole paged fetch.
TASK_TIMEOUT = timedelta(minutes=30)
FETCH_TIMEOUT = timedelta(hours=1)  # AWS: up to 90 days of spot history per region, paged


def pool_for(provider: str) -> str:
    return (
        os.environ.get(f"FINOPS_PRICES_POOL_{provider.upper()}")
        or os.environ.get("FINOPS_PRICES_POOL")
        or "default_pool"
    )


def prices_params() -> dict[str, Param]:
    return {
        "provider": Param(
            "all",
            type="string",
            enum=PROVIDER_CHOICES,
            title="Provider",
            description="Which provider to fetch: one of them, or all enabled in finops.yaml.",
        ),
        "regions": Param(
            [],
            type="array",
            items={"type": "string"},
            title="Regions",
            description="Regions to fetch (e.g. us-east-1, eastus, us-central1). "
            "Empty: the regions configured under prices.<provider>.regions.",
        ),
        "instance_families": Param(
            [],
            type="array",
            items={"type": "string"},
            title="Instance families",
            description="AWS families (p5, g6e), Azure armSkuName prefixes (Standard_ND) or "
            "GCP series (a3). Empty: the configured ones.",
        ),
        "lookback_days": Param(
            None,
            type=["null", "integer"],
            minimum=1,
            maximum=90,
            title="Backfill days",
            description="AWS spot history: fetch this many days back, ignoring the stored "
            "watermark (AWS keeps 90 days). Empty: incremental from the watermark.",
        ),
    }


def _label(job: dict[str, Any]) -> str:
    return f"{job['provider']} {job.get('region', '')}".strip()


def build_prices_dag(schedule: str = "0 */6 * * *"):
    @dag(
        dag_id="finops_prices",
        description="Spot / on-demand price history, GPU instance catalog and spot placement scores "
        "from AWS, Azure, GCP and Lambda Cloud.",
        schedule=schedule,
        start_date=datetime(2026, 1, 1, tzinfo=UTC),
        catchup=False,
        max_active_runs=1,
        default_args=default_args(
            execution_timeout=TASK_TIMEOUT, retries=3, retry_delay=timedelta(minutes=1)
        ),
        params=prices_params(),
        tags=["finops", "prices"],
        doc_md=__doc__,
    )
    def prices():
        def plan_task(provider: str):
            # one planner per provider: a mapped task can only expand over a task's return value
            @task(task_id=f"plan_{provider}")
            def plan() -> list[dict]:
                from airflow.sdk.exceptions import AirflowFailException

                from finops.orchestration.failures import fail_on_bad_input
                from finops.prices.jobs import plan_jobs
                from finops.prices.settings import get_prices_settings

                p = get_current_context()["params"]
                chosen = p.get("provider") or "all"
                if chosen not in ("all", provider):
                    return []
                # a typo in the Params or a bad prices: section: no retry fixes it
                with fail_on_bad_input():
                    jobs = plan_jobs(
                        get_prices_settings(),
                        provider=provider,
                        strict=chosen != "all",  # with "all", names of other clouds are skipped
                        regions=list(p.get("regions") or []) or None,
                        families=list(p.get("instance_families") or []) or None,
                        lookback_days=p.get("lookback_days") or None,
                    )
                if chosen == provider and not jobs:  # asked for by name: "nothing to do" is an error
                    raise AirflowFailException(
                        f"nothing to fetch for {provider}: prices.{provider}.enabled is false in finops.yaml, "
                        "or it has no regions / instance families configured"
                    )
                return jobs

            return plan

        def fetch_task(provider: str):
            @task(
                task_id=f"fetch_{provider}",
                pool=pool_for(provider),
                map_index_template="{{ finops_label }}",
                max_active_tis_per_dagrun=4,
                execution_timeout=FETCH_TIMEOUT,
            )
            def fetch(job: dict) -> dict:
                from finops.prices.jobs import run_job
                from finops.prices.settings import get_prices_settings

                ctx = get_current_context()
                ctx["finops_label"] = _label(job)  # type: ignore[typeddict-unknown-key]
                return run_job(job, get_prices_settings(), run_id=ctx["run_id"])

            return fetch

        @task(task_id="summary", outlets=[PRICES], trigger_rule="none_failed")
        def summary(*results: list[dict] | None) -> dict:
            from airflow.sdk.exceptions import AirflowSkipException

            flat = [r for group in results if group for r in group]
            if not flat:  # a skipped task emits no asset event: nothing was fetched, nothing is announced
                raise AirflowSkipException("no price fetch ran: finops://prices not announced")
            out = {
                "jobs": len(flat),
                "spot_prices": sum(int(r.get("spot_prices") or 0) for r in flat),
                "ondemand_prices": sum(int(r.get("ondemand_prices") or 0) for r in flat),
                "by_job": {
                    _label(r): {k: v for k, v in r.items() if k not in ("provider", "region")} for r in flat
                },
            }
            print(f"prices: {out}")
            return out

        fetched = [fetch_task(p).expand(job=plan_task(p)()) for p in ("aws", "azure", "gcp", "lambda")]
        summary(*fetched)

    return prices()

"""The manually triggered training-job DAG: a Params form for an ad-hoc job -> the job spec ->
`TrainingJobOperator` (plan, launch, deferrable watch, resume, fallback, budget stop).

prepare_job validates the form into a job spec (a bad field fails the run naming the key) and
the candidates; run_job is dry-run unless the form says otherwise, and announces
`finops://training_jobs` when a job ends. DAGs that run a fixed job use the operator directly
with the same arguments.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import DAG, Param, dag, get_current_context, task

from finops.jobs.operator import TrainingJobOperator
from finops.orchestration.assets import TRAINING_JOBS
from finops.orchestration.defaults import default_args

DAG_ID = "finops_training_job"

# What the form offers by default: this machine as the `local` provider, at example prices, so
# a dry run shows a plan and a live run trains the example job on the worker.
LOCAL_CANDIDATES: list[dict[str, Any]] = [
    {"provider": "local", "region": "here", "instance_type": "cpu-box", "pricing_model": "spot",
     "price_per_hour": "0.90", "gpu_model": "CPU", "gpu_memory_gib": 8, "interruption_rate_per_h": 0.2},
    {"provider": "local", "region": "here", "instance_type": "cpu-box", "pricing_model": "ondemand",
     "price_per_hour": "3.00", "gpu_model": "CPU", "gpu_memory_gib": 8},
]  # fmt: skip


def training_job_params() -> dict[str, Param]:
    """The form: one field per job-spec key an ad-hoc job needs, each with its description."""
    name = r"^[a-z0-9][a-z0-9_-]{0,62}$"
    tag = "1-63 chars of a-z, 0-9, _ or -: it becomes an instance tag"

    def P(default: Any, title: str, description: str, **schema: Any) -> Param:  # noqa: N802
        return Param(default, title=title, description=description, **schema)

    return {
        "name": P("example-job", "Job name", tag, type="string", pattern=name),
        "team": P("ml", "Team", f"for showback; {tag}", type="string", pattern=name),
        "project": P("demo", "Project", f"for showback; {tag}", type="string", pattern=name),
        "module": P("finops.jobs.example_train", "Python module to run",
                    "run as `python -m <module> <args>` (no shell)", type="string"),
        "args": P([], "Arguments", "argv items after the module, one per entry", type="array",
                  items={"type": "string"}),
        "steps": P(200, "Work, in steps", "training steps the job runs in all", type="integer", minimum=1),
        "step_times": P([{"gpu_model": "CPU", "precision": "fp32", "step_ms": 5}], "Measured step times",
                        "[{gpu_model, precision, step_ms}] you measured; they win over the benchmark's",
                        type="array"),
        "benchmark_profile": P("", "Benchmark profile", "optional: the weekly benchmark's profile to use for "
                               "GPU models you did not measure", type="string"),
        "min_gpu_memory_gib": P(0, "GPU memory at fp32 (GiB)", "what the model needs at fp32", type="number",
                                minimum=0),
        "min_gpu_memory_gib_amp": P(None, "GPU memory under AMP (GiB)",
                                    "what it needs under mixed precision: lets a smaller GPU qualify",
                                    type=["null", "number"], minimum=0),
        "precisions": P(["fp32"], "Precisions", "allowed: fp32, amp_bf16, amp_fp16", type="array",
                        items={"type": "string", "enum": ["fp32", "amp_bf16", "amp_fp16"]}),
        "priority": P("normal", "Priority", "critical: on-demand first; normal: cheapest with fallback; "
                      "opportunistic: spot only", type="string", enum=["critical", "normal", "opportunistic"]),
        "deadline": P("", "Deadline", "optional ISO 8601 timestamp with a timezone", type="string"),
        "budget_usd": P("", "Budget cap ($)", "optional; the job stops when its estimated cost reaches it",
                        type="string", pattern=r"^$|^[0-9]{1,9}(\.[0-9]{1,4})?$"),
        "checkpoint_uri": P("", "Checkpoint URI", "s3://bucket/prefix or an absolute path; empty: "
                            "$FINOPS_HOME/jobs/checkpoints/<name>", type="string"),
        "checkpoint_every_steps": P(50, "Checkpoint every N steps", "or leave empty to use minutes only",
                                    type=["null", "integer"], minimum=1),
        "checkpoint_every_minutes": P(30, "Checkpoint every M minutes", "whichever of steps / minutes comes first",
                                      type=["null", "number"], minimum=0.1),
        "max_spot_preemptions": P(3, "Spot preemptions before fallback", "then on-demand or a smaller GPU",
                                  type="integer", minimum=0),
        "clouds": P([], "Allowed clouds", "empty: any", type="array", items={"type": "string"}),
        "regions": P([], "Allowed regions", "empty: any", type="array", items={"type": "string"}),
        "candidates": P(LOCAL_CANDIDATES, "Where it may run",
                        "[{provider, region, instance_type, pricing_model, price_per_hour, gpu_model, "
                        "gpu_memory_gib, step_ms, interruption_rate_per_h}]", type="array"),
        "candidates_from_warehouse": P(False, "Candidates from the warehouse",
                                       "ignore the list above: benchmarked instance types x the newest prices",
                                       type="boolean"),
        "provider": P("local", "Provider", "where attempts launch: `local` (this worker) or the name of a "
                      "provider in finops.yaml's jobs: section (aws / gcp / azure / lambda)", type="string",
                      pattern=name),
        "poll_seconds": P(30, "Progress poll interval (s)", "how often the trigger checks the attempt",
                          type="number", minimum=0.05, maximum=3600),
        "dry_run": P(True, "Dry run", "plan and show the table; launch nothing", type="boolean"),
    }  # fmt: skip


def spec_from_params(p: dict[str, Any], default_ckpt_root: str) -> dict[str, Any]:
    """The job-spec mapping a form describes (validated by the operator's parse_job_spec)."""
    profile: dict[str, Any] = {"measured": list(p.get("step_times") or [])}
    if p.get("benchmark_profile"):
        profile["benchmark"] = p["benchmark_profile"]
    spec: dict[str, Any] = {
        "name": p["name"], "team": p["team"], "project": p["project"],
        "run": {"module": p["module"], "args": list(p.get("args") or [])},
        "steps": p["steps"], "step_profile": profile,
        "min_gpu_memory_gib": p.get("min_gpu_memory_gib") or 0,
        "precisions": list(p.get("precisions") or ["fp32"]), "priority": p["priority"],
        "checkpoint_uri": p.get("checkpoint_uri") or f"{default_ckpt_root.rstrip('/')}/{p['name']}",
        "checkpoint_every_steps": p.get("checkpoint_every_steps"),
        "checkpoint_every_minutes": p.get("checkpoint_every_minutes"),
        "max_spot_preemptions": p["max_spot_preemptions"],
        "clouds": list(p.get("clouds") or []), "regions": list(p.get("regions") or []),
    }  # fmt: skip
    if p.get("min_gpu_memory_gib_amp") is not None:
        spec["min_gpu_memory_gib_amp"] = p["min_gpu_memory_gib_amp"]
    if p.get("deadline"):
        spec["deadline"] = p["deadline"]
    if p.get("budget_usd"):
        spec["budget_usd"] = p["budget_usd"]  # decimal text: exact
    return spec


def build_training_job_dag(dag_id: str = DAG_ID, doc_md: str | None = None) -> DAG:
    @dag(
        dag_id=dag_id,
        description="Run an ad-hoc training job where it is cheapest: spot with checkpoints, fallback, budget cap.",
        schedule=None,
        start_date=datetime(2026, 1, 5, tzinfo=UTC),
        catchup=False,
        max_active_runs=4,
        # a job may run for days, but waits in the triggerer: the timeout bounds the worker steps
        default_args=default_args(execution_timeout=timedelta(days=7), retries=2),
        tags=["finops", "training-jobs"],
        params=training_job_params(),
        doc_md=doc_md or __doc__,
    )
    def training_job() -> None:
        @task(multiple_outputs=True, execution_timeout=timedelta(minutes=5))
        def prepare_job() -> dict[str, Any]:
            from finops.jobs.executor import candidate_from_dict
            from finops.jobs.spec import parse_job_spec
            from finops.paths import subdir

            p = dict(get_current_context()["params"])
            jobs_dir = subdir("jobs")
            spec = parse_job_spec(spec_from_params(p, str(jobs_dir / "checkpoints")), "params")
            cands: Any = p.get("candidates") or []
            if p.get("candidates_from_warehouse"):
                cands = "warehouse"  # read when the operator plans, each time it plans
            else:
                if isinstance(cands, str):
                    cands = json.loads(cands)
                for c in cands:
                    candidate_from_dict(c)  # fails here, naming the field, not in the operator
            provider: Any = {"kind": "local", "work_dir": str(jobs_dir / "instances")}
            if p.get("provider", "local") != "local":
                from finops.config import get_config

                get_config().jobs.provider_config(p["provider"])  # an unknown name fails here, naming it
                provider = p["provider"]  # the operator reads it from finops.yaml when it runs
            return {
                "spec": json.loads(spec.model_dump_json()),
                "candidates": cands,
                "provider": provider,
                "dry_run": bool(p["dry_run"]),
                "poll_s": float(p["poll_seconds"]),
            }

        prep: Any = prepare_job()  # an XComArg: prep["spec"] is the "spec" output
        TrainingJobOperator(
            task_id="run_job",
            spec=prep["spec"],
            candidates=prep["candidates"],
            provider=prep["provider"],
            dry_run=prep["dry_run"],
            poll_s=prep["poll_s"],
            outlets=[TRAINING_JOBS],
        )

    return training_job()


REAPER_DAG_ID = "finops_training_job_reaper"


def build_training_job_reaper_dag(dag_id: str = REAPER_DAG_ID) -> DAG:
    """Hourly: end job-tagged instances no running job owns (`finops.jobs.executor.reap`) on
    every provider finops.yaml's `jobs:` section names, and the local provider of the worker
    that runs it. Scheduled runs end them (they carry this
    package's job tags and their job is over); a manual run follows its dry_run Param."""

    @dag(
        dag_id=dag_id,
        description="Hourly: end training-job instances whose job is over or unknown.",
        schedule="41 * * * *",
        start_date=datetime(2026, 1, 5, tzinfo=UTC),
        catchup=False,
        max_active_runs=1,
        default_args=default_args(execution_timeout=timedelta(minutes=15), retries=2),
        tags=["finops", "training-jobs", "safety"],
        params={
            "dry_run": Param(True, type="boolean", title="Dry run", description="Audit, end nothing"),
            "max_terminations": Param(
                50,
                type="integer",
                minimum=0,
                maximum=500,
                title="Max terminations",
                description="Safety cap per run",
            ),
        },
        doc_md=build_training_job_reaper_dag.__doc__,
    )
    def training_job_reaper() -> None:
        @task
        def reap() -> list[list[str]]:
            from finops.config import get_config
            from finops.jobs.executor import provider_from_config, reap
            from finops.jobs.settings import JobsSettings
            from finops.jobs.store import JobStore
            from finops.paths import config_path, subdir
            from finops.warehouse import connect

            ctx = get_current_context()
            scheduled = str(ctx["dag_run"].run_type).lower().endswith("scheduled")
            dry_run = False if scheduled else bool(ctx["params"]["dry_run"])
            settings = get_config().jobs if config_path().exists() else JobsSettings()
            # every provider finops.yaml names (the clouds' job instances too), and this worker's
            # local one; one termination cap for the whole run
            configs = {name: p.model_dump(exclude_none=True) for name, p in settings.providers.items()}
            if not any(c["kind"] == "local" for c in configs.values()):
                configs["local"] = {"kind": "local", "work_dir": str(subdir("jobs") / "instances")}
            left = int(ctx["params"]["max_terminations"])
            done: list[tuple[str, str, str]] = []
            unreadable: list[str] = []
            wh = connect()
            try:
                for name, cfg in configs.items():
                    try:
                        out = reap(JobStore(wh), provider_from_config(cfg), dry_run=dry_run, cap=left,
                                   run_id=ctx["run_id"])  # fmt: skip
                    except Exception as e:  # noqa: BLE001 - one cloud down must not spare the others
                        unreadable.append(f"{name}: {type(e).__name__}: {e}")
                        continue
                    left -= sum(1 for d in out if d[2] == "ok")
                    done += out
            finally:
                wh.close()
            failed = [d for d in done if d[2] in ("failed", "capped")]
            if failed or unreadable:
                raise RuntimeError(
                    f"job reaper: {len(failed)} instance(s) not ended: {failed[:5]}; "
                    f"providers not read: {unreadable[:5]}"
                )
            return [list(d) for d in done]

        reap()

    return training_job_reaper()

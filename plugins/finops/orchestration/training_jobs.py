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
    """The form: one field per job-spec key an ad-hoc job needs."""
    name = r"^[a-z0-9][a-z0-9_-]{0,62}$"
    return {
        "name": Param("example-job", type="string", pattern=name, title="Job name"),
        "team": Param("ml", type="string", pattern=name, title="Team (showback)"),
        "project": Param("demo", type="string", pattern=name, title="Project (showback)"),
        "module": Param("finops.jobs.example_train", type="string", title="Python module to run",
                        description="run as `python -m <module> <args>` (no shell)"),
        "args": Param([], type="array", items={"type": "string"}, title="Arguments"),
        "steps": Param(200, type="integer", minimum=1, title="Work, in steps"),
        "step_times": Param(
            [{"gpu_model": "CPU", "precision": "fp32", "step_ms": 5}], type="array", title="Measured step times",
            description="[{gpu_model, precision, step_ms}] you measured; the planner uses them over benchmarks",
        ),
        "benchmark_profile": Param("", type="string", title="Benchmark profile (optional)"),
        "min_gpu_memory_gib": Param(0, type="number", minimum=0, title="GPU memory needed at fp32 (GiB)"),
        "min_gpu_memory_gib_amp": Param(None, type=["null", "number"], minimum=0,
                                        title="GPU memory needed under AMP (GiB)"),
        "precisions": Param(["fp32"], type="array",
                            items={"type": "string", "enum": ["fp32", "amp_bf16", "amp_fp16"]}, title="Precisions"),
        "priority": Param("normal", type="string", enum=["critical", "normal", "opportunistic"], title="Priority"),
        "deadline": Param("", type="string", title="Deadline (ISO 8601 with a timezone, optional)"),
        "budget_usd": Param("", type="string", pattern=r"^$|^[0-9]{1,9}(\.[0-9]{1,4})?$", title="Budget cap ($)"),
        "checkpoint_uri": Param("", type="string", title="Checkpoint URI",
                                description="s3://bucket/prefix or an absolute path; empty: FINOPS_HOME/jobs/<name>"),
        "checkpoint_every_steps": Param(50, type=["null", "integer"], minimum=1, title="Checkpoint every N steps"),
        "checkpoint_every_minutes": Param(30, type=["null", "number"], minimum=0.1, title="...or every M minutes"),
        "max_spot_preemptions": Param(3, type="integer", minimum=0, title="Spot preemptions before fallback"),
        "clouds": Param([], type="array", items={"type": "string"}, title="Allowed clouds (empty: any)"),
        "regions": Param([], type="array", items={"type": "string"}, title="Allowed regions (empty: any)"),
        "candidates": Param(LOCAL_CANDIDATES, type="array", title="Where it may run",
                            description="[{provider, region, instance_type, pricing_model, price_per_hour, "
                            "gpu_model, gpu_memory_gib, step_ms, interruption_rate_per_h}]"),
        "poll_seconds": Param(30, type="number", minimum=0.05, maximum=3600, title="Progress poll interval (s)"),
        "dry_run": Param(True, type="boolean", title="Dry run", description="Plan and show the table; launch nothing"),
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
            cands = p.get("candidates") or []
            if isinstance(cands, str):
                cands = json.loads(cands)
            for c in cands:
                candidate_from_dict(c)  # fails here, naming the field, not in the operator
            return {
                "spec": json.loads(spec.model_dump_json()),
                "candidates": cands,
                "provider": {"kind": "local", "work_dir": str(jobs_dir / "instances")},
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

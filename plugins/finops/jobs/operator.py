"""Airflow edge of training jobs: a deferrable operator around `finops.jobs.executor`.

    TrainingJobOperator(task_id="train", spec={...}, candidates=[...],
                        provider={"kind": "local", "work_dir": "/data/jobs"}, dry_run=False)

or `@training_job(...)` (finops.jobs.decorator). `provider` may name a provider of finops.yaml's
`jobs:` section; unset, it is that section's default provider. The section also fills in a
missing checkpoint URI and the dry-run / poll defaults, and caps budget, preemptions and
attempts (finops.jobs.settings).

plan -> launch through the provider -> defer to `TrainingJobTrigger` (the waiting holds no
worker slot) -> on its event, account for the attempt, re-plan from the newest checkpoint and
relaunch, or end. Dry-run (the default) logs and stores the plan and launches nothing.

Failure paths: any exception in the operator's own steps ends every instance of the job
before it propagates (teardown), and a trigger that fails or times out does the same via
`resume_execution`; a user failing the deferred task ends it via the trigger's `on_kill`. A
retry of the task (same job id) adopts the job: an instance still running is watched again
(the worker died with no chance to tear down), otherwise the job resumes from its newest
checkpoint. A budget stop or a crashed job fails the task without retries.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException, TaskDeferred

from finops.jobs.executor import (
    Done,
    Executor,
    Watch,
    candidate_from_dict,
    job_id_for,
    provider_from_config,
)
from finops.jobs.planner import Candidate, PlanSettings, plan
from finops.jobs.settings import JobsSettings
from finops.jobs.spec import JobSpec, JobSpecError, parse_job_spec
from finops.jobs.store import JobRecord, JobStore
from finops.warehouse.base import Warehouse


class TrainingJobOperator(BaseOperator):
    """Run a training job to its end where it is cheapest (see the module docstring)."""

    template_fields: Sequence[str] = ("spec", "candidates", "provider_config", "dry_run_flag", "poll_s")
    ui_color = "#e8f0e0"

    def __init__(
        self,
        *,
        spec: dict[str, Any] | str,
        candidates: list[dict[str, Any]] | str,  # or "warehouse"
        provider: dict[str, Any] | str | None = None,  # a mapping, JSON, or a name in finops.yaml jobs
        dry_run: bool | str | None = None,  # None: finops.yaml jobs.dry_run (default true)
        poll_s: float | str | None = None,  # None: finops.yaml jobs.poll_s
        preempt_grace_s: float = 120.0,
        max_attempts: int = 20,
        plan_settings: PlanSettings | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.candidates = candidates
        self.provider_config = provider
        self.dry_run_flag = dry_run  # BaseOperator.dry_run is a method: another name
        self.poll_s = poll_s
        self.preempt_grace_s = preempt_grace_s
        self.max_attempts = max_attempts
        self.plan_settings = plan_settings

    # -- inputs -----------------------------------------------------------------------------

    @staticmethod
    def _json(v: Any) -> Any:
        return json.loads(v) if isinstance(v, str) else v

    @staticmethod
    def _settings() -> JobsSettings:
        """finops.yaml's `jobs:` section (defaults when there is no config file)."""
        from finops.config import get_config
        from finops.paths import config_path

        return get_config().jobs if config_path().exists() else JobsSettings()

    def _spec_data(self) -> Any:
        """The spec mapping before the config defaults (the decorator builds it from its function)."""
        return self._json(self.spec)

    def _spec(self) -> JobSpec:
        origin = f"task {self.task_id}: job spec"
        data = self._spec_data()
        if isinstance(data, dict):
            try:
                data = self._settings().apply(data, job_id_for(*self._ti_ids(self._finops_ti)))
            except JobSpecError as e:
                raise JobSpecError(f"{origin}: {e}") from None
        return parse_job_spec(data, origin)

    def _provider(self) -> dict[str, Any]:
        v = self.provider_config
        if isinstance(v, str) and v.strip().startswith("{"):
            v = json.loads(v)
        cfg = self._settings().provider_config(v)
        return cfg if cfg is not None else {"kind": "local", "work_dir": "/tmp/finops-jobs"}

    def _candidates(self, wh: Warehouse) -> list[Candidate]:
        """The candidates given, or `"warehouse"`: benchmarks x the newest prices
        (`finops.jobs.candidates.candidates_from_warehouse`), read at every plan."""
        if isinstance(self.candidates, str) and self.candidates.strip() == "warehouse":
            from finops.jobs.candidates import candidates_from_warehouse

            return candidates_from_warehouse(wh)
        return [candidate_from_dict(c) for c in self._json(self.candidates)]

    def _is_dry_run(self) -> bool:
        v = self.dry_run_flag
        if v is None:
            return self._settings().dry_run
        return v.strip().lower() not in ("false", "0", "no", "off") if isinstance(v, str) else bool(v)

    @staticmethod
    def _ti_ids(ti: Any) -> tuple[str, str, str, int]:
        map_index = getattr(ti, "map_index", -1)
        return ti.dag_id, ti.run_id, ti.task_id, -1 if map_index is None else int(map_index)

    def _ids(self, context: Any) -> tuple[str, str, str, int]:
        self._finops_ti = context["ti"]  # for on_kill, which gets no context
        return self._ti_ids(context["ti"])

    @contextmanager
    def _executor(self, context: Any) -> Iterator[Executor]:
        """An executor on a fresh warehouse connection; on any failure but a deferral, the job's
        instances end before the error propagates."""
        from finops.warehouse import connect

        dag_id, run_id, task_id, map_index = self._ids(context)
        wh = connect()
        ex = Executor(
            self._spec(),
            JobStore(wh),
            provider_from_config(self._provider()),
            self._candidates(wh),
            job_id=job_id_for(dag_id, run_id, task_id, map_index),
            dag_id=dag_id,
            run_id=run_id,
            task_id=task_id,
            settings=self.plan_settings,
            preempt_grace_s=self.preempt_grace_s,
            max_attempts=min(self.max_attempts, self._settings().caps.max_attempts),
            say=self.log.info,
        )
        try:
            yield ex
        except TaskDeferred:
            raise
        except BaseException as e:
            ti = context["ti"]
            final = isinstance(e, AirflowFailException) or int(getattr(ti, "try_number", 1)) > int(
                self.retries or 0
            )
            ex.teardown(f"{type(e).__name__}: {e}", final=final)
            raise
        finally:
            wh.close()

    # -- steps ------------------------------------------------------------------------------

    def execute(self, context: Any) -> dict[str, Any]:
        if self._is_dry_run():
            return self._dry_run(context)
        with self._executor(context) as ex:
            step = ex.start_or_adopt()
            if isinstance(step, Watch):
                self._defer(step)
        return self._result(step)

    def execute_complete(self, context: Any, event: dict[str, Any] | None = None) -> dict[str, Any]:
        with self._executor(context) as ex:
            step = ex.handle(event or {"kind": "ended"})
            if isinstance(step, Watch):
                self._defer(step)
        return self._result(step)

    def resume_execution(self, next_method: str, next_kwargs: dict[str, Any] | None, context: Any) -> Any:
        """A trigger that failed or timed out resumes the task only to fail it: end the job's
        instances first."""
        if next_method != "__fail__":
            return super().resume_execution(next_method, next_kwargs, context)
        with self._executor(context):
            return super().resume_execution(next_method, next_kwargs, context)

    def on_kill(self) -> None:
        """The worker kills the task (timeout, user) while it is in a step, not deferred: the
        context is gone, so the job is found by its instances' tags."""
        ti = getattr(self, "_finops_ti", None)
        if ti is None:
            return
        provider = provider_from_config(self._provider())
        job_id = job_id_for(*self._ti_ids(ti))
        for iid, _ in provider.find(job_id):
            provider.terminate(iid, 0.0)

    def _defer(self, step: Watch) -> NoReturn:
        from finops.jobs.trigger import TrainingJobTrigger

        spec = self._spec()
        timeout = None
        if spec.deadline is not None:  # the trigger ends a late spot attempt; this is a backstop
            timeout = max(spec.deadline - datetime.now(UTC), timedelta(0)) + timedelta(hours=6)
        self.defer(
            trigger=TrainingJobTrigger(step.as_dict(), poll_s=float(self.poll_s or self._settings().poll_s)),
            method_name="execute_complete",
            timeout=timeout,
        )
        raise AssertionError("unreachable: defer raises")

    def _result(self, step: Done) -> dict[str, Any]:
        """The job's summary when it finished; a stopped or crashed job fails the task for good."""
        if step.state == "finished":
            return step.summary
        msg = f"training job {step.job_id} {step.state}: {step.reason}"
        if step.state in ("stopped", "failed"):
            raise AirflowFailException(msg)  # a retry would stop or crash the same way
        raise RuntimeError(msg)  # waiting / interrupted: a retry re-plans

    def _dry_run(self, context: Any) -> dict[str, Any]:
        """Plan only: log the table and store the job as `dry_run` (no instance, no attempt)."""
        from finops.warehouse import connect

        dag_id, run_id, task_id, map_index = self._ids(context)
        spec = self._spec()
        job_id = job_id_for(dag_id, run_id, task_id, map_index)
        wh = connect()
        try:
            decision = plan(spec, self._candidates(wh), datetime.now(UTC), None, self.plan_settings)
            table = decision.table()
            self.log.info("DRY RUN: nothing is launched.\n%s", table)
            store = JobStore(wh)
            job = store.get_job(job_id) or JobRecord(
                job_id=job_id, name=spec.name, team=spec.team, project=spec.project,
                spec_json=spec.model_dump_json(), state="dry_run", steps_total=spec.steps, dag_id=dag_id,
                run_id=run_id, task_id=task_id, budget_usd=spec.budget_usd,
            )  # fmt: skip
            job.plan_table, job.state_reason = table, f"dry run: {decision.action}: {decision.reason}"
            if store.create_job(job) is False and job.state == "dry_run":
                store.save_job(job)
        finally:
            wh.close()
        return {
            "job_id": job_id,
            "state": "dry_run",
            "action": decision.action,
            "reason": decision.reason,
            "candidate": decision.candidate.label if decision.candidate else None,
            "precision": decision.precision,
            "expected_cost_usd": None if decision.expected_cost is None else str(decision.expected_cost),
            "plan": table,
        }

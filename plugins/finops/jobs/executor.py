"""The executor's moves, between the planner and a provider, recorded in the job tables.

No Airflow import: `finops.jobs.operator` drives it from a deferrable task and
`finops.jobs.trigger` does the waiting. One `Executor` call is one short step:

- `start_or_adopt()`: a new job plans and launches its first attempt; a job that exists (an
  Airflow retry of the same task) is adopted: its running instance is watched again, an
  instance that ended while nobody watched is accounted for, and nothing is launched twice.
- `handle(event)`: the trigger saw the attempt end (finished, preempted, crashed), its pace
  miss the deadline, or the budget run out; the executor records the attempt (steps done from
  the newest complete checkpoint, estimated cost, outcome, why), then re-plans from the
  newest checkpoint and relaunches, or ends the job.
- `teardown(reason)`: ends every live instance of the job, whatever the failure was.

Each returns a `Watch` (what the trigger polls next) or a `Done` (the job's end state).
A capacity error when launching marks that candidate out and re-plans at once.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Protocol

from finops.exceptions import CloudActionError
from finops.jobs.checkpoint import newest_complete_step
from finops.jobs.planner import Candidate, Decision, JobState, PlanSettings, cost_of, plan
from finops.jobs.spec import JobSpec
from finops.jobs.store import AttemptRecord, JobRecord, JobStore
from finops.jobs.stores import open_store

log = logging.getLogger(__name__)

# Return codes that mean "reclaimed": SIGKILL / SIGTERM as a signal (negative) or as a shell
# code, and 143, which a job returns after saving on SIGTERM (finops.jobs.example_train).
PREEMPT_CODES = (-9, -15, 137, 143)


class CapacityError(CloudActionError, RuntimeError):
    """The provider has no capacity for the asked instance type (spot or on-demand)."""


class Provider(Protocol):
    name: str

    def start(
        self, spec: JobSpec, attempt: int, precision: str, candidate: Candidate, tags: dict[str, str]
    ) -> str:
        """Launch one attempt's instance (the candidate's type, region and pricing model),
        tagged; return its id. CapacityError when there is none to have."""

    def status(self, instance_id: str) -> str:
        """`running`, `exited:<code>` or `gone` (ended with no exit code: reclaimed)."""

    def terminate(self, instance_id: str, grace_s: float = 0.0) -> str:
        """End it (a SIGTERM-like warning, `grace_s`, then for good); return the final status."""

    def find(self, job_id: str | None = None) -> list[tuple[str, dict[str, str]]]:
        """Live instances of a job (all job instances with None), with their tags."""

    def config(self) -> dict[str, Any]:
        """JSON that rebuilds the provider in another process (the triggerer)."""


def provider_from_config(cfg: Mapping[str, Any]) -> Provider:
    """The provider a config names: `local`, `aws`, `gcp`, `azure` or `lambda`."""
    kind = cfg.get("kind")
    if kind == "local":
        from finops.jobs.local import LocalProvider

        return LocalProvider(cfg["work_dir"], dict(cfg.get("extra_env") or {}), cfg.get("machines"))
    if kind == "aws":
        from finops.jobs.aws import AwsJobProvider

        return AwsJobProvider.from_config(cfg)
    if kind in ("gcp", "azure", "lambda"):
        from importlib import import_module

        module, cls = {"gcp": ("gcp", "GcpJobProvider"), "azure": ("azure", "AzureJobProvider"),
                       "lambda": ("lambda_cloud", "LambdaJobProvider")}[kind]  # fmt: skip
        provider: Provider = getattr(import_module(f"finops.jobs.{module}"), cls).from_config(cfg)
        return provider
    raise ValueError(f"unknown job provider {kind!r}: 'local', 'aws', 'gcp', 'azure' or 'lambda'")


def job_id_for(dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> str:
    """Stable across retries of one task instance: a retry finds its job by this id."""
    key = f"{dag_id}|{run_id}|{task_id}|{map_index}"
    return "job-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def candidate_from_dict(d: Mapping[str, Any]) -> Candidate:
    """A Candidate from JSON (a DAG argument, a Params form): the price as exact decimal text."""
    return Candidate(
        provider=str(d["provider"]),
        region=str(d["region"]),
        instance_type=str(d["instance_type"]),
        pricing_model=str(d["pricing_model"]),
        price_per_hour=Decimal(str(d["price_per_hour"])),
        gpu_count=int(d.get("gpu_count", 1)),
        gpu_model=d.get("gpu_model"),
        gpu_memory_gib=None if d.get("gpu_memory_gib") is None else float(d["gpu_memory_gib"]),
        step_ms={str(k): float(v) for k, v in (d.get("step_ms") or {}).items()},
        interruption_rate_per_h=(
            None if d.get("interruption_rate_per_h") is None else float(d["interruption_rate_per_h"])
        ),
    )


def classify(status: str) -> tuple[str, str]:
    """(outcome, why) of an attempt whose instance stopped running."""
    if status == "gone":
        return "preempted", "the instance is gone (reclaimed) with no exit code"
    code = int(status.partition(":")[2]) if status.startswith("exited:") else None
    if code == 0:
        return "finished", "the job exited 0"
    if code in PREEMPT_CODES:
        return "preempted", f"the job was killed or stopped by a reclaim (exit {code})"
    return "failed", f"the job crashed (exit {code})"


@dataclass(frozen=True)
class Watch:
    """What the trigger polls: one running attempt, with the limits that end it early."""

    job_id: str
    attempt: int
    instance_id: str
    provider: dict[str, Any]
    spec: dict[str, Any]
    started_at: float  # epoch seconds
    price_per_hour: str
    spent_before: str
    steps_at_start: int
    spot: bool

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Done:
    job_id: str
    state: str
    reason: str
    summary: dict[str, Any] = field(default_factory=dict)


def _aware(ts: datetime) -> datetime:
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts


class Executor:
    def __init__(
        self,
        spec: JobSpec,
        store: JobStore,
        provider: Provider,
        candidates: Iterable[Candidate],
        *,
        job_id: str,
        dag_id: str | None = None,
        run_id: str | None = None,
        task_id: str | None = None,
        settings: PlanSettings | None = None,
        preempt_grace_s: float = 120.0,
        max_attempts: int = 20,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        say: Callable[[str], None] = log.info,
    ) -> None:
        self.spec, self.store, self.provider = spec, store, provider
        self.candidates = list(candidates)
        self.job_id, self.dag_id, self.run_id, self.task_id = job_id, dag_id, run_id, task_id
        self.settings = settings or PlanSettings()
        self.preempt_grace_s = preempt_grace_s
        self.max_attempts = max_attempts
        self.now = now
        self.say = say

    # -- entry points ---------------------------------------------------------------------

    def start_or_adopt(self) -> Watch | Done:
        job = self.store.get_job(self.job_id)
        if job is None:
            job = JobRecord(
                job_id=self.job_id, name=self.spec.name, team=self.spec.team, project=self.spec.project,
                spec_json=self.spec.model_dump_json(), state="running", steps_total=self.spec.steps,
                dag_id=self.dag_id, run_id=self.run_id, task_id=self.task_id, budget_usd=self.spec.budget_usd,
            )  # fmt: skip
            self.store.create_job(job)
            return self._next(job)
        if job.terminal:
            self.say(f"job {job.job_id} already ended: {job.state} ({job.state_reason})")
            return self._done(job)
        att = self.store.open_attempt(job.job_id)
        if att is not None and att.instance_id is None:
            # the task ended between writing the attempt and recording the launch: the tags tell
            tagged = [
                i for i, t in self.provider.find(job.job_id) if t.get("finops-attempt") == str(att.attempt)
            ]
            if tagged:
                att.instance_id, att.outcome = tagged[0], "running"
                self.store.save_attempt(att)
            else:
                self._close(job, att, "lost", "no instance carries this attempt's tags: it never started", 0)
                att = None
        self._end_strays(job, keep=att.instance_id if att else None)
        if att is not None and att.instance_id is not None:
            status = self.provider.status(att.instance_id)
            if status == "running":
                self.say(f"adopting attempt {att.attempt} of job {job.job_id}: {att.instance_id} still runs")
                job.state = "running"
                self.store.save_job(job)
                return self._watch(job, att)
            return self._after(job, att, {"kind": "ended", "status": status})
        job.state = "running"
        return self._next(job)

    def handle(self, event: Mapping[str, Any]) -> Watch | Done:
        """The trigger's event for the open attempt: ended | deadline | budget."""
        job = self.store.get_job(self.job_id)
        if job is None:
            raise RuntimeError(f"job {self.job_id} is not in training_jobs")
        att = self.store.open_attempt(job.job_id)
        if job.terminal or att is None or att.instance_id is None:
            return self.start_or_adopt()
        return self._after(job, att, event)

    def teardown(self, reason: str, final: bool = True) -> list[str]:
        """End every live instance of the job and close its open attempt. `final`: no retry
        will come, so the job is failed; else it is `interrupted` and a retry resumes it."""
        ended = []
        job = self.store.get_job(self.job_id)
        att = self.store.open_attempt(self.job_id) if job else None
        ids = {i for i, _ in self.provider.find(self.job_id)}
        if att is not None and att.instance_id:
            ids.add(att.instance_id)
        for iid in sorted(ids):
            self.provider.terminate(iid, 0.0)
            ended.append(iid)
        if job is not None and att is not None:
            self._close(job, att, "torn_down", f"teardown: {reason}"[:2000], self._steps(job, att))
        if job is not None and not job.terminal:
            job.state = "failed" if final else "interrupted"
            job.state_reason = reason[:2000]
            if final:
                job.finished_at = self.now()
            self.store.save_job(job)
        if ended:
            self.say(f"teardown of job {self.job_id}: ended {ended} ({reason})")
        return ended

    # -- the loop ---------------------------------------------------------------------------

    def _state(self, job: JobRecord) -> JobState:
        excluded = {a.label: f"no capacity: {a.end_reason}" for a in self.store.attempts(job.job_id)
                    if a.outcome == "capacity"}  # fmt: skip
        blocked = None if job.spot_allowed else "spot ruled out: a spot attempt's pace missed the deadline"
        return JobState(job.steps_done, job.estimated_cost_usd, job.spot_preemptions, blocked, excluded)

    def _next(self, job: JobRecord) -> Watch | Done:
        """Plan the remaining steps and launch, moving past candidates without capacity."""
        while True:
            attempts = self.store.attempts(job.job_id)
            if len(attempts) >= self.max_attempts:
                return self._finish(
                    job, "failed", f"{len(attempts)} attempts: the cap of {self.max_attempts}"
                )
            decision = plan(self.spec, self.candidates, self.now(), self._state(job), self.settings)
            table = decision.table()
            self.say(table)
            job.plan_table = table
            if decision.action == "stop":
                state = "finished" if job.steps_done >= self.spec.steps else "stopped"
                return self._finish(job, state, decision.reason)
            if decision.action == "wait" or decision.candidate is None or decision.precision is None:
                job.state, job.state_reason = "waiting", decision.reason
                self.store.save_job(job)
                return self._done(job)
            watch = self._launch(job, len(attempts) + 1, decision)
            if watch is not None:
                return watch

    def _launch(self, job: JobRecord, number: int, decision: Decision) -> Watch | None:
        cand = decision.candidate
        assert cand is not None and decision.precision is not None
        tags = {
            **self.spec.tags(),
            "finops-job-id": job.job_id,
            "finops-attempt": str(number),
            "finops-dag-id": self.dag_id or "",
            "finops-run-id": self.run_id or "",
        }
        att = AttemptRecord(
            job_id=job.job_id, attempt=number, provider=cand.provider, region=cand.region,
            instance_type=cand.instance_type, pricing_model=cand.pricing_model, precision=decision.precision,
            price_per_hour=cand.price_per_hour, started_at=self.now(), steps_at_start=job.steps_done,
            tags=tags, launch_reason=decision.reason, plan_table=decision.table(),
        )  # fmt: skip
        self.store.add_attempt(att)  # before the launch: a task that dies now leaves a row to resolve
        try:
            att.instance_id = self.provider.start(self.spec, number, decision.precision, cand, tags)
        except CapacityError as e:
            self.say(f"attempt {number}: no capacity for {cand.label}: {e}; re-planning without it")
            att.outcome, att.end_reason, att.ended_at = "capacity", str(e)[:2000], self.now()
            att.steps_at_end = job.steps_done
            self.store.save_attempt(att)
            return None
        att.outcome = "running"
        att.started_at = self.now()
        self.store.save_attempt(att)
        job.state = "running"
        self.store.save_job(job)
        self.say(
            f"attempt {number}: {cand.label} {decision.precision} -> {att.instance_id} ({decision.reason})"
        )
        return self._watch(job, att)

    def _after(self, job: JobRecord, att: AttemptRecord, event: Mapping[str, Any]) -> Watch | Done:
        """Account for the attempt the event ends, then finish, stop or re-plan."""
        kind = str(event.get("kind", "ended"))
        assert att.instance_id is not None
        if kind == "ended":
            outcome, why = classify(str(event.get("status") or self.provider.status(att.instance_id)))
        elif kind == "deadline":
            self.provider.terminate(att.instance_id, self.preempt_grace_s)  # SIGTERM: it saves first
            outcome, why = "moved", str(event.get("reason") or "the projected finish passed the deadline")
            job.spot_allowed = False
        elif kind == "budget":
            self.provider.terminate(att.instance_id, self.preempt_grace_s)
            outcome, why = "stopped", str(event.get("reason") or "the budget cap is reached")
        else:
            raise ValueError(f"unknown trigger event kind {kind!r}")
        steps = self.spec.steps if outcome == "finished" else self._steps(job, att)
        seen = event.get("observed_at") if kind == "ended" else None
        end = datetime.fromtimestamp(float(seen), UTC) if isinstance(seen, int | float) else None
        self._close(job, att, outcome, why, steps, end)
        if outcome == "preempted" and att.pricing_model == "spot":
            job.spot_preemptions += 1
        self.say(
            f"attempt {att.attempt} {outcome}: {why}; steps {att.steps_at_start}->{steps}, "
            f"est. ${att.estimated_cost_usd}"
        )
        if outcome == "finished":
            return self._finish(job, "finished", f"all {self.spec.steps} steps done")
        if outcome == "failed":
            return self._finish(job, "failed", why)  # a crash would crash again: not re-run
        if outcome == "stopped":
            return self._finish(job, "stopped", why)
        return self._next(job)

    # -- helpers ----------------------------------------------------------------------------

    def _steps(self, job: JobRecord, att: AttemptRecord) -> int:
        newest = newest_complete_step(open_store(self.spec.checkpoint_uri))
        return max(newest or 0, att.steps_at_start)

    def _close(
        self,
        job: JobRecord,
        att: AttemptRecord,
        outcome: str,
        why: str,
        steps: int,
        end: datetime | None = None,
    ) -> None:
        end = min(end or self.now(), self.now())
        att.outcome, att.end_reason, att.ended_at, att.steps_at_end = outcome, why, end, steps
        hours = max((end - _aware(att.started_at)).total_seconds(), 0.0) / 3600.0
        att.estimated_cost_usd = cost_of(att.price_per_hour, hours) if att.instance_id else Decimal(0)
        self.store.save_attempt(att)
        job.steps_done = max(job.steps_done, steps)
        job.estimated_cost_usd = sum(
            (a.estimated_cost_usd for a in self.store.attempts(job.job_id)), Decimal(0)
        )
        self.store.save_job(job)

    def _end_strays(self, job: JobRecord, keep: str | None) -> None:
        """Instances tagged with the job that no open attempt owns: never two running at once."""
        for iid, tags in self.provider.find(job.job_id):
            if iid != keep:
                self.say(
                    f"ending stray instance {iid} of job {job.job_id} (attempt {tags.get('finops-attempt')})"
                )
                self.provider.terminate(iid, 0.0)

    def _watch(self, job: JobRecord, att: AttemptRecord) -> Watch:
        assert att.instance_id is not None
        return Watch(
            job_id=job.job_id, attempt=att.attempt, instance_id=att.instance_id, provider=self.provider.config(),
            spec=json.loads(self.spec.model_dump_json()), started_at=_aware(att.started_at).timestamp(),
            price_per_hour=str(att.price_per_hour), spent_before=str(job.estimated_cost_usd),
            steps_at_start=att.steps_at_start, spot=att.pricing_model == "spot",
        )  # fmt: skip

    def ondemand_cost(self) -> Decimal | None:
        """What the whole job would cost by estimate on the cheapest on-demand candidate."""
        od = [c for c in self.candidates if c.pricing_model != "spot"]
        spec = self.spec.model_copy(update={"priority": "critical", "deadline": None, "budget_usd": None})
        d = plan(spec, od, self.now(), JobState(), self.settings)
        return d.expected_cost if d.action == "launch" else None

    def _finish(self, job: JobRecord, state: str, reason: str) -> Done:
        job.state, job.state_reason, job.finished_at = state, reason[:2000], self.now()
        job.ondemand_cost_usd = self.ondemand_cost()
        self.store.save_job(job)
        self.say(f"job {job.job_id} {state}: {reason}; estimated ${job.estimated_cost_usd}")
        return self._done(job)

    def _done(self, job: JobRecord) -> Done:
        attempts = self.store.attempts(job.job_id)
        return Done(
            job.job_id,
            job.state,
            job.state_reason or "",
            {
                "job_id": job.job_id,
                "state": job.state,
                "reason": job.state_reason,
                "steps_done": job.steps_done,
                "steps_total": job.steps_total,
                "estimated_cost_usd": str(job.estimated_cost_usd),
                "ondemand_cost_usd": None if job.ondemand_cost_usd is None else str(job.ondemand_cost_usd),
                "attempts": [
                    {
                        "attempt": a.attempt,
                        "place": a.label,
                        "precision": a.precision,
                        "outcome": a.outcome,
                        "steps": [a.steps_at_start, a.steps_at_end],
                        "cost_usd": str(a.estimated_cost_usd),
                        "why": a.end_reason,
                    }  # fmt: skip
                    for a in attempts
                ],
            },
        )


def reap(
    store: JobStore, provider: Provider, *, dry_run: bool = True, cap: int = 50, run_id: str = ""
) -> list[tuple[str, str, str]]:
    """The safety net for job instances: end every live instance tagged as a job's that no
    running job owns (its job is unknown, ended or interrupted, or it is not the job's open
    attempt), at most `cap` per call. Each decision is audited in policy_actions (policy
    `training-job`). Returns (instance id, why, result: dry_run | ok | capped | failed)."""
    out: list[tuple[str, str, str]] = []
    ended = 0
    for iid, tags in provider.find(None):
        job_id = tags.get("finops-job-id")
        if not job_id:
            continue
        job = store.get_job(job_id)
        att = store.open_attempt(job_id) if job is not None else None
        if job is None:
            why = "its job is not in training_jobs"
        elif job.terminal or job.state in ("interrupted", "waiting"):
            why = f"its job is {job.state}"
        elif att is None or att.instance_id != iid:
            why = "it is not the job's open attempt"
        else:
            continue
        if dry_run:
            result = "dry_run"
        elif ended >= cap:
            result = "capped"
        else:
            try:
                provider.terminate(iid, 0.0)
                ended += 1
                result = "ok"
                log.warning("reaped job instance %s (%s)", iid, why)
            except Exception as e:  # noqa: BLE001 - audited, the next run tries again
                result, why = "failed", f"{why}; terminate failed: {type(e).__name__}: {e}"
        store.audit(run_id=run_id, provider=provider.name, resource_id=iid, action="reap", result=result,
                    dry_run=dry_run, reason=why, evidence={"job_id": job_id, "tags": tags})  # fmt: skip
        out.append((iid, why, result))
    return out

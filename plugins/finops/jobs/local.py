"""The `local` provider: each attempt is a subprocess on this machine, a preemption is a kill.

For the tests, the demo and users with their own GPU boxes. `run_job` is the whole loop
plan -> launch -> (preempted?) -> re-plan from the newest checkpoint -> ... -> finished,
with every attempt and every decision kept in memory (`JobRun`); the tables come later.
No Airflow import: an operator wraps this at the edge.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from finops.jobs.checkpoint import newest_complete_step
from finops.jobs.planner import Candidate, Decision, JobState, PlanSettings, cost_of, plan
from finops.jobs.spec import JobSpec
from finops.jobs.stores import open_store


@dataclass
class Attempt:
    number: int
    candidate: str
    pricing_model: str
    precision: str
    started_at: datetime
    steps_at_start: int
    decision_reason: str
    ended_at: datetime | None = None
    steps_at_end: int | None = None
    exit_code: int | None = None
    outcome: str = "running"  # finished | preempted | failed
    estimated_cost: Decimal = Decimal(0)


@dataclass
class JobRun:
    spec: JobSpec
    attempts: list[Attempt] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    outcome: str = "running"  # finished | stopped | waiting | failed

    @property
    def estimated_cost(self) -> Decimal:
        return sum((a.estimated_cost for a in self.attempts), Decimal(0))


def job_env(spec: JobSpec, attempt: int, precision: str) -> dict[str, str]:
    """What every provider tells the job process (the bootstrap of a cloud launcher too)."""
    return {
        "FINOPS_JOB_NAME": spec.name,
        "FINOPS_JOB_ATTEMPT": str(attempt),
        "FINOPS_CHECKPOINT_URI": spec.checkpoint_uri,
        "FINOPS_STEPS": str(spec.steps),
        "FINOPS_PRECISION": precision,
        # the cadence the planner's interruption losses assume; the job's Checkpointer follows it
        "FINOPS_CHECKPOINT_EVERY_STEPS": str(spec.checkpoint_every_steps or ""),
        "FINOPS_CHECKPOINT_EVERY_MINUTES": str(spec.checkpoint_every_minutes or ""),
    }


def job_argv(spec: JobSpec) -> list[str]:
    if spec.run.module is not None:
        return [sys.executable, "-m", spec.run.module, *spec.run.args]
    return [*(spec.run.command or []), *spec.run.args]


class LocalInstance:
    def __init__(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.proc, self.log = proc, log

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


class LocalProvider:
    """Launches attempts as subprocesses; `preempt` is what a spot reclaim does to one: SIGTERM,
    a grace period (AWS gives two minutes), then SIGKILL. grace_s=0 is a hard kill."""

    def __init__(self, work_dir: str | os.PathLike[str], extra_env: dict[str, str] | None = None) -> None:
        self.work_dir = Path(work_dir)
        self.extra_env = extra_env or {}

    def launch(self, spec: JobSpec, attempt: int, precision: str) -> LocalInstance:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        log = self.work_dir / f"{spec.name}-attempt-{attempt}.log"
        env = {
            **os.environ,
            **self.extra_env,
            **job_env(spec, attempt, precision),
            "FINOPS_PROVIDER": "local",
        }
        with log.open("wb") as out:
            proc = subprocess.Popen(job_argv(spec), stdout=out, stderr=subprocess.STDOUT, env=env)
        return LocalInstance(proc, log)

    @staticmethod
    def preempt(inst: LocalInstance, grace_s: float = 0.0) -> None:
        if grace_s > 0:
            inst.proc.send_signal(signal.SIGTERM)
            try:
                inst.proc.wait(grace_s)
                return
            except subprocess.TimeoutExpired:
                pass
        inst.proc.kill()
        inst.proc.wait()

    @staticmethod
    def teardown(inst: LocalInstance) -> None:
        if inst.proc.poll() is None:
            inst.proc.kill()
            inst.proc.wait()


# Decides, while an attempt runs, whether to preempt it now (tests, the demo): gets the attempt
# number and the instance, returns a grace period in seconds to preempt, or None.
Preempter = Callable[[int, LocalInstance], float | None]


def run_job(
    spec: JobSpec,
    candidates: Iterable[Candidate],
    provider: LocalProvider,
    preempter: Preempter | None = None,
    settings: PlanSettings | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    poll_s: float = 0.05,
    max_attempts: int = 20,
) -> JobRun:
    """Run the job to the end: plan, launch, watch, re-plan after each preemption from the
    newest complete checkpoint, until it finishes, stops (budget) or must wait (no price)."""
    cands = list(candidates)
    run = JobRun(spec)
    store = open_store(spec.checkpoint_uri)
    state = JobState()
    for number in range(1, max_attempts + 1):
        decision = plan(spec, cands, now(), state, settings)
        run.decisions.append(decision)
        if decision.action != "launch" or decision.candidate is None or decision.precision is None:
            run.outcome = "waiting" if decision.action == "wait" else "stopped"
            return run
        cand = decision.candidate
        att = Attempt(
            number,
            cand.label,
            cand.pricing_model,
            decision.precision,
            now(),
            state.steps_done,
            decision.reason,
        )
        run.attempts.append(att)
        start = time.monotonic()
        inst = provider.launch(spec, number, decision.precision)
        preempted = False
        try:
            while inst.proc.poll() is None:
                grace = preempter(number, inst) if preempter else None
                if grace is not None:
                    provider.preempt(inst, grace)
                    preempted = True
                    break
                time.sleep(poll_s)
        finally:
            provider.teardown(inst)  # no attempt outlives the loop, whatever happened
        att.ended_at, att.exit_code = now(), inst.proc.returncode
        att.estimated_cost = cost_of(cand.price_per_hour, (time.monotonic() - start) / 3600.0)
        att.steps_at_end = newest_complete_step(store) or 0
        if att.exit_code == 0 and not preempted:
            att.outcome, att.steps_at_end = "finished", spec.steps
        elif preempted:
            att.outcome = "preempted"
        else:
            att.outcome = "failed"
        state = JobState(
            steps_done=att.steps_at_end,
            spent_usd=state.spent_usd + att.estimated_cost,
            spot_preemptions=state.spot_preemptions + (preempted and cand.pricing_model == "spot"),
        )
        if att.outcome == "finished":
            run.outcome = "finished"
            return run
        if att.outcome == "failed":
            run.outcome = "failed"  # a crash is not a preemption: re-running would crash again
            return run
    run.outcome = "failed"
    return run

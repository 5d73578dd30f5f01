"""The `local` provider: each attempt is a subprocess on this machine, a preemption is a kill.

For the tests, the demo and users with their own GPU boxes. `run_job` is the whole loop
plan -> launch -> (preempted?) -> re-plan from the newest checkpoint -> ... -> finished,
with every attempt and every decision kept in memory (`JobRun`); the tables come later.
No Airflow import: an operator wraps this at the edge.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from finops.jobs.checkpoint import newest_complete_step
from finops.jobs.executor import CapacityError
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


class NoCapacity(CapacityError):
    """The provider has no machine of the asked type (a cloud's InsufficientInstanceCapacity)."""


# Wrappers this process started: their exit must be reaped here, or they linger as zombies that
# still answer kill(pid, 0).
_STARTED: dict[int, subprocess.Popen[bytes]] = {}


def _proc_start_time(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat (start time in clock ticks): tells a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":  # exited, not yet reaped by its parent
        return None
    return fields[19]


class LocalProvider:
    """Launches attempts as subprocesses; `preempt` is what a spot reclaim does to one: SIGTERM,
    a grace period (AWS gives two minutes), then SIGKILL. grace_s=0 is a hard kill.

    Two ways to use it: `launch` (a child of this process, for `run_job`), or `start` /
    `status` / `terminate` / `find` (the executor's provider interface): a detached instance
    under `<work_dir>/instances/<id>/` (tags.json, pid, log, exit) that a later process, such
    as Airflow's triggerer or a retried task, can watch and end. `machines` are the instance
    types this box can be; starting another raises NoCapacity (None: any)."""

    name = "local"

    def __init__(
        self,
        work_dir: str | os.PathLike[str],
        extra_env: dict[str, str] | None = None,
        machines: list[str] | None = None,
    ) -> None:
        self.work_dir = Path(work_dir)
        self.extra_env = extra_env or {}
        self.machines = machines

    def config(self) -> dict[str, object]:
        """JSON that rebuilds this provider elsewhere (`finops.jobs.executor.provider_from_config`)."""
        return {"kind": "local", "work_dir": str(self.work_dir), "extra_env": self.extra_env,
                "machines": self.machines}  # fmt: skip

    # -- detached instances (the executor's provider interface) -----------------------------

    def _dir(self, instance_id: str) -> Path:
        if not instance_id.startswith("local-") or "/" in instance_id or ".." in instance_id:
            raise ValueError(f"not a local instance id: {instance_id!r}")
        return self.work_dir / "instances" / instance_id

    def start(
        self, spec: JobSpec, attempt: int, precision: str, candidate: Candidate, tags: dict[str, str]
    ) -> str:
        itype = candidate.instance_type
        if self.machines is not None and itype not in self.machines:
            raise NoCapacity(f"no local machine of type {itype} (have {', '.join(self.machines)})")
        iid = f"local-{uuid.uuid4().hex[:16]}"
        d = self._dir(iid)
        d.mkdir(parents=True)
        (d / "tags.json").write_text(json.dumps(tags, sort_keys=True))
        env = {
            **os.environ,
            **self.extra_env,
            **job_env(spec, attempt, precision),
            "FINOPS_PROVIDER": "local",
            "FINOPS_INSTANCE_ID": iid,
        }
        argv = [sys.executable, "-m", "finops.jobs.local_wrap", str(d), "--", *job_argv(spec)]
        with (d / "log").open("wb") as out:
            proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        _STARTED[proc.pid] = proc
        (d / "pid").write_text(f"{proc.pid} {_proc_start_time(proc.pid) or ''}")
        return iid

    def _pid(self, instance_id: str) -> int | None:
        """The wrapper's pid while it is alive (and still the process we started)."""
        try:
            pid_s, _, started = (self._dir(instance_id) / "pid").read_text().partition(" ")
        except FileNotFoundError:
            return None
        pid = int(pid_s)
        proc = _STARTED.get(pid)
        if proc is not None:
            if proc.poll() is None:
                return pid
            _STARTED.pop(pid, None)  # not del: a triggerer thread may have popped it already
            return None
        now = _proc_start_time(pid)
        return pid if now is not None and (not started or now == started) else None

    def status(self, instance_id: str) -> str:
        """`running`, `exited:<code>` (the job's return code) or `gone` (killed with no exit
        recorded, as a reclaimed instance is)."""
        d = self._dir(instance_id)
        if self._pid(instance_id) is not None:
            return "running"
        try:
            return f"exited:{int((d / 'exit').read_text())}"
        except (FileNotFoundError, ValueError):
            return "gone"

    def terminate(self, instance_id: str, grace_s: float = 0.0) -> str:
        """SIGTERM the instance's process group, wait up to `grace_s`, then SIGKILL it; returns
        the status it ended with."""
        pid = self._pid(instance_id)
        if pid is not None and grace_s > 0:
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            end = time.monotonic() + grace_s
            while time.monotonic() < end and self._pid(instance_id) is not None:
                time.sleep(0.02)
        pid = self._pid(instance_id)
        if pid is not None:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc = _STARTED.pop(pid, None)
            if proc is not None:
                proc.wait()
            else:
                end = time.monotonic() + 10
                while time.monotonic() < end and _proc_start_time(pid) is not None:
                    time.sleep(0.02)
        return self.status(instance_id)

    def find(self, job_id: str | None = None) -> list[tuple[str, dict[str, str]]]:
        """Live instances (of one job, by its `finops-job-id` tag) with their tags."""
        root = self.work_dir / "instances"
        out = []
        for d in sorted(root.iterdir()) if root.is_dir() else []:
            try:
                tags = json.loads((d / "tags.json").read_text())
            except (OSError, ValueError):
                continue
            if job_id is not None and tags.get("finops-job-id") != job_id:
                continue
            if self._pid(d.name) is not None:
                out.append((d.name, tags))
        return out

    def log_text(self, instance_id: str) -> str:
        try:
            return (self._dir(instance_id) / "log").read_text(errors="replace")
        except FileNotFoundError:
            return ""

    # -- children of this process (run_job) -------------------------------------------------

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

"""Where to run (or re-run) a training job: expected cost and finish per candidate, the
deadline and budget limits, and the priority rules, with a table that says why.

Pure: no Airflow, no cloud SDK, no warehouse. Candidates come in as plain values (the edge
builds them from the latest prices, benchmark step times and interruption rates); the job's
progress so far comes in as `JobState`, so a re-plan after a preemption is the same call.

Rules, in order, per (candidate, precision):
1. cloud / region allowed by the spec; the GPU has the memory the model needs at that
   precision (`min_gpu_memory_gib`, or `min_gpu_memory_gib_amp` under AMP, which lets a
   smaller GPU qualify); a step time is known (the user's own measurement for the GPU model
   wins over the benchmark's).
2. `finops.gpubench.pricing.expected_run` for the remaining steps: wall hours include the work
   lost to spot interruptions and the restarts; an offer interrupted faster than it
   progresses is rejected.
3. spot is out once the job has had `max_spot_preemptions` preemptions; on-demand is out for
   opportunistic jobs.
4. the expected finish must be before the deadline and the expected cost within the budget
   left (the cap minus what the attempts so far cost).
Then by priority: critical takes the cheapest on-demand candidate (spot only when no
on-demand one passes); normal takes the cheapest candidate (spot usually, on-demand when
spot's interruption overhead or the deadline rules it out); opportunistic takes the cheapest
spot candidate or waits for the price to drop. When no candidate meets the deadline, a
non-opportunistic job takes the earliest finish within budget and says so; when none fits
the budget, the job stops.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Literal

from finops.gpubench.pricing import Job, Offer, expected_run
from finops.jobs.spec import JobSpec

Action = Literal["launch", "wait", "stop"]
_CENT = Decimal("0.0001")


@dataclass(frozen=True)
class Candidate:
    """One place the job could run: an instance type in a region at a pricing model."""

    provider: str
    region: str
    instance_type: str
    pricing_model: str  # "ondemand" | "spot"
    price_per_hour: Decimal
    gpu_count: int = 1
    gpu_model: str | None = None
    gpu_memory_gib: float | None = None  # per GPU
    step_ms: Mapping[str, float] = field(default_factory=dict)  # benchmark step time per precision
    interruption_rate_per_h: float | None = None  # spot only; None -> PlanSettings default

    @property
    def label(self) -> str:
        return f"{self.provider}/{self.region}/{self.instance_type} {self.pricing_model}"


@dataclass(frozen=True)
class JobState:
    """Progress so far: a fresh job is all zeros; a re-plan passes what the attempts did."""

    steps_done: int = 0
    spent_usd: Decimal = Decimal(0)
    spot_preemptions: int = 0
    # why spot is out for the rest of the job (the running attempt's pace missed the deadline)
    spot_blocked: str | None = None
    # candidate label -> why it is out (a capacity error when the executor asked for it)
    excluded: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PlanSettings:
    restart_overhead_h: float = 0.1  # boot, bootstrap, checkpoint download
    checkpoint_cost_h: float = 0.0  # per checkpoint written
    default_spot_rate_per_h: float = 0.05  # for spot candidates without a rate of their own


@dataclass(frozen=True)
class Row:
    """One line of the explanation table."""

    candidate: str
    precision: str
    expected_cost: Decimal | None
    expected_finish: datetime | None
    expected_hours: float | None
    chosen: bool
    why: str


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str
    rows: list[Row]
    candidate: Candidate | None = None
    precision: str | None = None
    expected_cost: Decimal | None = None
    expected_finish: datetime | None = None

    def table(self) -> str:
        """The explanation as fixed-width text for a task log."""
        head = ("candidate", "precision", "exp. cost $", "exp. finish (UTC)", "verdict")
        lines = [head]
        for r in self.rows:
            cost = (
                f"{r.expected_cost.quantize(Decimal('0.01'), ROUND_HALF_UP)}"
                if r.expected_cost is not None
                else "-"
            )
            finish = r.expected_finish.strftime("%Y-%m-%d %H:%M") if r.expected_finish else "-"
            verdict = ("CHOSEN: " if r.chosen else "rejected: ") + r.why
            lines.append((r.candidate, r.precision, cost, finish, verdict))
        widths = [max(len(line[i]) for line in lines) for i in range(4)]
        out = [f"{self.action.upper()}: {self.reason}"]
        out += [
            "  ".join(c.ljust(w) for c, w in zip(line[:4], widths, strict=True)) + "  " + line[4]
            for line in lines
        ]
        return "\n".join(out)


@dataclass
class _Eval:
    cand: Candidate
    precision: str
    cost: Decimal | None = None
    finish: datetime | None = None
    hours: float | None = None
    why: str = ""  # empty: eligible
    deadline_only: bool = False  # rejected for the deadline alone


def _step_ms(spec: JobSpec, cand: Candidate, precision: str) -> float | None:
    own = spec.step_profile.step_ms(cand.gpu_model, precision)
    if own is not None:
        return own
    bench = cand.step_ms.get(precision)
    if spec.step_profile.benchmark is None or bench is None or bench <= 0:
        return None
    return bench * spec.step_profile.benchmark_steps_per_step


def _checkpoint_interval_h(spec: JobSpec, step_ms: float, gpu_count: int) -> float:
    """Hours of work between checkpoints: the sooner of the minutes and the steps setting."""
    every = []
    if spec.checkpoint_every_minutes is not None:
        every.append(spec.checkpoint_every_minutes / 60.0)
    if spec.checkpoint_every_steps is not None:
        every.append(spec.checkpoint_every_steps * step_ms / 3_600_000.0 / max(gpu_count, 1))
    return min(every)


def cost_of(price: Decimal, hours: float) -> Decimal:
    """Dollars for `hours` at `price` per hour, to 1/100 of a cent (estimates, not invoices)."""
    return (Decimal(str(price)) * Decimal(repr(hours))).quantize(_CENT, ROUND_HALF_UP)


def _evaluate(
    spec: JobSpec,
    cand: Candidate,
    precision: str,
    now: datetime,
    state: JobState,
    settings: PlanSettings,
    remaining: int,
    budget_left: Decimal | None,
) -> _Eval:
    ev = _Eval(cand, precision)
    if cand.label in state.excluded:
        ev.why = state.excluded[cand.label]
        return ev
    if spec.clouds and cand.provider not in spec.clouds:
        ev.why = f"cloud {cand.provider} not in the spec's clouds"
        return ev
    if spec.regions and cand.region not in spec.regions:
        ev.why = f"region {cand.region} not in the spec's regions"
        return ev
    need = spec.memory_needed_gib(precision)
    if need > 0 and (cand.gpu_memory_gib is None or cand.gpu_memory_gib < need):
        has = "unknown" if cand.gpu_memory_gib is None else f"{cand.gpu_memory_gib:g} GiB"
        ev.why = f"needs {need:g} GiB GPU memory at {precision}, has {has}"
        return ev
    step = _step_ms(spec, cand, precision)
    if step is None:
        ev.why = f"no step time for {cand.gpu_model or 'this GPU'} at {precision}"
        return ev
    job = Job(
        steps=remaining,
        precision=precision,
        checkpoint_interval_h=_checkpoint_interval_h(spec, step, cand.gpu_count),
        restart_overhead_h=settings.restart_overhead_h,
        checkpoint_cost_h=settings.checkpoint_cost_h,
        spot_interruption_rate_per_h=settings.default_spot_rate_per_h,
    )
    offer = Offer(
        cand.provider,
        cand.region,
        cand.instance_type,
        cand.pricing_model,
        float(cand.price_per_hour),
        cand.gpu_count,
        {precision: step},
        cand.interruption_rate_per_h,
        cand.gpu_model,
    )
    ranked = expected_run(job, offer)
    if not ranked.feasible or ranked.expected_hours is None:
        ev.why = ranked.note
        return ev
    ev.hours = ranked.expected_hours
    ev.cost = cost_of(cand.price_per_hour, ranked.expected_hours)
    ev.finish = now + timedelta(hours=ranked.expected_hours)
    spot = cand.pricing_model == "spot"
    if spot and state.spot_blocked:
        ev.why = state.spot_blocked
    elif spot and state.spot_preemptions >= spec.max_spot_preemptions:
        ev.why = f"{state.spot_preemptions} spot preemptions reached the limit ({spec.max_spot_preemptions})"
    elif not spot and spec.priority == "opportunistic":
        ev.why = "opportunistic jobs run on spot only"
    elif budget_left is not None and ev.cost > budget_left:
        ev.why = f"expected ${ev.cost:.2f} exceeds the ${budget_left:.2f} budget left"
    elif spec.deadline is not None and ev.finish > spec.deadline:
        late = (ev.finish - spec.deadline).total_seconds() / 3600.0
        ev.why = f"finishes {late:.1f} h after the deadline"
        ev.deadline_only = True
    return ev


def _pick(spec: JobSpec, ok: list[_Eval]) -> tuple[_Eval | None, str]:
    def by_cost(e: _Eval) -> tuple[Decimal, float]:
        return (e.cost or Decimal(0), e.hours or 0.0)

    ondemand = sorted((e for e in ok if e.cand.pricing_model != "spot"), key=by_cost)
    spot = sorted((e for e in ok if e.cand.pricing_model == "spot"), key=by_cost)
    if spec.priority == "critical":
        if ondemand:
            return ondemand[0], "critical: the cheapest on-demand candidate"
        if spot:
            return spot[0], "critical: no on-demand candidate passes, the cheapest spot one"
        return None, ""
    if spec.priority == "opportunistic":
        return (spot[0], "opportunistic: the cheapest spot candidate") if spot else (None, "")
    best = sorted(ok, key=by_cost)
    return (best[0], "normal: the cheapest expected cost, interruptions included") if best else (None, "")


def plan(
    spec: JobSpec,
    candidates: Iterable[Candidate],
    now: datetime,
    state: JobState | None = None,
    settings: PlanSettings | None = None,
) -> Decision:
    """Decide where the job's remaining steps run (or that it waits / stops), with the table."""
    if now.tzinfo is None:
        raise ValueError("plan(): `now` must be timezone-aware (deadlines are)")
    state = state or JobState()
    settings = settings or PlanSettings()
    remaining = spec.steps - state.steps_done
    if remaining <= 0:
        return Decision("stop", f"all {spec.steps} steps are done", [])
    budget_left = None if spec.budget_usd is None else spec.budget_usd - state.spent_usd
    if budget_left is not None and budget_left <= 0:
        return Decision("stop", f"budget cap ${spec.budget_usd} reached (spent ${state.spent_usd})", [])
    evals = [
        _evaluate(spec, c, p, now, state, settings, remaining, budget_left)
        for c in candidates
        for p in spec.precisions
    ]
    ok = [e for e in evals if not e.why]
    chosen, reason = _pick(spec, ok)
    action: Action = "launch"
    if chosen is None:
        late = sorted((e for e in evals if e.deadline_only), key=lambda e: (e.finish, e.cost))
        if spec.priority == "opportunistic":
            action, reason = "wait", "no spot candidate passes; waiting for a lower price or more capacity"
        elif late:
            chosen, reason = late[0], "no candidate meets the deadline: the earliest finish within budget"
        elif any(e.cost is not None and "budget" in e.why for e in evals):
            action, reason = "stop", "no candidate can finish within the budget left"
        else:
            action, reason = "stop", "no candidate can run this job"
    rows = []
    for e in sorted(evals, key=lambda e: (e is not chosen, bool(e.why), e.cost or Decimal(0), e.cand.label)):
        why = e.why
        if e is chosen:
            why = reason
        elif not why and chosen is not None and chosen.cost is not None and e.cost is not None:
            why = (
                f"${e.cost - chosen.cost:.2f} more than the chosen candidate"
                if e.cost >= chosen.cost
                else ("passes, but the priority rule prefers the chosen pricing model")
            )
        rows.append(Row(e.cand.label, e.precision, e.cost, e.finish, e.hours, e is chosen, why))
    if chosen is None:
        return Decision(action, reason, rows)
    return Decision("launch", reason, rows, chosen.cand, chosen.precision, chosen.cost, chosen.finish)


def deadline_at_risk(
    spec: JobSpec, now: datetime, steps_done: int, observed_step_ms: float, restart_overhead_h: float = 0.0
) -> bool:
    """True when the steps left, at the step time the running attempt actually shows, end after
    the deadline: the executor then re-plans (which moves the job off spot)."""
    if spec.deadline is None:
        return False
    left_h = max(spec.steps - steps_done, 0) * observed_step_ms / 3_600_000.0 + restart_overhead_h
    return now + timedelta(hours=left_h) > spec.deadline

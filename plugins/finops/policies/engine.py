"""The enforcement flow: detect -> mark + notify owner -> (after grace) re-check -> act.

Safe by construction:
- `dry_run=True` by default: nothing is mutated (AWS still gets `DryRun=True` probes);
- the cap is checked on the whole plan BEFORE the first action; over it, nothing runs;
- a stop is re-decided at action time from a fresh describe + fresh metrics;
- a mark whose owner notice could not be delivered is lifted again (no unannounced grace);
- every decision (acted on or not) is written to `policy_actions`, failures included: a
  resource whose metrics cannot be read is audited as `no_metrics` with the error, the
  others are still decided (a busy one still unmarked), and the run fails afterwards.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from finops.alerts.events import AlertEvent, emit
from finops.policies import audit
from finops.policies.decide import Decision, Resource, check_tags, decide, format_mark, tag_value
from finops.policies.inventory.base import Actions, Inventory
from finops.policies.model import Policy, normalise_key
from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)
MUTATING = ("mark", "stop", "terminate")
_PRE_METRIC = ("out_of_scope", "exempt", "not_running", "too_young")


class CapExceeded(RuntimeError):
    """More actions planned than the policy allows: the run aborted before acting."""


class NoticeFailed(RuntimeError):
    """An owner notice reached no or not every channel: the audit row must not say `notified`."""


class PolicyRunError(RuntimeError):
    """Some metric reads or actions failed (each is audited); raised after all were attempted."""


@dataclass
class Cloud:
    inventory: Inventory
    actions: Actions


@dataclass
class Outcome:
    decision: Decision
    action: str
    result: str


@dataclass
class RunResult:
    run_id: str
    policy: str
    dry_run: bool
    outcomes: list[Outcome] = field(default_factory=list)
    planned: int = 0
    aborted: bool = False

    def count(self, action: str) -> int:
        return sum(1 for o in self.outcomes if o.action == action)


def _with_stored_mark(policy: Policy, cloud: Cloud, r: Resource, marks: dict[str, datetime]) -> Resource:
    """Clouds without tags (Lambda) keep marks in policy_marks; present them as the mark tag."""
    if cloud.actions.supports_tags:
        return r
    tags = {k: v for k, v in r.tags.items() if normalise_key(k) != normalise_key(policy.mark_tag)}
    if r.resource_id in marks:
        tags[policy.mark_tag] = format_mark(marks[r.resource_id])
    return replace(r, tags=tags)


def _decide(policy: Policy, cloud: Cloud, r: Resource, now: datetime) -> Decision:
    first = decide(policy, r, now)
    if policy.kind != "idle" or first.verdict in _PRE_METRIC:
        return first
    assert policy.idle is not None
    start = now - timedelta(hours=policy.idle.hours)
    return decide(policy, r, now, cloud.inventory.series(r, policy, start, now))


def _plan(policy: Policy, cloud: Cloud, r: Resource, now: datetime) -> tuple[Decision, str | None]:
    """One resource's decision. A metrics read that fails (throttled, 5xx) leaves it `no_metrics`,
    never idle, with the error: one resource's API failure must not hide every other decision."""
    try:
        return _decide(policy, cloud, r, now), None
    except Exception as e:  # noqa: BLE001 - audited as this resource's failure, the run fails after
        err = f"error: {type(e).__name__}: {e}"[:500]
        log.exception("policy %s: metrics of %s could not be read", policy.name, r.resource_id)
        d = decide(policy, r, now)  # no series: an idle policy reads no_metrics and never acts
        reason = f"metrics unavailable ({err}); never read as idle"
        return replace(d, reason=reason, evidence={**d.evidence, "metrics_error": err}), err


def _notify(policy: Policy, d: Decision, what: str, dry_run: bool, severity: str = "warning") -> list[str]:
    """Tell the owner (routed by the team tag); the delivery errors (empty: delivered). A dry
    run tells nobody: nothing happened."""
    r = d.resource
    if dry_run:
        log.info("dry run: would notify %s about %s (%s)", d.owner, r.resource_id, what)
        return []
    errors = emit(
        AlertEvent(
            kind="policy_notice",
            title=f"Policy {policy.name}: {what}",
            severity=severity,  # type: ignore[arg-type]
            team=tag_value(r.tags, ["team"]),
            summary=d.reason,
            facts={
                "policy": policy.name, "provider": r.provider, "account": r.account, "region": r.region,
                "resource_id": r.resource_id, "resource_name": r.name, "owner": d.owner or "(no owner tag)",
                "action": what, "grace_until": d.evidence.get("grace_until"),
            },
            dedup_key=f"policy:{policy.name}:{r.provider}:{r.resource_id}:{what}",
        )
    )
    return [f"{type(e).__name__}: {e}"[:200] for e in errors]


def _unmark(policy: Policy, cloud: Cloud, wh: Warehouse, r: Resource, dry_run: bool, run_id: str) -> str:
    if cloud.actions.supports_tags:
        return cloud.actions.unmark(r, policy.mark_tag, dry_run)
    if dry_run:
        return "dry_run: would unmark"
    audit.store_mark(wh, run_id, policy.name, r.provider, r.resource_id, None)
    return "unmarked"


def _lift_unannounced_mark(policy: Policy, cloud: Cloud, wh: Warehouse, r: Resource, run_id: str) -> str:
    """Undo a mark whose owner notice failed, so no grace period runs that nobody was told of
    (the next run marks and warns again). Read back first: the mark changed labels / tags."""
    try:
        return _unmark(policy, cloud, wh, cloud.inventory.refresh(r) or r, False, run_id)
    except Exception as e:  # noqa: BLE001 - reported in the audited error of the mark
        return f"not lifted ({type(e).__name__}: {e})"[:300]


def run_policy(
    policy: Policy,
    clouds: Cloud | Sequence[Cloud],
    wh: Warehouse,
    *,
    dry_run: bool = True,
    now: datetime | None = None,
    run_id: str | None = None,
    clock: Callable[[], datetime] | None = None,
) -> RunResult:
    """Run one policy over one or more cloud accounts. The cap counts the plan of ALL of them
    before anything is done. `clock` gives the action-time `now` used by the re-check."""
    now = now or datetime.now(UTC)
    clock = clock or (lambda: datetime.now(UTC))
    run_id = run_id or f"policy-{uuid.uuid4().hex[:12]}"
    res = RunResult(run_id, policy.name, dry_run)
    plans: list[tuple[Cloud, dict[str, datetime], list[tuple[Decision, str | None]]]] = []
    for cloud in [clouds] if isinstance(clouds, Cloud) else list(clouds):
        marks = {} if cloud.actions.supports_tags else audit.stored_marks(wh, policy.name, cloud.inventory.provider)
        resources = cloud.inventory.list_resources()
        plans.append((cloud, marks, [_plan(policy, cloud, _with_stored_mark(policy, cloud, r, marks), now) for r in resources]))
    decisions = [d for _, _, ds in plans for d, _ in ds]

    if policy.kind == "tags":
        snap = [(d, check_tags(policy, d.resource)) for d in decisions if d.verdict in ("compliant", "violation")]
        scopes = [(c.inventory.provider, *c.inventory.scope) for c, _, _ in plans]
        audit.record_tag_snapshot(wh, run_id, policy.name, now.astimezone(UTC).date(), snap, scopes)

    planned = [d for d in decisions if d.action in MUTATING]
    res.planned = len(planned)
    if len(planned) > policy.max_actions_per_run:
        res.aborted = True
        msg = f"aborted: {len(planned)} planned actions > cap {policy.max_actions_per_run}"
        for d in decisions:
            audit.record_action(wh, run_id, policy.kind, d, d.action, msg if d.action in MUTATING else "recorded", dry_run)
            res.outcomes.append(Outcome(d, d.action, msg))
        emit(AlertEvent(
            kind="policy_cap_exceeded", title=f"Policy {policy.name} aborted: action cap exceeded",
            severity="critical", summary=msg,
            facts={"policy": policy.name, "planned": len(planned), "cap": policy.max_actions_per_run, "run_id": run_id},
            dedup_key=f"policy-cap:{policy.name}",
        ))
        raise CapExceeded(f"policy {policy.name}: {msg}; nothing was changed")

    errors: list[str] = []
    for cloud, marks, ds in plans:
        for d, plan_error in ds:
            extra: dict[str, object] = {}
            if plan_error:
                result = plan_error
                errors.append(f"{d.resource.resource_id}: metrics {result}")
            else:
                try:
                    result, d, extra = _execute(policy, cloud, wh, d, dry_run, now, clock, run_id, marks)
                except Exception as e:  # noqa: BLE001 - audit the failure, try the rest, fail the run after
                    result = f"error: {type(e).__name__}: {e}"[:500]
                    errors.append(f"{d.resource.resource_id}: {result}")
                    log.exception("policy %s: action %s on %s failed", policy.name, d.action, d.resource.resource_id)
            audit.record_action(wh, run_id, policy.kind, d, d.action, result, dry_run, extra)
            res.outcomes.append(Outcome(d, d.action, result))
    if errors:
        raise PolicyRunError(f"policy {policy.name}: {len(errors)} metric read(s) or action(s) failed: {errors[:5]}")
    return res


def _execute(
    policy: Policy, cloud: Cloud, wh: Warehouse, d: Decision, dry_run: bool, now: datetime,
    clock: Callable[[], datetime], run_id: str, marks: dict[str, datetime],
) -> tuple[str, Decision, dict[str, object]]:
    r, acts = d.resource, cloud.actions
    if d.action in ("none", "report", "wait"):
        return ("waiting" if d.action == "wait" else "recorded"), d, {}
    if d.action == "notify":
        failed = _notify(policy, d, "violation notice", dry_run)
        if failed:
            raise NoticeFailed(f"violation notice not delivered: {'; '.join(failed)}")
        return "notified", d, {}
    if d.action == "mark":
        if acts.supports_tags:
            result = acts.mark(r, policy.mark_tag, format_mark(now), dry_run)
        elif dry_run:
            result = "dry_run: would mark"
        else:
            audit.store_mark(wh, run_id, policy.name, r.provider, r.resource_id, now)
            result = "marked"
        grace_until = (now + timedelta(hours=policy.grace_hours)).isoformat()
        d = replace(d, evidence={**d.evidence, "grace_until": grace_until})
        failed = _notify(policy, d, f"marked for {policy.action}", dry_run)
        if failed and not dry_run:
            lifted = _lift_unannounced_mark(policy, cloud, wh, r, run_id)
            raise NoticeFailed(f"{result}, but the owner notice was not delivered ({'; '.join(failed)}); "
                               f"mark lifted: {lifted}")
        return result, d, {}
    if d.action == "unmark":
        return _unmark(policy, cloud, wh, r, dry_run, run_id), d, {}
    # stop / terminate: decide again from what is true right now.
    fresh = cloud.inventory.refresh(r)
    if fresh is None:
        return "skipped: resource gone at re-check", d, {}
    again = _decide(policy, cloud, _with_stored_mark(policy, cloud, fresh, marks), clock())
    extra: dict[str, object] = {"recheck": {"verdict": again.verdict, "action": again.action, "reason": again.reason,
                                            "series": again.evidence.get("series")}}
    if again.action != d.action:
        if again.action == "unmark":
            extra["unmark_result"] = _execute(policy, cloud, wh, again, dry_run, now, clock, run_id, marks)[0]
        return f"prevented by re-check: {again.verdict}", d, extra
    result = acts.stop(fresh, dry_run)
    if not result.startswith(("denied", "refused")):
        what = "stopped" if policy.action == "stop" else "terminated"
        failed = _notify(policy, again, what, dry_run, "critical")
        if failed:
            raise NoticeFailed(f"{result}, but the {what} notice was not delivered: {'; '.join(failed)}")
    return result, d, extra

"""The enforcement flow: detect -> mark + notify owner -> (after grace) re-check -> act.

Safe by construction:
- `dry_run=True` by default: nothing is mutated (AWS still gets `DryRun=True` probes);
- the cap is checked on the whole plan BEFORE the first action; over it, nothing runs. The cap
  belongs to the warehouse, not to one run: runs of a policy that overlap in time share it
  (see "The cap" below);
- no action without its audit row: every decision of the plan is written to `policy_actions`
  in one transaction before anything is attempted (an action as `reserved`), and each action's
  row is committed as `pending` right before its cloud call, then updated to the outcome
  (`done` / `failed`, error text included). A row that cannot be written means the call is not
  made. A row left `pending` (the task was killed, or the warehouse went away between the call
  and its outcome) reads "outcome unknown"; the next run of the policy re-reads the resource
  and records what it finds, the row stays flagged `unknown` (see `_reconcile`);
- a stop is re-decided at action time from a fresh describe + fresh metrics;
- a mark whose owner notice could not be delivered is lifted again (no unannounced grace);
- every decision (acted on or not) is audited, failures included: a resource whose metrics
  cannot be read is audited as `no_metrics` with the error, the others are still decided (a
  busy one still unmarked), and the run fails afterwards.

The cap (`max_actions_per_run`): a run counts its own planned mark / stop / terminate actions
plus the live (not dry-run) ones reserved by every other run of the same policy that overlaps
it: a run that wrote to `policy_actions` after this run began (its start is read from the
warehouse's clock before the inventory is listed), or that left a row reserved / pending. Such
a run counts in full. Runs that ended before this one began do not count: each scheduled run
still gets the whole cap, as before; two runs at once (a manual trigger beside the schedule,
`finops_audit` beside `finops_policy_idle`) together stay within it. Dry runs count the same
way (they show whether a live run would abort) but never count against anybody.

Runs of one policy take the warehouse's lock on (policy_actions, policy) from the count to their
last outcome (`Warehouse.partition_lock`: in-process on DuckDB, whose file lock already keeps
other processes out; a PostgreSQL advisory lock, released if the session dies). So count and
reservation are one step, and a reserved / pending row seen by the lock holder belongs to a
run that is gone, which is what lets it be reconciled without racing a live run. Listing and
metric reads happen before the lock, in parallel; overlapping runs queue only to act, and the
later one's action-time re-check sees what the earlier one did.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from finops.alerts.events import AlertEvent, emit
from finops.exceptions import FinopsError
from finops.policies import audit
from finops.policies.decide import (
    Decision,
    Resource,
    check_tags,
    decide,
    format_mark,
    normalised_tags,
    tag_value,
)
from finops.policies.inventory.base import Actions, Inventory
from finops.policies.model import Policy, normalise_key
from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)
MUTATING = ("mark", "stop", "terminate")
_PRE_METRIC = ("out_of_scope", "exempt", "not_running", "too_young")
_NO_CALL = {"none": "recorded", "report": "recorded", "wait": "waiting"}


class CapExceeded(FinopsError, RuntimeError):
    """More actions planned than the policy allows: the run aborted before acting."""


class NoticeFailed(FinopsError, RuntimeError):
    """An owner notice reached no or not every channel: the audit row must not say `notified`."""


class PolicyRunError(FinopsError, RuntimeError):
    """Some metric reads or actions failed (each is audited); raised after all were attempted."""


class AuditUnavailable(FinopsError, RuntimeError):
    """The audit log could not be read or written before the first action: nothing was
    attempted, so the task may retry."""


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
class Reconciled:
    """A row an earlier run left unfinished, as this run settled it."""

    run_id: str
    resource_id: str
    action: str
    status: str  # audit.UNKNOWN | audit.NOT_ATTEMPTED
    result: str


@dataclass
class RunResult:
    run_id: str
    policy: str
    dry_run: bool
    outcomes: list[Outcome] = field(default_factory=list)
    planned: int = 0
    aborted: bool = False
    reconciled: list[Reconciled] = field(default_factory=list)
    others: dict[str, int] = field(default_factory=dict)  # overlapping runs' counted actions

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
                "policy": policy.name,
                "provider": r.provider,
                "account": r.account,
                "region": r.region,
                "resource_id": r.resource_id,
                "resource_name": r.name,
                "owner": d.owner or "(no owner tag)",
                "action": what,
                "grace_until": d.evidence.get("grace_until"),
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


@contextmanager
def _acting_lock(wh: Warehouse, policy: Policy) -> Iterator[None]:
    """The warehouse's lock on this policy's actions (see "The cap" above), held from the count
    to the last outcome. Released with the session if the process dies (PostgreSQL)."""
    lock = wh.partition_lock("policy_actions", {"policy": policy.name})
    try:
        lock.__enter__()
    except Exception as e:
        raise AuditUnavailable(
            f"policy {policy.name}: the policy_actions lock could not be taken "
            f"({type(e).__name__}: {e}); nothing was attempted"
        ) from e
    try:
        yield
    finally:
        try:
            lock.__exit__(None, None, None)
        except Exception:  # noqa: BLE001 - a dead session released it already; keep the real error
            log.warning("policy %s: releasing the policy_actions lock failed", policy.name, exc_info=True)


def _cloud_of(
    clouds: Sequence[Cloud], provider: str, account: str | None, region: str | None
) -> Cloud | None:
    for c in clouds:
        acct, reg = c.inventory.scope
        if c.inventory.provider == provider and acct == account and reg in (None, region):
            return c
    return None


def _observe(policy: Policy, clouds: Sequence[Cloud], wh: Warehouse, u: audit.Unfinished) -> dict[str, Any]:
    """What the resource of an unfinished row looks like now (the best a later run can say)."""
    cloud = _cloud_of(clouds, u.provider, u.account, u.region)
    if cloud is None:
        return {"error": f"no target of this run covers {u.provider} {u.account} {u.region}"}
    r = Resource(u.provider, u.account or "", u.region or "", u.resource_id, name=u.resource_name or "")
    try:
        fresh = cloud.inventory.refresh(r)
    except Exception as e:  # noqa: BLE001 - the row stays flagged with the reason it was not re-read
        return {"error": f"{type(e).__name__}: {e}"[:300]}
    if fresh is None:
        return {"state": "gone"}
    if cloud.actions.supports_tags:
        marked = normalise_key(policy.mark_tag) in normalised_tags(fresh.tags)
    else:
        marked = fresh.resource_id in audit.stored_marks(wh, policy.name, fresh.provider)
    return {"state": fresh.state, "marked": marked}


def _reconcile(policy: Policy, clouds: Sequence[Cloud], wh: Warehouse, run_id: str) -> list[Reconciled]:
    """Settle the rows earlier runs of this policy left unfinished. Called under the policy's
    lock, so their runs are gone. `reserved`: never attempted (the pending row is committed
    before any call) -> not_attempted. `pending`: the call may or may not have happened ->
    unknown, with the resource as re-read now (state, mark) or why it could not be."""
    out: list[Reconciled] = []
    for u in audit.unfinished(wh, policy.name):
        at = audit.db_now(wh).isoformat(timespec="seconds")
        note: dict[str, Any] = {"by_run": run_id, "at": at, "found": u.status}
        if u.status == audit.RESERVED:
            status = audit.NOT_ATTEMPTED
            result = f"not attempted: run {u.run_id} ended before this {u.action}"
        else:
            status, seen = audit.UNKNOWN, _observe(policy, clouds, wh, u)
            note.update(seen)
            if "error" in seen:
                now_ = f"not re-read ({seen['error']})"
            elif seen["state"] == "gone":
                now_ = f"re-read by run {run_id} at {at}: the resource is gone"
            else:
                now_ = (
                    f"re-read by run {run_id} at {at}: state {seen['state']}, "
                    f"mark {'present' if seen['marked'] else 'absent'}"
                )
            result = (
                f"outcome unknown: run {u.run_id} attempted the {u.action} and recorded no outcome; {now_}"
            )
        result = result[:500]
        audit.settle(wh, u.action_id, status, result, {**u.evidence, "reconciled": note}, by_owner=False)
        log.warning(
            "policy %s: %s %s left %s by run %s -> %s",
            policy.name,
            u.action,
            u.resource_id,
            u.status,
            u.run_id,
            result,
        )
        out.append(Reconciled(u.run_id, u.resource_id, u.action, status, result))
    unknown = [r for r in out if r.status == audit.UNKNOWN]
    if unknown:  # an action may have happened that nobody recorded: tell someone, not only the log
        emit(
            AlertEvent(
                kind="policy_outcome_unknown",
                severity="critical",
                title=f"Policy {policy.name}: {len(unknown)} action(s) with no recorded outcome",
                summary="; ".join(f"{r.resource_id}: {r.result}" for r in unknown)[:2000],
                facts={
                    "policy": policy.name,
                    "resources": ", ".join(r.resource_id for r in unknown),
                    "runs": ", ".join(sorted({r.run_id for r in unknown})),
                    "found_by_run": run_id,
                },
                dedup_key=f"policy-outcome-unknown:{policy.name}:{run_id}",
            )
        )
    return out


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
    """Run one policy over one or more cloud accounts. The cap counts the plan of ALL of them,
    plus what overlapping runs of the policy did, before anything is done. `clock` gives the
    action-time `now` used by the re-check."""
    now = now or datetime.now(UTC)
    clock = clock or (lambda: datetime.now(UTC))
    run_id = run_id or f"policy-{uuid.uuid4().hex[:12]}"
    try:
        started = audit.db_now(wh)  # the cap's window opens before anything is listed
    except Exception as e:
        raise AuditUnavailable(
            f"policy {policy.name}: the warehouse cannot be read ({type(e).__name__}: {e}); "
            "nothing was attempted"
        ) from e
    res = RunResult(run_id, policy.name, dry_run)
    cloud_list = [clouds] if isinstance(clouds, Cloud) else list(clouds)
    plans: list[tuple[Cloud, dict[str, datetime], list[tuple[Decision, str | None]]]] = []
    for cloud in cloud_list:
        marks = (
            {}
            if cloud.actions.supports_tags
            else audit.stored_marks(wh, policy.name, cloud.inventory.provider)
        )
        resources = cloud.inventory.list_resources()
        plans.append(
            (
                cloud,
                marks,
                [_plan(policy, cloud, _with_stored_mark(policy, cloud, r, marks), now) for r in resources],
            )
        )
    decisions = [d for _, _, ds in plans for d, _ in ds]

    if policy.kind == "tags":
        snap = [
            (d, check_tags(policy, d.resource)) for d in decisions if d.verdict in ("compliant", "violation")
        ]
        scopes = [(c.inventory.provider, *c.inventory.scope) for c, _, _ in plans]
        audit.record_tag_snapshot(wh, run_id, policy.name, now.astimezone(UTC).date(), snap, scopes)

    planned = [d for d in decisions if d.action in MUTATING]
    res.planned = len(planned)
    with _acting_lock(wh, policy):
        try:
            res.reconciled = _reconcile(policy, cloud_list, wh, run_id)
            res.others = audit.overlapping_actions(wh, policy.name, started, MUTATING)
            if len(planned) + sum(res.others.values()) > policy.max_actions_per_run:
                _abort(policy, wh, res, decisions)
            steps = [(cloud, marks, d, err) for cloud, marks, ds in plans for d, err in ds]
            entries = [_first_entry(d, err) for _, _, d, err in steps]
            ids = audit.write_rows(wh, run_id, policy.kind, entries, dry_run)
        except CapExceeded:
            raise
        except Exception as e:
            raise AuditUnavailable(
                f"policy {policy.name}: the audit log cannot be written "
                f"({type(e).__name__}: {e}); nothing was attempted"
            ) from e
        errors = [f"{d.resource.resource_id}: metrics {err}" for _, _, d, err in steps if err]
        for (cloud, marks, d, _), aid, entry in zip(steps, ids, entries, strict=True):
            if entry.status != audit.RESERVED:
                res.outcomes.append(Outcome(d, d.action, entry.result))
                continue
            d, result = _attempt(
                policy, cloud, wh, d, aid, dry_run, now, clock, run_id, marks, errors, started
            )
            res.outcomes.append(Outcome(d, d.action, result))
    if errors:
        raise PolicyRunError(
            f"policy {policy.name}: {len(errors)} metric read(s) or action(s) failed: {errors[:5]}"
        )
    return res


def _first_entry(d: Decision, plan_error: str | None) -> audit.Entry:
    """A decision's row as written with the plan: final when it calls nothing, else reserved."""
    if plan_error:
        return audit.Entry(d, plan_error, audit.FAILED)
    if d.action in _NO_CALL:
        return audit.Entry(d, _NO_CALL[d.action], audit.RECORDED)
    return audit.Entry(d, f"reserved: {d.action} not attempted yet", audit.RESERVED)


def _abort(policy: Policy, wh: Warehouse, res: RunResult, decisions: list[Decision]) -> None:
    cap, others = policy.max_actions_per_run, res.others
    res.aborted = True
    msg = f"aborted: {res.planned} planned actions > cap {cap}"
    if others:
        runs = ", ".join(f"{r}: {n}" for r, n in others.items())
        msg = (
            f"aborted: {res.planned} planned actions + {sum(others.values())} by overlapping runs of this "
            f"policy ({runs}) > cap {cap}"
        )
    entries = [audit.Entry(d, msg if d.action in MUTATING else "recorded", audit.RECORDED) for d in decisions]
    audit.write_rows(wh, res.run_id, policy.kind, entries, res.dry_run)
    res.outcomes += [Outcome(d, d.action, msg) for d in decisions]
    emit(
        AlertEvent(
            kind="policy_cap_exceeded",
            title=f"Policy {policy.name} aborted: action cap exceeded",
            severity="critical",
            summary=msg,
            facts={
                "policy": policy.name,
                "planned": res.planned,
                "cap": cap,
                "run_id": res.run_id,
                **({"overlapping_runs": others} if others else {}),
            },
            dedup_key=f"policy-cap:{policy.name}",
        )
    )
    raise CapExceeded(f"policy {policy.name}: {msg}; nothing was changed")


def _attempt(
    policy: Policy,
    cloud: Cloud,
    wh: Warehouse,
    d: Decision,
    aid: str,
    dry_run: bool,
    now: datetime,
    clock: Callable[[], datetime],
    run_id: str,
    marks: dict[str, datetime],
    errors: list[str],
    started: datetime | None = None,
) -> tuple[Decision, str]:
    """One reserved action: pending (committed) -> the call -> its outcome. No pending row, no call."""
    rid = d.resource.resource_id
    try:
        audit.begin(wh, aid, d.action)
    except Exception as e:  # noqa: BLE001 - not attempted; the row stays reserved for the next run
        result = f"not attempted: its audit row could not be written ({type(e).__name__}: {e})"[:500]
        errors.append(f"{rid}: {result}")
        log.error("policy %s: %s on %s %s", policy.name, d.action, rid, result)
        return d, result
    status = audit.DONE
    extra: dict[str, Any] = {}
    try:
        by = _done_by_overlapping_run(policy, wh, d, run_id, started)
        if by:
            result = by
        else:
            result, d, extra = _execute(policy, cloud, wh, d, dry_run, now, clock, run_id, marks)
    except Exception as e:  # noqa: BLE001 - audit the failure, try the rest, fail the run after
        status, result = audit.FAILED, f"error: {type(e).__name__}: {e}"[:500]
        errors.append(f"{rid}: {result}")
        log.exception("policy %s: action %s on %s failed", policy.name, d.action, rid)
    try:
        audit.settle(wh, aid, status, result, {**d.evidence, **extra})
    except Exception as e:  # noqa: BLE001 - the row stays pending: outcome unknown until reconciled
        errors.append(
            f"{rid}: {d.action} outcome {result!r} not recorded ({type(e).__name__}: {e}); "
            "its audit row stays pending (outcome unknown)"
        )
        log.error(
            "policy %s: %s on %s returned %r but the outcome could not be recorded (%s: %s); "
            "policy_actions row %s stays pending",
            policy.name,
            d.action,
            rid,
            result,
            type(e).__name__,
            e,
            aid,
        )
    return d, result


def _done_by_overlapping_run(
    policy: Policy, wh: Warehouse, d: Decision, run_id: str, started: datetime | None
) -> str | None:
    """A mark or notice another run of this policy already made since this run began. Both runs
    planned from listings taken before either acted (the lock orders only the acting), so the
    later one would mark again (restarting the grace period) and warn the owner twice."""
    if started is None or d.action not in ("mark", "notify"):
        return None
    r = d.resource
    other = audit.done_since(wh, policy.name, r.provider, r.resource_id, d.action, started, run_id)
    if other is None:
        return None
    log.info(
        "policy %s: %s of %s already done by overlapping run %s", policy.name, d.action, r.resource_id, other
    )
    return f"skipped: the {d.action} was already made by overlapping run {other} (no second notice)"[:500]


def _execute(
    policy: Policy,
    cloud: Cloud,
    wh: Warehouse,
    d: Decision,
    dry_run: bool,
    now: datetime,
    clock: Callable[[], datetime],
    run_id: str,
    marks: dict[str, datetime],
) -> tuple[str, Decision, dict[str, object]]:
    """One action's calls (never a decision that calls nothing: those are final when planned)."""
    r, acts = d.resource, cloud.actions
    if d.action == "notify":
        what = "violation notice"
        failed = _notify(policy, d, what, dry_run)
        if failed:
            raise NoticeFailed(f"{what} not delivered: {'; '.join(failed)}")
        return (f"dry_run: would send {what}" if dry_run else f"sent: {what}"), d, {}
    if d.action == "mark":
        if acts.supports_tags:
            result = acts.mark(r, policy.mark_tag, format_mark(now), dry_run)
        elif dry_run:
            result = "dry_run: would mark"
        else:
            audit.store_mark(wh, run_id, policy.name, r.provider, r.resource_id, now)
            result = "marked"
        if result.startswith(("denied", "refused")):
            # nothing was marked, so no grace period runs: telling the owner it does (on every
            # run while IAM refuses, e.g. an instance not opted in) would be a false warning
            return result, d, {}
        grace_until = (now + timedelta(hours=policy.grace_hours)).isoformat()
        d = replace(d, evidence={**d.evidence, "grace_until": grace_until})
        failed = _notify(policy, d, f"marked for {policy.action}", dry_run)
        if failed and not dry_run:
            lifted = _lift_unannounced_mark(policy, cloud, wh, r, run_id)
            raise NoticeFailed(
                f"{result}, but the owner notice was not delivered ({'; '.join(failed)}); "
                f"mark lifted: {lifted}"
            )
        return _with_notice(result, dry_run), d, {}
    if d.action == "unmark":
        return _unmark(policy, cloud, wh, r, dry_run, run_id), d, {}
    # stop / terminate: decide again from what is true right now.
    fresh = cloud.inventory.refresh(r)
    if fresh is None:
        return "skipped: resource gone at re-check", d, {}
    again = _decide(policy, cloud, _with_stored_mark(policy, cloud, fresh, marks), clock())
    extra: dict[str, object] = {
        "recheck": {
            "verdict": again.verdict,
            "action": again.action,
            "reason": again.reason,
            "series": again.evidence.get("series"),
        }
    }
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
        result = _with_notice(result, dry_run)
    return result, d, extra


def _with_notice(result: str, dry_run: bool) -> str:
    """The action's own answer plus what became of the owner notice that goes with it: a dry run
    sends nothing, so its row must not read as if the owner had been told (audit.outcome_of)."""
    return f"{result}; {audit.NOTICE_WOULD_SEND if dry_run else audit.NOTICE_SENT}"

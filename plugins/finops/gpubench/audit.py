"""Every launch / terminate / reap decision -> `policy_actions` (the shared audit log, created
by migration 200). Same columns as finops.policies.audit; policy = 'gpu-benchmark'.

A cloud call's row is written BEFORE the call (`intent`: status `pending`, result "outcome
unknown") and settled after it (`settle`: `done` / `failed`). A task killed between the two
leaves the row pending; the next try of the same step re-reads the instances by tag and
settles it (`reconcile`), so every call is on record exactly once and never reads as more
than is known: `unknown` when the instance is gone or ending (the call may have done it),
`not_attempted` when it is untouched (the call did not take effect; the retry makes it anew,
with a row of its own), `done` for a launch whose instance exists."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from finops.policies.audit import DONE as DONE
from finops.policies.audit import FAILED as FAILED
from finops.policies.audit import NOT_ATTEMPTED as NOT_ATTEMPTED
from finops.policies.audit import PENDING as PENDING
from finops.policies.audit import POLICY_ACTION_COLUMNS as _COLS
from finops.policies.audit import UNKNOWN as UNKNOWN
from finops.policies.audit import outcome_unknown
from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)
POLICY = "gpu-benchmark"


def record(
    wh: Warehouse | None,
    *,
    run_id: str,
    provider: str,
    region: str | None,
    resource_id: str,
    action: str,
    result: str,
    dry_run: bool,
    reason: str = "",
    kind: str = "benchmark",
    evidence: dict[str, Any] | None = None,
    status: str | None = None,
) -> str:
    """Append one audit row. action: launch | terminate | reap; result: dry_run | ok | failed | ...
    `status` defaults to what the result says (`failed` for a failure, else `done`)."""
    aid = uuid.uuid4().hex
    status = status or (FAILED if result == "failed" else DONE)
    at = datetime.now(UTC).replace(tzinfo=None)
    row = (
        aid,
        run_id,
        POLICY,
        kind,
        provider,
        None,
        region,
        resource_id,
        None,
        None,
        action,
        action,
        result,
        reason,
        dry_run,
        json.dumps(evidence or {}, default=str),
        at,
        status,
        at,
    )
    log.info(
        "audit %s %s %s/%s -> %s (dry_run=%s) %s",
        kind,
        action,
        provider,
        resource_id,
        result,
        dry_run,
        reason,
    )
    if wh is not None:
        wh.execute(
            f"INSERT INTO policy_actions ({', '.join(_COLS)}) VALUES ({', '.join('?' for _ in _COLS)})", row
        )
    return aid


def intent(
    wh: Warehouse | None,
    *,
    run_id: str,
    provider: str,
    region: str | None,
    resource_id: str,
    action: str,
    reason: str = "",
    kind: str = "benchmark",
    evidence: dict[str, Any] | None = None,
) -> str:
    """The row of a live call about to be made, committed first: `pending`, outcome unknown."""
    return record(
        wh,
        run_id=run_id,
        provider=provider,
        region=region,
        resource_id=resource_id,
        action=action,
        result=outcome_unknown(action),
        dry_run=False,
        reason=reason,
        kind=kind,
        evidence=evidence,
        status=PENDING,
    )


def settle(
    wh: Warehouse | None,
    action_id: str,
    result: str,
    *,
    status: str | None = None,
    reason: str | None = None,
    evidence: dict[str, Any] | None = None,
) -> None:
    """The call's outcome, on the row `intent` wrote."""
    if wh is None:
        return
    status = status or (FAILED if result == "failed" else DONE)
    sets, params = (
        ["status = ?", "result = ?", "updated_at = ?"],
        [status, result, datetime.now(UTC).replace(tzinfo=None)],
    )
    if reason is not None:
        sets.append("reason = ?")
        params.append(reason[:1000])
    if evidence is not None:
        sets.append("evidence = ?")
        params.append(json.dumps(evidence, default=str))
    wh.execute(f"UPDATE policy_actions SET {', '.join(sets)} WHERE action_id = ?", [*params, action_id])


@dataclass(frozen=True)
class Pending:
    """A row a killed try left `pending`."""

    action_id: str
    run_id: str
    provider: str
    region: str | None
    resource_id: str
    action: str
    evidence: dict[str, Any]


def pending(
    wh: Warehouse | None, action: str, run_id: str | None = None, bench_run_id: str | None = None
) -> list[Pending]:
    """Pending rows of one action (of one DAG run, of one bench run when given)."""
    if wh is None:
        return []
    sql = (
        "SELECT action_id, run_id, provider, region, resource_id, action, evidence FROM policy_actions "
        "WHERE policy = ? AND action = ? AND status = ?"
    )
    params: list[Any] = [POLICY, action, PENDING]
    if run_id is not None:
        sql += " AND run_id = ?"
        params.append(run_id)
    out = []
    for aid, rid, provider, region, res, act, ev in wh.query(sql + " ORDER BY created_at, action_id", params):
        evidence = json.loads(ev) if ev else {}
        if bench_run_id is None or evidence.get("bench_run_id") == bench_run_id or res == bench_run_id:
            out.append(Pending(aid, rid, provider, region, res, act, evidence))
    return out


def reconcile(
    wh: Warehouse | None, rows: Sequence[Pending], observe: Callable[[Pending], str | None], by_run: str
) -> list[tuple[Pending, str, str]]:
    """Settle rows a killed try left pending. `observe` re-reads the resource now: None when it is
    gone, else the cloud's state word ('error: ...' when it could not be read). A launch whose
    instance exists happened (done); a terminate / reap whose instance is gone or ending may have
    been this call or the instance's own TTL power-off (unknown); an untouched instance means the
    call did not take effect (not_attempted: the retry makes it again, on a row of its own).
    Returns (row, status, result) per row."""
    from finops.gpubench.launchers.base import ENDING

    out = []
    for p in rows:
        try:
            seen = observe(p)
        except Exception as e:  # noqa: BLE001 - an unreadable resource stays unknown, said so
            seen = f"error: {type(e).__name__}: {e}"
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        head = (
            f"run {p.run_id} attempted the {p.action} and was killed before recording its outcome; "
            f"re-read by {by_run} at {now}: "
        )
        if seen is not None and seen.startswith("error:"):
            status, result = UNKNOWN, f"outcome unknown: {head}not readable ({seen[7:]})"
        elif p.action == "launch":
            if seen is None:
                status, result = NOT_ATTEMPTED, f"not attempted: {head}no instance of the bench run exists"
            else:
                status, result = DONE, "ok"
        elif seen is None or seen in ENDING:
            status, result = UNKNOWN, f"outcome unknown: {head}{'gone' if seen is None else seen}"
        else:
            status, result = NOT_ATTEMPTED, f"not attempted: {head}still {seen}, the call took no effect"
        reason = f"launched (found by {by_run}: {seen})" if result == "ok" else None
        settle(
            wh,
            p.action_id,
            result[:500],
            status=status,
            reason=reason,
            evidence={**p.evidence, "reconciled": {"by_run": by_run, "at": now, "seen": seen}},
        )
        log.warning(
            "benchmark %s of %s left pending by %s -> %s: %s",
            p.action,
            p.resource_id,
            p.run_id,
            status,
            result,
        )
        out.append((p, status, result))
    return out

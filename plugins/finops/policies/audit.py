"""Audit writers: every decision and action -> `policy_actions`; tag snapshots -> `tag_compliance`.

An action's row is written BEFORE the cloud is called, and updated to the outcome after
(migration 201): `reserved` with the plan, `pending` (committed) right before the call, then
`done` / `failed`. A row still `pending` means the call may have happened and nobody recorded
what it did: it reads "outcome unknown" wherever the result is shown, and the next run of the
policy settles it (engine._reconcile). Values are always bound parameters (tag values and names are
hostile input)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from finops.policies.decide import Decision, TagCheck
from finops.warehouse.base import Warehouse

# the columns of one policy_actions row, in table order (the benchmark's audit writes the same rows)
POLICY_ACTION_COLUMNS = (
    "action_id",
    "run_id",
    "policy",
    "policy_kind",
    "provider",
    "account",
    "region",
    "resource_id",
    "resource_name",
    "owner",
    "decision",
    "action",
    "result",
    "reason",
    "dry_run",
    "evidence",
    "created_at",
    "status",
    "updated_at",
)

# The life of a row (policy_actions.status).
RECORDED = "recorded"  # a decision that calls nothing (none / report / wait, an aborted plan)
RESERVED = "reserved"  # an action planned and counted against the cap, not attempted yet
PENDING = "pending"  # being attempted: the call may have happened, its outcome is not recorded
DONE = "done"  # the call returned; `result` says what it answered
FAILED = "failed"  # the action (or the metric read deciding it) raised; `result` holds the error
UNKNOWN = "unknown"  # a later run found it pending: the run died between the call and its outcome
NOT_ATTEMPTED = "not_attempted"  # a later run found it reserved: the run ended before calling
UNFINISHED = (RESERVED, PENDING)

# What became of the owner notice that goes with a mark / stop (appended to the action's result).
NOTICE_SENT = "owner notice sent"
NOTICE_WOULD_SEND = "owner notice would be sent (dry run: nothing sent)"
# Rows that hold a reservation: they count against the cap of every run they overlap.
COUNTED = (RESERVED, PENDING, DONE, FAILED, UNKNOWN)
_DB_NOW = "CAST(current_timestamp AS TIMESTAMP)"  # the warehouse's clock, UTC (both backends)


def outcome_unknown(action: str) -> str:
    """The result a row carries while its call is in flight, and keeps if nobody records more."""
    return f"outcome unknown: {action} was being attempted; no outcome recorded"


def outcome_of(status: str, result: str, dry_run: bool) -> str:
    """What a row says happened, in one word: `done` (the call was made, the notice sent),
    `would` (a dry run: nothing sent, nothing changed), `refused` (the cloud said no), `failed`
    (the call or the notice raised), `unknown` (the call may have happened, nobody recorded what
    it did), `not_attempted`, `skipped` (gone or busy again at the action-time re-check),
    `recorded` (a decision that calls nothing), `reserved`. `untruthful` is a row whose words
    contradict its mode (a dry run claiming an effect, a live row claiming a dry run): never
    written, and the fault-injection suite checks every row for it."""
    if status in (PENDING, UNKNOWN):
        return "unknown"
    if status in (RECORDED, RESERVED, NOT_ATTEMPTED, FAILED):
        return status
    if result.startswith(("denied", "refused")):
        return "refused"
    if result.startswith(("skipped", "prevented")):
        return "skipped"
    if result.startswith("dry_run:") or result == "dry_run":  # the benchmark audit's bare word
        return "would" if dry_run else "untruthful"
    return "untruthful" if dry_run else "done"


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def db_now(wh: Warehouse) -> datetime:
    """The warehouse's clock (naive UTC). Runs on different workers compare their audit times
    (the cap's overlap window), so they are taken from one clock, not each worker's own."""
    return wh.query(f"SELECT {_DB_NOW}")[0][0]


@dataclass(frozen=True)
class Entry:
    """One decision's row as first written."""

    decision: Decision
    result: str
    status: str


def write_rows(wh: Warehouse, run_id: str, kind: str, entries: Sequence[Entry], dry_run: bool) -> list[str]:
    """Every row in ONE insert (one transaction on both backends): a run's plan is on record in
    full before any of it is attempted, or not at all. Returns the action ids, in order."""
    import pyarrow as pa

    if not entries:
        return []
    at = db_now(wh)
    ids = [uuid.uuid4().hex for _ in entries]
    cols: dict[str, list[Any]] = {c: [] for c in POLICY_ACTION_COLUMNS}
    for aid, e in zip(ids, entries, strict=True):
        d, r = e.decision, e.decision.resource
        values = (
            aid,
            run_id,
            d.policy,
            kind,
            r.provider,
            r.account,
            r.region,
            r.resource_id,
            r.name,
            d.owner,
            d.verdict,
            d.action,
            e.result,
            d.reason,
            dry_run,
            json.dumps(d.evidence, default=str),
            at,
            e.status,
            at,
        )
        for c, v in zip(POLICY_ACTION_COLUMNS, values, strict=True):
            cols[c].append(v)
    types = {"dry_run": pa.bool_(), "created_at": pa.timestamp("us"), "updated_at": pa.timestamp("us")}
    wh.insert_arrow(
        "policy_actions", pa.table({c: pa.array(v, types.get(c, pa.string())) for c, v in cols.items()})
    )
    return ids


def begin(wh: Warehouse, action_id: str, action: str) -> None:
    """reserved -> pending, committed before the call is made. Raises when the row could not be
    moved (warehouse down, no privilege, row gone): then the call must not be made."""
    moved = wh.query(
        f"UPDATE policy_actions SET status = ?, result = ?, updated_at = {_DB_NOW} "
        "WHERE action_id = ? AND status = ? RETURNING action_id",
        [PENDING, outcome_unknown(action), action_id, RESERVED],
    )
    if len(moved) != 1:
        raise RuntimeError(f"policy_actions row {action_id} is not reserved any more; not attempting")


def settle(
    wh: Warehouse,
    action_id: str,
    status: str,
    result: str,
    evidence: dict[str, Any],
    *,
    by_owner: bool = True,
) -> None:
    """Record an outcome. `updated_at` is the owning run's last write (the cap's overlap window
    reads it), so a later run settling a dead run's row (`by_owner=False`) leaves it."""
    stamp = f", updated_at = {_DB_NOW}" if by_owner else ""
    wh.execute(
        f"UPDATE policy_actions SET status = ?, result = ?, evidence = ?{stamp} WHERE action_id = ?",
        [status, result, json.dumps(evidence, default=str), action_id],
    )


@dataclass(frozen=True)
class Unfinished:
    """A row its run left reserved or pending."""

    action_id: str
    run_id: str
    provider: str
    account: str | None
    region: str | None
    resource_id: str
    resource_name: str | None
    action: str
    status: str
    evidence: dict[str, Any]


def unfinished(wh: Warehouse, policy: str) -> list[Unfinished]:
    rows = wh.query(
        "SELECT action_id, run_id, provider, account, region, resource_id, resource_name, action, status, evidence "
        f"FROM policy_actions WHERE policy = ? AND status IN ({', '.join('?' for _ in UNFINISHED)}) "
        "ORDER BY created_at, action_id",
        [policy, *UNFINISHED],
    )
    out = []
    for aid, run_id, provider, account, region, rid, name, action, status, evidence in rows:
        ev = json.loads(evidence) if evidence else {}
        out.append(Unfinished(aid, run_id, provider, account, region, rid, name, action, status, ev))
    return out


def overlapping_actions(
    wh: Warehouse, policy: str, since: datetime, mutating: Sequence[str]
) -> dict[str, int]:
    """Live (not dry-run) reserved actions of `policy` per run, for every run that overlaps a run
    started at `since`: one that wrote to the log at or after it, or still has a row reserved or
    pending. Such a run counts in full, its earlier actions too."""
    acts = ", ".join("?" for _ in mutating)
    counted = ", ".join("?" for _ in COUNTED)
    unfinished_ = ", ".join("?" for _ in UNFINISHED)
    rows = wh.query(
        f"SELECT run_id, count(*) FROM policy_actions WHERE policy = ? AND dry_run = FALSE "
        f"AND action IN ({acts}) AND status IN ({counted}) AND run_id IN ("
        f"  SELECT run_id FROM policy_actions WHERE policy = ? AND (updated_at >= ? OR status IN ({unfinished_}))"
        ") GROUP BY run_id ORDER BY run_id",
        [policy, *mutating, *COUNTED, policy, since, *UNFINISHED],
    )
    return {str(run): int(n) for run, n in rows}


def done_since(
    wh: Warehouse, policy: str, provider: str, resource_id: str, action: str, since: datetime, run_id: str
) -> str | None:
    """The run (not `run_id`) whose live `action` on the resource was made, or may have been
    (outcome unknown), at or after `since`; None when there is none."""
    rows = wh.query(
        "SELECT run_id FROM policy_actions WHERE policy = ? AND provider = ? AND resource_id = ? AND action = ? "
        "AND dry_run = FALSE AND run_id <> ? AND updated_at >= ? AND status IN (?, ?, ?) "
        "AND result NOT LIKE 'denied%' AND result NOT LIKE 'refused%' AND result NOT LIKE 'skipped%' "
        "ORDER BY updated_at DESC LIMIT 1",
        [policy, provider, resource_id, action, run_id, since, DONE, PENDING, UNKNOWN],
    )
    return str(rows[0][0]) if rows else None


def record_tag_snapshot(
    wh: Warehouse,
    run_id: str,
    policy: str,
    snapshot: date,
    rows: Iterable[tuple[Decision, TagCheck]],
    scopes: Iterable[tuple[str, str, str | None]] = (),
) -> int:
    """Replace today's snapshot rows of this policy (re-runs are idempotent). `scopes`: the
    (provider, account, region or None for account-wide) this run listed in full; their rows
    go first, so a resource gone since an earlier run today leaves no stale row (nor its cost
    in the violations report). Rows outside them are replaced resource by resource."""
    for provider, account, region in scopes:
        where = "snapshot_date = ? AND policy = ? AND provider = ? AND account = ?"
        params: list[object] = [snapshot, policy, provider, account]
        if region is not None:
            where += " AND region = ?"
            params.append(region)
        wh.execute(f"DELETE FROM tag_compliance WHERE {where}", params)
    n = 0
    for d, tc in rows:
        r = d.resource
        wh.execute(
            "DELETE FROM tag_compliance WHERE snapshot_date = ? AND policy = ? AND provider = ? AND resource_id = ?",
            (snapshot, policy, r.provider, r.resource_id),
        )
        wh.execute(
            "INSERT INTO tag_compliance (snapshot_date, policy, provider, account, region, resource_id, "
            "resource_name, team, missing_tags, invalid_tags, compliant, run_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                snapshot,
                policy,
                r.provider,
                r.account,
                r.region,
                r.resource_id,
                r.name,
                tc.team,
                json.dumps(tc.missing),
                json.dumps(tc.invalid),
                tc.compliant,
                run_id,
                _now(),
            ),
        )
        n += 1
    return n


def stored_marks(wh: Warehouse, policy: str, provider: str) -> dict[str, datetime]:
    rows = wh.query(
        "SELECT resource_id, marked_at FROM policy_marks WHERE policy = ? AND provider = ?",
        (policy, provider),
    )
    return {rid: (ts if ts.tzinfo else ts.replace(tzinfo=UTC)) for rid, ts in rows}


def store_mark(
    wh: Warehouse, run_id: str, policy: str, provider: str, resource_id: str, at: datetime | None
) -> None:
    wh.execute(
        "DELETE FROM policy_marks WHERE policy = ? AND provider = ? AND resource_id = ?",
        (policy, provider, resource_id),
    )
    if at is not None:
        wh.execute(
            "INSERT INTO policy_marks (policy, provider, resource_id, marked_at, run_id) VALUES (?, ?, ?, ?, ?)",
            (policy, provider, resource_id, at.astimezone(UTC).replace(tzinfo=None), run_id),
        )

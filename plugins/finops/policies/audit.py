"""Audit writers: every decision and action -> `policy_actions`; tag snapshots -> `tag_compliance`.

Values are always bound parameters (tag values and names are hostile input)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Any

from finops.policies.decide import Decision, TagCheck
from finops.warehouse.base import Warehouse

_PA_COLS = (
    "action_id", "run_id", "policy", "policy_kind", "provider", "account", "region", "resource_id",
    "resource_name", "owner", "decision", "action", "result", "reason", "dry_run", "evidence", "created_at",
)


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def record_action(
    wh: Warehouse, run_id: str, kind: str, d: Decision, action: str, result: str, dry_run: bool,
    extra: dict[str, Any] | None = None,
) -> str:
    r = d.resource
    aid = uuid.uuid4().hex
    evidence = json.dumps({**d.evidence, **(extra or {})}, default=str)
    row = (
        aid, run_id, d.policy, kind, r.provider, r.account, r.region, r.resource_id, r.name, d.owner,
        d.verdict, action, result, d.reason, dry_run, evidence, _now(),
    )
    wh.execute(
        f"INSERT INTO policy_actions ({', '.join(_PA_COLS)}) VALUES ({', '.join('?' for _ in _PA_COLS)})", row
    )
    return aid


def record_tag_snapshot(
    wh: Warehouse, run_id: str, policy: str, snapshot: date, rows: Iterable[tuple[Decision, TagCheck]],
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
                snapshot, policy, r.provider, r.account, r.region, r.resource_id, r.name, tc.team,
                json.dumps(tc.missing), json.dumps(tc.invalid), tc.compliant, run_id, _now(),
            ),
        )
        n += 1
    return n


def stored_marks(wh: Warehouse, policy: str, provider: str) -> dict[str, datetime]:
    rows = wh.query("SELECT resource_id, marked_at FROM policy_marks WHERE policy = ? AND provider = ?", (policy, provider))
    return {rid: (ts if ts.tzinfo else ts.replace(tzinfo=UTC)) for rid, ts in rows}


def store_mark(wh: Warehouse, run_id: str, policy: str, provider: str, resource_id: str, at: datetime | None) -> None:
    wh.execute(
        "DELETE FROM policy_marks WHERE policy = ? AND provider = ? AND resource_id = ?", (policy, provider, resource_id)
    )
    if at is not None:
        wh.execute(
            "INSERT INTO policy_marks (policy, provider, resource_id, marked_at, run_id) VALUES (?, ?, ?, ?, ?)",
            (policy, provider, resource_id, at.astimezone(UTC).replace(tzinfo=None), run_id),
        )

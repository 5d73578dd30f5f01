"""Every launch / terminate / reap decision -> `policy_actions` (the shared audit log, created
by migration 200). Same columns as finops.policies.audit; policy = 'gpu-benchmark'."""

from __future__ import annotations

import json
import logging
import uuid
from datetime import UTC, datetime
from typing import Any

from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)
POLICY = "gpu-benchmark"
_COLS = ("action_id", "run_id", "policy", "policy_kind", "provider", "account", "region", "resource_id",
         "resource_name", "owner", "decision", "action", "result", "reason", "dry_run", "evidence", "created_at")


def record(wh: Warehouse | None, *, run_id: str, provider: str, region: str | None, resource_id: str,
           action: str, result: str, dry_run: bool, reason: str = "", kind: str = "benchmark",
           evidence: dict[str, Any] | None = None) -> str:
    """Append one audit row. action: launch | terminate | reap; result: dry_run | ok | failed | ..."""
    aid = uuid.uuid4().hex
    row = (aid, run_id, POLICY, kind, provider, None, region, resource_id, None, None, action, action, result,
           reason, dry_run, json.dumps(evidence or {}, default=str), datetime.now(UTC).replace(tzinfo=None))
    log.info("audit %s %s %s/%s -> %s (dry_run=%s) %s", kind, action, provider, resource_id, result, dry_run, reason)
    if wh is not None:
        wh.execute(f"INSERT INTO policy_actions ({', '.join(_COLS)}) VALUES ({', '.join('?' for _ in _COLS)})", row)
    return aid

"""Delivery ledger (alert_state): a (dedup_key, channel) pair is delivered once, across runs
and processes, so a re-run or a retry of a task never repeats an alert in the same place."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from finops.warehouse.base import Warehouse


class AlertLedger:
    def __init__(self, wh: Warehouse):
        self.wh = wh

    def sent(self, dedup_key: str, channel: str) -> bool:
        return bool(self.wh.query("SELECT 1 FROM alert_state WHERE dedup_key = ? AND channel = ?", [dedup_key, channel]))

    def record(self, dedup_key: str, channel: str) -> None:
        now = datetime.now(UTC).replace(tzinfo=None)
        if self.sent(dedup_key, channel):
            self.wh.execute(
                "UPDATE alert_state SET last_sent_at = ?, send_count = send_count + 1 WHERE dedup_key = ? AND channel = ?",
                [now, dedup_key, channel],
            )
        else:
            self.wh.execute(
                "INSERT INTO alert_state (dedup_key, channel, first_sent_at, last_sent_at, send_count) "
                "VALUES (?, ?, ?, ?, 1)", [dedup_key, channel, now, now],
            )

"""Delivery ledger (alert_state): a (dedup_key, channel) pair is delivered once, across runs
and processes, so a re-run or a retry of a task never repeats an alert in the same place.

A sender CLAIMS the pair before it delivers (an INSERT ... ON CONFLICT DO NOTHING, or an
UPDATE of a claimable row, both under the warehouse's partition lock of that pair): of two
tasks emitting the same key at the same moment, one sends and the other waits for its
outcome, where checking "sent already?" and recording afterwards let both send. A delivery
that raises releases its claim (status 'failed': the next emitter sends); a sender that dies
between claim and outcome leaves a claim that another may take over after `lease`, so an
alert is never lost (at worst, a sender frozen longer than the lease is repeated)."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from finops.exceptions import FinopsError

if TYPE_CHECKING:
    from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)

LEASE = timedelta(minutes=10)  # far above one delivery (Slack: 3 waits of <= 30 s after a 429; SMTP timeouts)


class AlertInFlight(FinopsError, RuntimeError):
    """Another sender holds the claim and did not finish within the wait: not confirmed as
    delivered, so the caller must treat it as pending (retry later), never as sent."""


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class AlertLedger:
    def __init__(self, wh: Warehouse, *, lease: timedelta = LEASE, wait_s: float = 60.0, poll_s: float = 0.2):
        self.wh = wh
        self.lease = lease
        self.wait_s = wait_s
        self.poll_s = poll_s

    def deliver_once(
        self, dedup_key: str, channel: str, send: Callable[[], None], *, resend_run: str | None = None
    ) -> bool:
        """Call `send` unless the pair was delivered already; True when it was sent now, False
        when it had been. While another sender holds the pair, wait (up to wait_s) for its
        outcome: delivered -> False; released -> claim and send; still in flight -> AlertInFlight.
        If `send` raises, the claim is released and the error propagates.

        resend_run: someone asked for it again (a report's "Send again"): deliver even if it was
        delivered before, once for that run id, so a retry of that run does not send it twice."""
        deadline = time.monotonic() + self.wait_s
        while (claim := self._claim(dedup_key, channel, resend_run)) is None:
            if self._status(dedup_key, channel) == "sent":
                return False
            if time.monotonic() >= deadline:
                raise AlertInFlight(
                    f"{dedup_key} -> {channel}: another sender holds it (claimed less than "
                    f"{self.lease} ago) and has not finished; not confirmed as delivered"
                )
            time.sleep(self.poll_s)
        try:
            send()
        except BaseException:
            self._finish(dedup_key, channel, claim, delivered=False)
            raise
        self._finish(dedup_key, channel, claim, delivered=True, resend_run=resend_run)
        return True

    # -- the claim ---------------------------------------------------------------------
    def _lock(self, dedup_key: str, channel: str):
        # DuckDB: threads of one process share the file, and two transactions writing one row
        # conflict (an error, not a wait); PostgreSQL: the statements below are atomic on their
        # own, the advisory lock only queues them
        return self.wh.partition_lock("alert_state", {"dedup_key": dedup_key, "channel": channel})

    def _claim(self, dedup_key: str, channel: str, resend_run: str | None) -> str | None:
        """A claim id when this sender now holds the pair, else None (delivered, or held)."""
        claim, now = uuid.uuid4().hex, _now()
        with self._lock(dedup_key, channel):
            if self.wh.query(
                "INSERT INTO alert_state (dedup_key, channel, status, claim_id, claimed_at, send_count) "
                "VALUES (?, ?, 'sending', ?, ?, 0) ON CONFLICT DO NOTHING RETURNING claim_id",
                [dedup_key, channel, claim, now],
            ):
                return claim
            # a failed attempt, a sender presumed dead, or (asked for again) a delivery of another run
            again, params = "", [claim, now, dedup_key, channel, now - self.lease]
            if resend_run is not None:
                again, params = (
                    " OR (status = 'sent' AND COALESCE(resend_run, '') <> ?)",
                    [*params, resend_run],
                )
            took = self.wh.query(
                "UPDATE alert_state SET status = 'sending', claim_id = ?, claimed_at = ? "
                "WHERE dedup_key = ? AND channel = ? AND (status = 'failed' OR (status = 'sending' AND claimed_at < ?)"
                f"{again}) RETURNING claim_id",
                params,
            )
        return claim if took else None

    def _status(self, dedup_key: str, channel: str) -> str | None:
        rows = self.wh.query(
            "SELECT status FROM alert_state WHERE dedup_key = ? AND channel = ?", [dedup_key, channel]
        )
        return rows[0][0] if rows else None

    def _finish(
        self, dedup_key: str, channel: str, claim: str, *, delivered: bool, resend_run: str | None = None
    ) -> None:
        now = _now()
        if delivered:
            sql = (
                "UPDATE alert_state SET status = 'sent', claim_id = NULL, send_count = send_count + 1, "
                "first_sent_at = COALESCE(first_sent_at, ?), last_sent_at = ?, resend_run = COALESCE(?, resend_run) "
            )
            params: list = [now, now, resend_run]
        else:  # delivered before (a resend that failed): still 'sent'; never delivered: the next emitter sends
            sql = (
                "UPDATE alert_state SET status = CASE WHEN send_count > 0 THEN 'sent' ELSE 'failed' END, "
                "claim_id = NULL, claimed_at = ? "
            )
            params = [now]
        try:
            with self._lock(dedup_key, channel):
                kept = self.wh.query(
                    sql + "WHERE dedup_key = ? AND channel = ? AND claim_id = ? RETURNING 1",
                    [*params, dedup_key, channel, claim],
                )
        except Exception as e:  # noqa: BLE001 - the claim expires after the lease: the alert is not lost
            if not delivered:
                log.error(
                    "alert %s -> %s: releasing the claim failed (%s); another sender takes it over after %s",
                    dedup_key,
                    channel,
                    e,
                    self.lease,
                )
                return
            raise
        if not kept:
            log.warning(
                "alert %s -> %s: the claim was taken over (this delivery outlived the %s lease); "
                "it may have been delivered twice",
                dedup_key,
                channel,
                self.lease,
            )

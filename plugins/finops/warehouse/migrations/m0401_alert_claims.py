"""alert_state rows become claims (finops.alerts.dedup): a sender claims (dedup_key, channel)
BEFORE it delivers, so two tasks emitting the same key at once cannot both send.

status: 'sending' (claimed by claim_id at claimed_at, delivery in flight), 'sent' (delivered
send_count times; resend_run: the run that last asked for it again), 'failed' (the last
attempt failed and nothing was ever delivered: the next emitter sends). A claim that was
never delivered has no sent times, so those columns may be NULL now. Rows written before
this migration were all deliveries."""

from __future__ import annotations

VERSION = 401
DESCRIPTION = "alert_state: delivery claims (status, claim_id, claimed_at, resend_run)"


def statements(dialect: str) -> list[str]:
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    return [
        f"ALTER TABLE alert_state ADD COLUMN status {text} DEFAULT 'sent'",
        f"ALTER TABLE alert_state ADD COLUMN claim_id {text}",
        "ALTER TABLE alert_state ADD COLUMN claimed_at TIMESTAMP",
        f"ALTER TABLE alert_state ADD COLUMN resend_run {text}",
        "ALTER TABLE alert_state ALTER COLUMN first_sent_at DROP NOT NULL",
        "ALTER TABLE alert_state ALTER COLUMN last_sent_at DROP NOT NULL",
    ]

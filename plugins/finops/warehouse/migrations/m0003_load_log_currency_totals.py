"""load_log.billed_by_currency: the FOCUS and raw billed totals per currency of each load.

A delivery may mix currencies (an Azure MCA billing account with profiles billed in EUR and
USD); its scalar totals then add them up. Each currency is also reconciled on its own."""

from __future__ import annotations

VERSION = 3
DESCRIPTION = "load_log.billed_by_currency (per-currency FOCUS / raw totals)"


def statements(dialect: str) -> list[str]:
    js = "JSON" if dialect == "duckdb" else "JSONB"
    return [f"ALTER TABLE load_log ADD COLUMN IF NOT EXISTS billed_by_currency {js}"]

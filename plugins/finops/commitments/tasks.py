"""Task bodies of finops_commitments (kept out of dags/ and the builder so those only wire).
Each opens the warehouse itself and returns a small JSON-able summary for XCom."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any


def periods_for(today: date, history_days: int) -> list[str]:
    """The billing months touched by the last `history_days` days up to today."""
    first = today - timedelta(days=history_days)
    out, d = [], date(first.year, first.month, 1)
    while d <= today:
        out.append(f"{d:%Y-%m}")
        d = (d + timedelta(days=32)).replace(day=1)
    return out


def run_refresh_task(today: date) -> dict[str, Any]:
    from finops.allocation.settings import allocation_rules
    from finops.commitments.settings import commitments_settings
    from finops.commitments.store import refresh_period
    from finops.warehouse import connect

    settings = commitments_settings()
    rules = allocation_rules()
    wh = connect()
    try:
        return {
            p: refresh_period(wh, p, settings, rules).__dict__
            for p in periods_for(today, settings.history_days)
        }
    finally:
        wh.close()


def run_end_dates_task() -> dict[str, Any]:
    """Commitment end dates from the configured provider APIs (commitments.end_date_sources).
    A refused or failing source is recorded in the result and the log, not raised: the
    calendar then runs on the dates the inventory already holds (finops.yaml, CUR, last fetch)."""
    from finops.commitments.settings import commitments_settings
    from finops.commitments.sources import fetch_end_dates
    from finops.warehouse import connect

    settings = commitments_settings()
    if not settings.end_date_sources:
        return {"stored": {}, "failed": {}}
    wh = connect()
    try:
        res = fetch_end_dates(wh, settings)
        return {"stored": res.stored, "failed": res.failed}
    finally:
        wh.close()


def run_calendar_task(today: date, send_alerts: bool = True) -> dict[str, Any]:
    from finops.alerts.dedup import AlertLedger
    from finops.alerts.events import clear_sinks, emit
    from finops.alerts.routing import register_configured_sinks
    from finops.commitments.settings import commitments_settings
    from finops.commitments.store import calendar, expiry_events
    from finops.warehouse import connect

    settings = commitments_settings()
    wh = connect()
    try:
        entries = calendar(wh, settings, today)
        events = expiry_events(entries, settings, today)
        errors: list[str] = []
        if send_alerts:
            clear_sinks()
            register_configured_sinks(ledger=AlertLedger(wh))
            for e in events:
                errors += [str(x) for x in emit(e)]
        if errors:
            raise RuntimeError(
                f"{len(errors)} commitment alert deliveries failed (retried next run): {errors[:3]}"
            )
        return {
            "commitments": len(entries),
            "alerts": [e.dedup_key for e in events],
            "ending_within_30d": [e.commitment.commitment_id for e in entries if 0 <= e.days_left <= 30],
        }
    finally:
        if send_alerts:
            clear_sinks()
        wh.close()


def parse_what_if(params: dict[str, Any]) -> Any:
    """The DAG's "what if we buy X" Params -> WhatIf, or None when no amount is given."""
    from finops.commitments.settings import DEFAULT_DISCOUNTS
    from finops.commitments.store import WhatIf

    raw = str(params.get("what_if_hourly") or "").strip()
    if not raw:
        return None
    try:
        amount = Decimal(raw)
    except InvalidOperation:
        raise ValueError(f"what_if_hourly {raw!r}: a number of $/h, e.g. 12.5") from None
    provider, product = str(params.get("what_if_provider") or ""), str(params.get("what_if_product") or "")
    if product not in DEFAULT_DISCOUNTS.get(provider, {}):
        known = ", ".join(f"{p}/{x}" for p, xs in DEFAULT_DISCOUNTS.items() for x in xs)
        raise ValueError(f"what_if {provider}/{product}: unknown (one of {known})")
    if amount < 0:
        raise ValueError(f"what_if_hourly {amount}: must be >= 0")
    return WhatIf(provider, product, amount, str(params.get("what_if_scope") or "all"))


def run_advice_task(today: date, run_id: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    from finops.commitments.advice import DISCLAIMER
    from finops.commitments.settings import commitments_settings
    from finops.commitments.store import purchase_advice, store_advice
    from finops.warehouse import connect

    settings = commitments_settings()
    what_if = parse_what_if(params or {})
    wh = connect()
    try:
        res = purchase_advice(wh, settings, today, what_if)
        n = store_advice(wh, run_id, res.advice, what_if is not None)
        top = [
            {
                "provider": a.offer.provider,
                "product": a.offer.product,
                "scope": a.scope,
                "term_years": a.offer.term_years,
                "payment": a.offer.payment,
                "discount": str(a.offer.discount),
                "rate_source": a.offer.rate_source,
                "commitment_hourly": str(a.commitment_hourly.quantize(Decimal("0.001"))),
                "expected_savings_term": str(a.expected_savings_term.quantize(Decimal("0.01"))),
                "drop_savings_term": str(a.drop_savings_term.quantize(Decimal("0.01"))),
            }
            for a in res.advice[:5]
        ]
        from finops.commitments.capacity import block_row

        blocks = [block_row(region, b) for region, b in res.capacity_blocks]
        return {
            "stored": n,
            "top": top,
            "capacity_blocks": blocks,
            "skipped": res.skipped,
            "note": DISCLAIMER,
        }
    finally:
        wh.close()

"""JSON endpoints of the Commitments page (GET only): utilisation per commitment, coverage per
provider / account / team / family, the expiry calendar and the latest purchase advice, all
from the tables finops_commitments writes. Advice only: the view buys nothing."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from finops.commitments.advice import DISCLAIMER
from finops.ui.api import Period, ReaderDep
from finops.ui.db import Reader
from finops.ui.queries import _iso, empty, money

router = APIRouter(prefix="/api/commitments")
_TABLES = ("commitment_utilisation", "commitment_coverage")


def _ratio(num: Any, den: Any) -> str | None:
    n, d = Decimal(num or 0), Decimal(den or 0)
    return None if d == 0 else str((n / d).quantize(Decimal("0.0001")))


def _period(r: Reader, period: str | None) -> str | None:
    if period:
        return period
    rows = r.query("SELECT MAX(billing_period) FROM commitment_utilisation")
    return rows[0][0] if rows else None


@router.get("/utilisation")
def utilisation(r: ReaderDep, period: Period = None) -> dict[str, Any]:
    """Per commitment over the month: used, unused, utilisation, covered usage at list price
    and net savings (list value covered minus what the commitment cost)."""
    if r.missing(*_TABLES):
        return empty("finops_commitments has not run yet.")
    p = _period(r, period)
    items = []
    for prov, cid, ctype, cur, used, unused, listed in r.query(
        "SELECT provider, commitment_id, MAX(commitment_type), currency, SUM(used_cost), SUM(unused_cost), "
        "SUM(covered_list) FROM commitment_utilisation WHERE billing_period = ? "
        "GROUP BY provider, commitment_id, currency ORDER BY provider, commitment_id",
        [p],
    ):
        total = Decimal(used) + Decimal(unused)
        items.append({
            "provider": prov, "commitment_id": cid, "commitment_type": ctype, "currency": cur,
            "used": money(used), "unused": money(unused), "utilisation": _ratio(used, total),
            "covered_list": money(listed), "net_savings": money(Decimal(listed) - total),
        })  # fmt: skip
    return {"period": p, "items": items}


@router.get("/coverage")
def coverage(
    r: ReaderDep, period: Period = None, by: Literal["provider", "account", "team", "family"] = "provider"
) -> dict[str, Any]:
    """Covered vs on-demand-eligible spend (list price) and unused commitment, grouped."""
    if r.missing(*_TABLES):
        return empty("finops_commitments has not run yet.")
    p = _period(r, period)
    col = {"provider": "provider", "account": "account", "team": "team", "family": "family"}[by]
    items = [
        {"provider": prov, "key": key, "currency": cur, "covered_list": money(c), "eligible_list": money(e),
         "coverage": _ratio(c, Decimal(c) + Decimal(e)), "unused": money(u)}
        for prov, key, cur, c, e, u in r.query(
            f"SELECT provider, {col}, currency, SUM(covered_list), SUM(eligible_list), SUM(unused_cost) "
            f"FROM commitment_coverage WHERE billing_period = ? GROUP BY provider, {col}, currency "
            "ORDER BY provider, 2",
            [p],
        )
    ]  # fmt: skip
    return {"period": p, "by": by, "items": items}


@router.get("/calendar")
def calendar(r: ReaderDep, within_days: Annotated[int, Query(ge=1, le=3660)] = 400) -> dict[str, Any]:
    """Commitments ending within `within_days`, soonest first, with what they cover."""
    if r.missing("commitment_inventory"):
        return empty("No commitment end dates known yet.")
    today = datetime.now(UTC).date()
    items = []
    for prov, cid, start, end, ctype, desc, term, pay in r.query(
        "SELECT provider, commitment_id, start_date, end_date, commitment_type, description, term, payment_option "
        "FROM commitment_inventory WHERE end_date >= ? ORDER BY end_date, provider, commitment_id",
        [today],
    ):
        end_d = end if isinstance(end, date) else date.fromisoformat(str(end)[:10])
        left = (end_d - today).days
        if left <= within_days:
            items.append({
                "provider": prov, "commitment_id": cid, "start": _iso(start), "end": _iso(end_d), "days_left": left,
                "commitment_type": ctype, "covers": desc, "term": term, "payment_option": pay,
            })  # fmt: skip
    return {"items": items}


@router.get("/advice")
def advice(r: ReaderDep, what_if: bool = False) -> dict[str, Any]:
    """The latest run's purchase advice (or its "what if" run), best expected savings first."""
    if r.missing("commitment_advice"):
        return empty("No purchase advice yet.", note=DISCLAIMER)
    latest = r.query("SELECT MAX(computed_at) FROM commitment_advice WHERE what_if = ?", [what_if])
    if not latest or latest[0][0] is None:
        return empty("No purchase advice yet.", note=DISCLAIMER)
    cols = (
        "provider, product, scope, term_years, payment, discount, rate_source, currency, commitment_hourly, "
        "covers_on_demand_hourly, upfront, monthly_recurring, expected_utilisation, expected_savings_monthly, "
        "expected_savings_term, break_even_utilisation, break_even_months, drop_share, drop_utilisation, "
        "drop_savings_term"
    )
    names = [c.strip() for c in cols.split(",")]
    moneyish = {"commitment_hourly", "covers_on_demand_hourly", "upfront", "monthly_recurring",
                "expected_savings_monthly", "expected_savings_term", "drop_savings_term"}  # fmt: skip
    items = []
    for row in r.query(
        f"SELECT {cols} FROM commitment_advice WHERE computed_at = ? AND what_if = ? "
        "ORDER BY expected_savings_term DESC, provider, product, scope, term_years, payment",
        [latest[0][0], what_if],
    ):
        item = dict(zip(names, row, strict=True))
        for k, v in item.items():
            if k in moneyish:
                item[k] = money(v)
            elif isinstance(v, Decimal):
                item[k] = str(v.normalize())
        items.append(item)
    return {"computed_at": _iso(latest[0][0]), "what_if": what_if, "note": DISCLAIMER, "items": items}


@router.get("/capacity-blocks")
def capacity_block_offerings(r: ReaderDep) -> dict[str, Any]:
    """AWS Capacity Block offerings the price jobs described, priced against the latest on-demand
    price of the same instance type and region. Described only: nothing is purchased."""
    from finops.commitments.capacity import block_row, stored_capacity_blocks

    if r.missing("capacity_block_offerings"):
        return empty("No Capacity Block offerings fetched.", note=DISCLAIMER)
    items = [block_row(region, b) for region, b in stored_capacity_blocks(r.warehouse)]
    return {"note": DISCLAIMER, "items": items}

"""Reconciliation to the cent: the FOCUS BilledCost total must equal the raw export's total.

Exact Decimal arithmetic only: a float never touches money here.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def to_cents(amount: Decimal) -> Decimal:
    if not isinstance(amount, Decimal) or isinstance(amount, bool):
        raise TypeError(f"money must be Decimal, got {type(amount).__name__}")
    if not amount.is_finite():
        raise ValueError(f"money must be finite, got {amount}")
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def reconcile(focus_billed_total: Decimal, raw_billed_total: Decimal) -> str | None:
    """None when both totals round (half up) to the same cent, else the failure message."""
    focus, raw = to_cents(focus_billed_total), to_cents(raw_billed_total)
    if focus == raw:
        return None
    return (
        f"billed_cost: reconciliation failed: FOCUS total {focus} != raw export total {raw} "
        f"(difference {focus - raw})"
    )


def currencies_of(*totals: Mapping[str | None, Decimal]) -> list[str | None]:
    """Every currency in the per-currency totals, in a stable order (rows with none last)."""
    return sorted(set().union(*totals), key=lambda c: (c is None, c or ""))


def reconcile_by_currency(
    focus_by_currency: Mapping[str | None, Decimal], raw_by_currency: Mapping[str | None, Decimal]
) -> list[str]:
    """One failure per currency whose FOCUS and raw totals differ at the cent.

    Only when the batch holds more than one currency: with one, the overall reconciliation is
    the same check. With several, the overall one adds EUR to USD and can balance a move of
    money from one currency to another; this cannot."""
    currencies = currencies_of(focus_by_currency, raw_by_currency)
    if len(currencies) <= 1:
        return []
    out = []
    for c in currencies:
        focus = to_cents(focus_by_currency.get(c, Decimal(0)))
        raw = to_cents(raw_by_currency.get(c, Decimal(0)))
        if focus != raw:
            name = "(no currency)" if c is None else repr(c[:16])
            out.append(
                f"billed_cost: reconciliation failed in {name}: FOCUS total {focus} != raw export total {raw} "
                f"(difference {focus - raw})"
            )
    return out

"""Reconciliation to the cent: the FOCUS BilledCost total must equal the raw export's total.

Exact Decimal arithmetic only: a float never touches money here.
"""

from __future__ import annotations

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

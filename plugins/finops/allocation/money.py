"""Exact money splitting: the largest-remainder (Hamilton) method on Decimal.

Every split returns parts whose sum is EXACTLY the amount (no cent created or lost). The
leftover quanta go to the largest fractional remainders; ties break by key order, so the
same input always gives the same output.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

WAREHOUSE_QUANTUM = Decimal("0.0000000001")  # DECIMAL(38,10)
CENT = Decimal("0.01")


def from_units(units: int, quantum: Decimal) -> Decimal:
    """Exact inverse of to_units (Decimal construction never rounds, arithmetic might)."""
    q = quantum.as_tuple()
    if q.digits != (1,):
        return Decimal(units) * quantum
    return Decimal(f"{units}E{q.exponent}")


def to_units(amount: Decimal, quantum: Decimal) -> int:
    """Amount as a whole number of quanta; refuses amounts finer than the quantum."""
    units = Fraction(amount) / Fraction(quantum)
    if units.denominator != 1:
        raise ValueError(f"{amount} is not a multiple of {quantum}")
    return units.numerator


def split(
    amount: Decimal, weights: Mapping[str, Decimal], quantum: Decimal = WAREHOUSE_QUANTUM
) -> dict[str, Decimal]:
    """Split `amount` over keys by non-negative weights (largest remainder). Zero total weight
    -> even split. Negative amounts (credits) split the same way, mirrored."""
    if not weights:
        raise ValueError("cannot split over no keys")
    keys = sorted(weights)
    w = [Decimal(weights[k]) for k in keys]
    if any(x < 0 for x in w):
        raise ValueError("weights must be >= 0")
    total_w = sum(w, Decimal(0))
    if total_w == 0:
        w = [Decimal(1)] * len(keys)
        total_w = Decimal(len(keys))
    units = to_units(amount, quantum)
    sign = -1 if units < 0 else 1
    units = abs(units)
    floors: list[int] = []
    rema: list[Fraction] = []
    tw = Fraction(total_w)
    for x in w:
        exact = Fraction(units) * Fraction(x) / tw  # exact rational arithmetic: no precision limit
        f = exact.numerator // exact.denominator
        floors.append(f)
        rema.append(exact - f)
    left = units - sum(floors)
    order = sorted(range(len(keys)), key=lambda i: (-rema[i], keys[i]))
    for i in order[:left]:
        floors[i] += 1
    return {k: from_units(sign * f, quantum) for k, f in zip(keys, floors, strict=True)}


def round_total_preserving(values: Mapping[str, Decimal], quantum: Decimal = CENT) -> dict[str, Decimal]:
    """Round each value to `quantum` so the rounded parts sum to the rounded total (largest
    remainder): an invoice in cents whose lines add up to the invoice total."""
    if not values:
        return {}
    keys = sorted(values)
    total = sum((values[k] for k in keys), Decimal(0)).quantize(quantum, rounding=ROUND_HALF_EVEN)
    q = Fraction(quantum)
    exact = {k: Fraction(values[k]) / q for k in keys}
    floors = {k: exact[k].numerator // exact[k].denominator for k in keys}
    rema = {k: exact[k] - floors[k] for k in keys}
    left = int(Fraction(total) / q) - sum(floors.values())
    order = sorted(keys, key=lambda k: (-rema[k], k))
    out = {k: floors[k] for k in keys}
    if left >= 0:
        for k in order[:left]:
            out[k] += 1
    else:  # can only happen through half-even rounding of the total
        for k in list(reversed(order))[:-left]:
            out[k] -= 1
    return {k: from_units(out[k], quantum) for k in keys}

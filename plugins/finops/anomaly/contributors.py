"""Root cause: which resources / SKUs / usage types carry an anomaly's jump, with their share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

ZERO = Decimal(0)


@dataclass(frozen=True)
class Contributor:
    key: str
    actual: Decimal
    expected: Decimal
    delta: Decimal
    share: float  # of the sum of positive deltas (0..1)

    def as_dict(self) -> dict[str, str | float]:
        return {
            "key": self.key,
            "actual": str(self.actual),
            "expected": str(self.expected),
            "delta": str(self.delta),
            "share": round(self.share, 4),
        }


def contributors(
    actual: Mapping[str, Decimal], expected: Mapping[str, Decimal], top: int = 5, min_share: float = 0.01
) -> list[Contributor]:
    """Keys ranked by how much they rose (actual - expected), ties by key; only rises count."""
    keys = set(actual) | set(expected)
    deltas = {k: Decimal(actual.get(k, ZERO)) - Decimal(expected.get(k, ZERO)) for k in keys}
    rise = sum((d for d in deltas.values() if d > 0), ZERO)
    if rise <= 0:
        return []
    ranked = sorted((k for k in keys if deltas[k] > 0), key=lambda k: (-deltas[k], k))
    out = []
    for k in ranked[:top]:
        share = float(deltas[k] / rise)
        if share < min_share:
            break
        out.append(
            Contributor(k, Decimal(actual.get(k, ZERO)), Decimal(expected.get(k, ZERO)), deltas[k], share)
        )
    return out

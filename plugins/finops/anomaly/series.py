"""Pure glue between warehouse rows and the detector: (day, key, cost) rows -> a dense
matrix, and detector flags -> Events (runs of anomalous days: increases, or outages whose
actual is below expected, with a negative pct and impact)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

import numpy as np

from finops.anomaly.detect import Detection, runs
from finops.anomaly.state import Event


@dataclass
class SeriesMatrix:
    keys: list[tuple[str, str]]  # (monitor_key, currency) per row
    days: list[date]
    x: np.ndarray  # (len(keys), len(days))


def build_matrix(
    rows: Iterable[tuple[date, str, str, Decimal | float]], start: date, end: date
) -> SeriesMatrix:
    """rows of (day, monitor_key, currency, cost); missing days are 0 spend."""
    days = [start + timedelta(days=i) for i in range((end - start).days + 1)]
    col = {d: i for i, d in enumerate(days)}
    acc: dict[tuple[str, str], dict[int, float]] = {}
    for day, key, cur, cost in rows:
        if day in col:
            slot = acc.setdefault((key, cur), {})
            slot[col[day]] = slot.get(col[day], 0.0) + float(cost or 0)
    keys = sorted(acc)
    x = np.zeros((len(keys), len(days)))
    for i, k in enumerate(keys):
        for j, v in acc[k].items():
            x[i, j] = v
    return SeriesMatrix(keys, days, x)


def to_events(
    m: SeriesMatrix, det: Detection, monitor_type: str, cost_view: str, recent_days: int, max_gap: int = 2
) -> list[Event]:
    """Runs of flagged days whose last day is within `recent_days` of the data end."""
    out: list[Event] = []
    if not m.days:
        return out
    t = len(m.days)
    for i, (key, cur) in enumerate(m.keys):
        for a, b in runs(det.flags[i], max_gap=max_gap):
            if b < t - recent_days:
                continue
            seg = det.residual[i, a : b + 1]
            # an outage (a run of DOWN days) peaks at its largest shortfall and its impact is
            # the spend missing (negative); an increase at its largest excess
            down = int(det.direction[i, a : b + 1].sum()) < 0
            p = a + int(np.argmin(seg) if down else np.argmax(seg))
            exp = float(det.expected[i, p])
            act = float(m.x[i, p])
            impact = float(np.clip(seg, None, 0).sum() if down else np.clip(seg, 0, None).sum())
            out.append(
                Event(
                    monitor_type=monitor_type,
                    monitor_key=key,
                    cost_view=cost_view,
                    currency=cur,
                    start_day=m.days[a],
                    last_day=m.days[b],
                    peak_day=m.days[p],
                    actual=Decimal(str(round(act, 2))),
                    expected=Decimal(str(round(exp, 2))),
                    total_impact=Decimal(str(round(impact, 2))),
                    pct=(act - exp) / exp if exp > 0 else float("inf"),
                    score=float(det.score[i, p]),
                )
            )
    return out

"""Warehouse-shaped rows -> matrix -> detector -> events: an increase and an outage each become
one event with the sign of their change."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import numpy as np

from finops.anomaly.detect import detect
from finops.anomaly.series import build_matrix, to_events

START = date(2026, 1, 1)
DAYS = 120


def _rows(key: str, costs: np.ndarray) -> list[tuple]:
    return [(START + timedelta(days=i), key, "USD", Decimal(f"{c:.2f}")) for i, c in enumerate(costs)]


def test_a_spike_and_an_outage_become_one_event_each_with_their_sign():
    rng = np.random.default_rng(5)
    base = 800 * np.where(np.arange(DAYS) % 7 >= 5, 0.6, 1.0) * np.exp(rng.normal(0, 0.03, (2, DAYS)))
    spike, outage = base[0].copy(), base[1].copy()
    spike[115] *= 2.5
    outage[114:116] *= 0.05
    end = START + timedelta(days=DAYS - 1)
    m = build_matrix(_rows("svc-a", spike) + _rows("svc-b", outage), START, end)
    events = {e.monitor_key: e for e in to_events(m, detect(m.x), "service", "amortised", recent_days=7)}
    assert sorted(events) == ["svc-a", "svc-b"]
    up, down = events["svc-a"], events["svc-b"]
    assert up.start_day == up.last_day == up.peak_day == START + timedelta(days=115)
    assert up.delta > 0 and up.pct > 1.0 and up.total_impact > 0 and up.score > 5
    assert (down.start_day, down.last_day) == (START + timedelta(days=114), START + timedelta(days=115))
    assert down.peak_day in (down.start_day, down.last_day)
    assert down.delta < 0 and -1.0 < down.pct < -0.9 and down.total_impact < -1000 and down.score < -5
    # the impact is the spend missing over the run, to the cent of the matrix
    i = m.keys.index(("svc-b", "USD"))
    det = detect(m.x)
    assert float(down.total_impact) == round(float(det.residual[i, 114:116].sum()), 2)

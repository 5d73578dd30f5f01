"""The bench's regime generators put labels where their events are, and only there; the
event-level scoring counts alerts and events as its docstring says."""

from __future__ import annotations

import numpy as np
import pytest

from tests.fixtures.bench_scripts import bench_script

regimes = bench_script("anomaly_regimes")
scoring = bench_script("anomaly_score")

FLOOR = 50.0
N, T = 120, 365


@pytest.fixture(scope="module")
def data() -> dict:
    return {name: gen(N, T, 7, FLOOR) for name, gen in regimes.REGIMES.items()}


def _events(ds):
    """(series, first day, last day, kind) per labelled event."""
    out = []
    for ev, kind in ds.event_kind.items():
        rows, days = np.nonzero(ds.label == ev)
        assert rows.size and (rows == rows[0]).all(), (ds.name, ev)
        out.append((int(rows[0]), int(days.min()), int(days.max()), kind))
    return out


def test_every_regime_is_sane_and_deterministic(data):
    for name, ds in data.items():
        assert ds.x.shape == (N, T) and ds.label.shape == (N, T), name
        assert np.isfinite(ds.x).all() and (ds.x >= 0).all(), name
        assert ds.n_events > 0, name
        assert (ds.label[:, : regimes.MIN_ONSET] == 0).all(), name  # events wait for a baseline
        again = regimes.REGIMES[name](N, T, 7, FLOOR)
        assert np.array_equal(again.x, ds.x) and np.array_equal(again.label, ds.label), name
    # the splits cover every regime once
    assert sorted(regimes.SPLIT_A + regimes.SPLIT_B) == sorted(regimes.REGIMES)


def test_quiet_series_exist_in_every_regime(data):
    """False alerts are judged on series with no event at all, not only around events."""
    for name, ds in data.items():
        quiet = (ds.label == 0).all(axis=1).mean()
        assert 0.1 < quiet < 0.95, (name, quiet)


def _median_around(x, a, b, before=14):
    return float(np.median(x[max(0, a - before) : a]))


def _same_weekday(x, a):
    """The usual spend of day a's weekday: median of the three weeks before."""
    return float(np.median(x[[a - 7, a - 14, a - 21]]))


def test_spikes_and_outages_sit_inside_their_windows(data):
    for name in ("heavy_tail", "weekly", "outage", "trend", "holiday", "small_noisy"):
        ds = data[name]
        for i, a, b, kind in _events(ds):
            base = _same_weekday(ds.x[i], a)
            if kind == "spike":
                assert ds.x[i, a] - base >= FLOOR, (name, i, a)  # worth a $ alert
            elif kind == "outage":
                assert ds.x[i, a] <= 0.45 * base, (name, i, a, ds.x[i, a], base)
            assert b - a <= 5, (name, kind)  # 1-4 days + 1


def test_shifts_ramps_launches_keep_their_new_level(data):
    ds = data["level_shift"]
    for i, a, _b, kind in _events(ds):
        before, after = _median_around(ds.x[i], a, a), float(np.median(ds.x[i, a + 3 : a + 17]))
        if a + 17 <= T and not (ds.label[i, a + 14 : a + 17] > 0).any():
            assert (after > 1.25 * before) if kind == "level_shift" else (after < 0.4 * before), (i, a, kind)
    ds = data["ramp"]
    for i, a, b, _kind in _events(ds):
        if b + 10 < T:
            assert np.median(ds.x[i, b - 3 : b + 4]) > 1.2 * _median_around(ds.x[i], a, b), (i, a)
    ds = data["launch"]
    for i, a, _b, _kind in _events(ds):
        assert ds.x[i, :a].max() < 1.0 and np.median(ds.x[i, a + 4 : a + 14]) >= FLOOR, (i, a)


def test_normal_behaviour_is_left_unlabelled(data):
    hol = data["holiday"]
    lull = slice(355, 362)
    assert (hol.label[:, lull] == 0).all()
    drop = np.median(hol.x[:, lull], axis=1) / np.median(hol.x[:, 320:350], axis=1)
    assert drop.min() < 0.6 and (drop < 1.0).mean() > 0.9  # a real lull, not labelled
    small = data["small_noisy"]
    assert np.median(small.x[(small.label == 0).all(axis=1)]) < 100
    lsd = data["launch"]
    tiny = [
        i
        for i in range(N)
        if (lsd.label[i] == 0).all() and lsd.x[i, :30].max() < 1 and lsd.x[i, -20:].mean() > 0.5
    ]
    assert tiny and all(lsd.x[i].max() < 2 * FLOOR for i in tiny)  # below-floor launches: normal


def test_score_counts_runs_events_and_duplicates():
    label = np.zeros((2, 60), np.int64)
    label[0, 40:43] = 1  # a spike window
    label[1, 45:59] = 2  # a shift window
    kinds = {1: "spike", 2: "level_shift"}
    flags = np.zeros((2, 60), bool)
    flags[0, [40, 42]] = True  # one run (gap of 1 bridged): true
    flags[0, 50] = True  # nothing there: false
    flags[1, 46] = True  # first alert on the shift: true
    flags[1, 52] = True  # the same event again, a separate run: false
    flags[1, 10] = True  # before the warm-up: not scored
    s = scoring.score(flags, label, kinds)
    assert (s.alerts, s.tp, s.fp, s.events, s.found) == (4, 2, 2, 2, 2)
    assert s.precision == 0.5 and s.recall == 1.0 and abs(s.f1 - 2 / 3) < 1e-12
    assert s.by_kind == {"spike": [1, 1], "level_shift": [1, 1]}
    none = scoring.score(np.zeros_like(flags), label, kinds)
    assert (none.alerts, none.precision, none.recall, none.f1) == (0, 1.0, 0.0, 0.0)
    both = s + none
    assert (both.alerts, both.tp, both.events, both.found) == (4, 2, 4, 2)
    assert both.by_kind == {"spike": [1, 2], "level_shift": [1, 2]}

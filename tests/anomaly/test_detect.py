"""Detector behaviour on plain series (no warehouse)."""

from __future__ import annotations

import numpy as np

from finops.anomaly.detect import (
    Thresholds,
    detect,
    nanmedian_last,
    runs,
    trailing_mean_baseline,
    window_median,
)

RNG = np.random.default_rng(3)


def weekly(days=120, level=1000.0, weekend=0.5, noise=0.03, growth=0.0):
    t = np.arange(days)
    x = level * np.where(t % 7 >= 5, weekend, 1.0) * np.exp(growth * t)
    return x * np.exp(RNG.normal(0, noise, days))


def test_nanmedian_and_window_median_match_numpy():
    a = RNG.normal(size=(5, 40))
    a[1, 3] = np.nan
    for start, stop in ((-3, 4), (-21, 0), (-7, -2)):
        got = window_median(a, start, stop)
        for i in range(5):
            for t in range(40):
                w = a[i, max(0, t + start) : max(0, t + stop)]
                w = w[~np.isnan(w)]
                exp = np.median(w) if w.size else np.nan
                assert np.isclose(got[i, t], exp, equal_nan=True), (start, stop, i, t)
    v = np.array([[np.nan, 1, 3, np.nan], [np.nan] * 4])
    assert nanmedian_last(v)[0] == 2 and np.isnan(nanmedian_last(v)[1])


def test_weekly_seasonality_and_steady_growth_are_not_anomalies():
    x = np.vstack([weekly(), weekly(weekend=0.3), weekly(growth=0.004), weekly(noise=0.08)])
    assert not detect(x).flags[:, 35:].any()
    # the 30-day-average rule fires on every Monday of the business-week series
    assert trailing_mean_baseline(x[1:2])[0, 35:].sum() > 10


def test_spike_is_flagged_on_its_day_only():
    x = weekly()
    x[100] *= 2.5
    d = detect(x[None, :])
    assert np.flatnonzero(d.flags[0]).tolist() == [100]
    assert d.expected[0, 100] > 800 and d.score[0, 100] > 5


def test_level_shift_alerts_from_first_day_as_one_run():
    x = weekly()
    x[80:] *= 1.8
    d = detect(x[None, :])
    r = runs(d.flags[0])
    assert r[0][0] == 80 and len(r) == 1


def test_slow_ramp_is_caught_during_the_ramp():
    x = weekly(days=140)
    x[90:110] *= 1 + np.linspace(0.1, 2.0, 20)
    x[110:] *= 3.0
    first = np.flatnonzero(detect(x[None, :]).flags[0])[0]
    assert 90 <= first < 105


def test_shallow_dips_do_not_alert_nor_poison_the_next_weeks():
    """A holiday at 60 % of the usual spend is not an outage, and spend coming back is not a spike."""
    x = weekly()
    x[[60, 61, 88]] *= 0.6
    assert not detect(x[None, :]).flags[0, 35:].any()


def test_an_outage_alerts_down_once_and_the_recovery_does_not():
    x = weekly()
    x[[88, 89]] *= 0.05  # spend fell 95 % for two days
    d = detect(x[None, :])
    assert runs(d.flags[0]) == [(88, 89)]
    assert (d.direction[0, 88:90] == -1).all() and d.score[0, 88] < -5


def test_new_service_from_zero_alerts_when_above_floor():
    x = np.zeros((2, 90))
    x[0, 60:] = 400.0
    x[1, 60:] = 20.0  # below the $50 floor
    d = detect(x)
    assert d.flags[0, 60] and not d.flags[1].any()


def test_small_noisy_series_are_kept_quiet_by_the_floor():
    x = np.abs(RNG.normal(8, 4, (50, 200)))
    assert not detect(x).flags.any()
    assert trailing_mean_baseline(x)[:, 35:].sum() > 500


def test_per_series_thresholds_broadcast():
    x = np.vstack([weekly(), weekly()])
    x[:, 100] *= 1.6
    d = detect(x, abs_floor=np.array([50.0, 1e6]), pct=np.array([0.35, 0.35]))
    assert d.flags[0, 100] and not d.flags[1, 100]
    assert not detect(x, Thresholds(pct=0.9)).flags[:, 100].any()


def test_runs_bridge_short_gaps():
    f = np.zeros(20, bool)
    f[[2, 3, 6, 12]] = True
    assert runs(f, max_gap=2) == [(2, 6), (12, 12)]
    assert runs(f, max_gap=0) == [(2, 3), (6, 6), (12, 12)]


def test_a_level_shift_alerts_once_at_its_onset_and_never_after():
    x = weekly(days=300)
    x[100:] *= 2.0
    r = runs(detect(x[None, :]).flags[0])
    assert len(r) == 1 and r[0][0] == 100 and r[0][1] <= 103, r


def test_a_launch_from_zero_alerts_once():
    x = np.zeros(200)
    x[90:] = weekly(days=110, level=400.0, noise=0.08)
    r = runs(detect(x[None, :]).flags[0])
    assert len(r) == 1 and r[0][0] == 90 and r[0][1] <= 93, r


def test_a_ramp_alerts_once_then_the_new_level_is_normal():
    x = weekly(days=300, noise=0.05)
    x[120:140] *= np.linspace(1.05, 2.5, 20)
    x[140:] *= 2.5
    r = runs(detect(x[None, :]).flags[0])
    assert len(r) == 1 and 120 <= r[0][0] < 140, r


def test_small_heavy_noisy_series_rarely_alert():
    """Log-normal day-to-day noise with sigma 0.5 under $100 a day: a $ floor alone lets many
    lucky days through; the log-scale dispersion keeps them to a rare 4-sigma day."""
    level = np.linspace(10, 95, 40)[:, None]
    x = level * np.exp(RNG.normal(0, 0.5, (40, 365)) - 0.125)
    assert detect(x).flags[:, 35:].sum() <= 2  # in 40 series-years
    c = np.cumsum(np.hstack([np.zeros((40, 1)), x]), axis=1)
    mean30 = (c[:, 30:-1] - c[:, :-31]) / 30
    assert (x[:, 30:] - mean30 >= 50).sum() > 200  # the same $50 floor on the excess over a mean


def test_strong_trend_with_deep_weekends_does_not_alert():
    x = np.vstack(
        [weekly(days=365, weekend=w, growth=np.log(1.8) / 365, noise=0.05) for w in (0.2, 0.5, 1.0)]
    )
    assert not detect(x).flags[:, 35:].any()


def test_a_shared_holiday_lull_is_not_an_outage_but_a_lone_drop_is():
    x = np.vstack([weekly(days=200, noise=0.04) for _ in range(30)])
    x[:20, 150:157] *= 0.25  # two thirds of the series idle for a week: a holiday
    x[25, 120:122] *= 0.25  # one series alone, two days: an outage
    d = detect(x)
    assert not d.flags[:20].any()
    assert runs(d.flags[25]) == [(120, 121)] and (d.direction[25, 120:122] == -1).all()


def test_verdicts_use_the_past_only_and_are_deterministic():
    x = np.vstack([weekly(days=200), weekly(days=200, weekend=0.3)])
    x[0, 150] *= 3
    x[1, 170:] *= 2
    full = detect(x)
    for t in (120, 151, 172, 200):
        part = detect(x[:, :t])
        assert np.array_equal(part.flags, full.flags[:, :t]) and np.allclose(part.score, full.score[:, :t])
    assert np.array_equal(detect(x).flags, full.flags)


def test_days_without_data_are_not_outages():
    """NaN is a day with no data (a late export), not zero spend: never flagged, and the days
    after it are judged as if it had not happened; the same gap as zeros is an outage."""
    x = weekly(days=150)
    gap = x.copy()
    gap[100:105] = np.nan
    d = detect(gap[None, :])
    assert not d.flags.any() and np.isnan(d.residual[0, 100:105]).all()
    zero = x.copy()
    zero[100:105] = 0.0
    r = runs(detect(zero[None, :]).flags[0])
    assert len(r) == 1 and r[0][0] == 100, r  # one outage alert from its first day


def test_any_shape_from_empty_to_one_day():
    for shape in ((0, 10), (3, 0), (1, 1), (2, 3), (1, 15)):
        d = detect(np.full(shape, 100.0))
        assert d.flags.shape == d.expected.shape == d.direction.shape == shape and not d.flags.any()
    assert detect(np.full(30, 100.0)).flags.shape == (1, 30)  # one series as a 1-d array


def test_a_holiday_on_a_small_monitor_is_not_an_outage():
    """Six accounts, four of them idle on the same two days: a holiday, even on a small
    monitor; one account alone falling the same way is an outage."""
    x = np.vstack([weekly(days=160, noise=0.04) for _ in range(6)])
    x[:4, 140:142] *= 0.2
    x[5, 120:122] *= 0.2
    d = detect(x)
    assert not d.flags[:5].any()
    assert runs(d.flags[5]) == [(120, 121)]

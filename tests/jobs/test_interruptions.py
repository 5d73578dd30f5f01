"""Spot interruption rates from placement scores and spot price history, checked by hand:
base 0.05/h, span 4 -> score 10 gives 0.05 / 4, score 1 gives 0.05 x 4, score 5.5 gives 0.05."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from finops.jobs.interruptions import Score, SpotPoint, interruption_rates, price_factor, score_factor
from finops.prices.records import utcnow

NOW = utcnow()
KEY = ("aws", "us-east-1", "p5.48xlarge")


def _pt(zone, price, days_ago, region="us-east-1"):
    return SpotPoint("aws", region, zone, "p5.48xlarge", Decimal(price), NOW - timedelta(days=days_ago))


def _score(score, zone="", days_ago=1, region="us-east-1"):
    return Score("aws", region, zone, "p5.48xlarge", score, NOW - timedelta(days=days_ago))


def test_score_factor_by_hand():
    assert score_factor(10) == pytest.approx(0.25)  # 4 ** (-4.5 / 4.5)
    assert score_factor(1) == pytest.approx(4.0)  # 4 ** (4.5 / 4.5)
    assert score_factor(5.5) == pytest.approx(1.0)
    assert score_factor(7) == pytest.approx(1 / 4 ** (1 / 3))  # 1 / cube root of 4 = 0.62996
    assert score_factor(0) == score_factor(1) and score_factor(11) == score_factor(10)  # clamped to 1-10


def test_price_factor_uses_the_cheapest_zone_now_against_its_low():
    # zone a: 4.00 -> 2.00 -> 3.00 (now 3.00, low 2.00); zone b: 3.50, one point. a is cheaper now.
    pts = [_pt("a", "4.00", 9), _pt("a", "2.00", 5), _pt("a", "3.00", 1), _pt("b", "3.50", 2)]
    assert price_factor(pts) == pytest.approx(1.5)
    assert price_factor([_pt("a", "1.00", 5), _pt("a", "10.00", 1)]) == 3.0  # capped
    assert price_factor([_pt("a", "3.00", 5), _pt("a", "2.00", 1)]) == 1.0  # at its low: no pressure
    assert price_factor([_pt("b", "3.50", 2)]) is None  # one point says nothing


def test_rates_combine_score_and_price_by_hand():
    scores = [
        _score(1),  # region-wide score 1: x4
        _score(1, zone="use1-az1", region="us-west-2"),  # per AZ: 1 and 10, mean 5.5: x1
        _score(10, zone="use1-az2", region="us-west-2"),
        _score(2, region="eu-west-1", days_ago=20),  # older than 14 days: ignored
    ]
    history = [_pt("a", "2.00", 5), _pt("a", "3.00", 1), _pt("a", "4.00", 3, region="us-west-2")]
    rates = interruption_rates(scores, history, NOW)
    assert rates[KEY].rate_per_h == pytest.approx(0.05 * 4 * 1.5)  # 0.3
    assert rates[KEY].why == "placement score 1, spot price 1.50x its window low"
    west = rates[("aws", "us-west-2", "p5.48xlarge")]
    assert west.rate_per_h == pytest.approx(0.05) and west.why == "placement score 5.5 (mean of 2 AZs)"
    assert ("aws", "eu-west-1", "p5.48xlarge") not in rates  # no signal: the planner's default applies


def test_candidates_from_the_warehouse_carry_the_rate(duckdb_wh, bench_doc):
    from finops.gpubench.store import store_result
    from finops.jobs.candidates import candidates_from_warehouse

    target = {"provider": "aws", "region": "us-east-1", "instance_type": "p5.48xlarge", "pricing_model": "spot",
              "gpu_count": 8}  # fmt: skip
    store_result(duckdb_wh, bench_run_id="b1", dag_run_id=None, target=target, doc=bench_doc)
    cols = "provider, region, zone, instance_type, price_per_hour, currency, observed_at, source, fetched_at"
    for table, zone, price, days in (("spot_prices", "us-east-1a", "40.00", 5), ("spot_prices", "us-east-1a", "50.00", 1),
                                     ("ondemand_prices", "", "98.32", 1)):  # fmt: skip
        at = NOW - timedelta(days=days)
        duckdb_wh.execute(f"INSERT INTO {table} ({cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          ["aws", "us-east-1", zone, "p5.48xlarge", Decimal(price), "USD", at, "t", at])  # fmt: skip
    for score, days in ((2, 3), (9, 1)):  # the newest score counts
        duckdb_wh.execute(
            "INSERT INTO spot_placement_scores (provider, region, zone_id, instance_type, target_capacity, single_az, "
            "score, observed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            ["aws", "us-east-1", "", "p5.48xlarge", 1, False, score, NOW - timedelta(days=days)],
        )
    cands = {c.pricing_model: c for c in candidates_from_warehouse(duckdb_wh)}
    # 0.05 x 4 ** ((5.5 - 9) / 4.5) x (50 / 40) = 0.05 x 0.34020 x 1.25 = 0.021263
    assert cands["spot"].interruption_rate_per_h == pytest.approx(0.021263, rel=1e-4)
    assert cands["spot"].price_per_hour == Decimal("50.00")
    assert cands["ondemand"].interruption_rate_per_h == 0.0

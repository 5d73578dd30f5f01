"""Where the purchase advice's discounts come from (finops.commitments.rates): a rate the user
set in finops.yaml, else the price data the price jobs stored (commitment_rates: the family's
median, else the product's), else the default planning figure; each advice row records which.
End to end on both warehouses with the hand-written rows of tests/fixtures/commitments.py
(on-demand g5 usage on 19 October 2026)."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal as D

import pytest

from finops.commitments import rates
from finops.commitments.settings import DEFAULT_DISCOUNTS, parse_settings
from finops.commitments.store import WhatIf, purchase_advice, store_advice
from finops.prices.commit_rates import CommitmentRate
from finops.prices.commit_store import replace_rates
from tests.fixtures.commitments import load_commitment_rows

TODAY = date(2026, 10, 20)
SEEN = datetime(2026, 10, 18, 6)


def _rate(product: str, itype: str, years: int, pay: str, od: str, commit: str, seen: datetime = SEEN):
    return CommitmentRate("aws", product, years, pay, "us-east-1", itype, D(od), D(commit), "test", seen)


def test_median_per_family_and_per_product():
    rows = [
        ("aws", "reserved_instance", 1, "no_upfront", "g5", D("0.30")),
        ("aws", "reserved_instance", 1, "no_upfront", "G5", D("0.40")),  # families fold case
        ("aws", "reserved_instance", 1, "no_upfront", "p5", D("0.36")),
        ("aws", "reserved_instance", 1, "no_upfront", "p5", D("-0.05")),  # dearer than on demand: out
    ]
    got = rates.aggregate(rows)
    assert got[("aws", "reserved_instance", 1, "no_upfront", "g5")] == D("0.35")  # (0.30 + 0.40) / 2
    assert got[("aws", "reserved_instance", 1, "no_upfront", "p5")] == D("0.36")
    assert got[("aws", "reserved_instance", 1, "no_upfront", "all")] == D(
        "0.36"
    )  # median of 0.30, 0.36, 0.40
    with pytest.raises(ValueError):
        rates.median([])


def test_config_wins_then_family_then_product_then_default():
    settings = parse_settings({"discounts": {"aws": {"reserved_instance": {"1y": {"all_upfront": 0.41}}}}})
    price = {
        ("aws", "reserved_instance", 1, "no_upfront", "g5"): D("0.31"),
        ("aws", "reserved_instance", 1, "no_upfront", "all"): D("0.33"),
        ("aws", "reserved_instance", 1, "all_upfront", "g5"): D("0.39"),  # config overrides this one
        ("aws", "reserved_instance", 3, "partial_upfront", "all"): D("0.52"),
    }
    got = {
        (o.term_years, o.payment): (o.discount, o.rate_source)
        for o in rates.offers(settings, "aws", "reserved_instance", "g5", price)
    }
    assert got[(1, "no_upfront")] == (D("0.31"), "price_data:g5")
    assert got[(1, "all_upfront")] == (D("0.41"), "config")
    assert got[(3, "partial_upfront")] == (D("0.52"), "price_data:all")
    assert got[(1, "partial_upfront")] == (
        D(DEFAULT_DISCOUNTS["aws"]["reserved_instance"]["1y"]["partial_upfront"]),
        "default",
    )
    assert len(got) == 6
    # another family sees the product-wide rate, not g5's
    other = {
        (o.term_years, o.payment): o.rate_source
        for o in rates.offers(settings, "aws", "reserved_instance", "p4d", price)
    }
    assert other[(1, "no_upfront")] == "price_data:all"
    # no price data at all: exactly the old config-only behaviour
    assert [(o.term_years, o.payment, o.discount) for o in rates.offers(settings, "aws", "reserved_instance")] == [
        (o.term_years, o.payment, o.discount) for o in settings.offers("aws", "reserved_instance")
    ]  # fmt: skip


def test_advice_uses_stored_price_data_and_records_the_source(any_wh):
    load_commitment_rows(any_wh)
    # Compute Savings Plans, 1 year no upfront: g5.xlarge 1.006 -> 0.7545 (25 % off), p5 50 -> 35 (30 %), p4d
    # 32.77 -> 21.3005 (35 %): the product-wide median is 30 %. A stale rate (older than 35 days) is not used.
    assert (
        replace_rates(
            any_wh,
            "aws",
            ["savings_plan", "reserved_instance"],
            ["us-east-1"],
            [
                _rate("savings_plan", "g5.xlarge", 1, "no_upfront", "1.006", "0.7545"),
                _rate("savings_plan", "p5.48xlarge", 1, "no_upfront", "50", "35"),
                _rate("savings_plan", "p4d.24xlarge", 1, "no_upfront", "32.77", "21.3005"),
                _rate("savings_plan", "p5.48xlarge", 3, "no_upfront", "50", "20", seen=datetime(2026, 8, 1)),
                # RI g5 family, 1 year all upfront: 1.006 -> 0.6036 (40 % off)
                _rate("reserved_instance", "g5.xlarge", 1, "all_upfront", "1.006", "0.6036"),
            ],
        )
        == 5
    )
    settings = parse_settings(
        {
            "advice": {"lookback_days": 7},
            "discounts": {"aws": {"savings_plan": {"1y": {"all_upfront": 0.33}}}},
        }
    )
    res = purchase_advice(any_wh, settings, TODAY, WhatIf("aws", "savings_plan", D("0.10")))
    got = {(a.offer.term_years, a.offer.payment): (a.offer.discount, a.offer.rate_source) for a in res.advice}
    assert got[(1, "no_upfront")] == (D("0.3"), "price_data:all")
    assert got[(1, "all_upfront")] == (D("0.33"), "config")
    assert got[(3, "no_upfront")] == (D("0.40"), "default")  # the only 3-year rate is stale
    # 0.10 $/h of a 1y no-upfront plan at 30 % off covers 0.10 / 0.7 = 1/7 $/h of on-demand usage
    one = next(a for a in res.advice if (a.offer.term_years, a.offer.payment) == (1, "no_upfront"))
    assert one.covers_on_demand_hourly.quantize(D("1e-9")) == D("0.142857143")
    assert store_advice(any_wh, "run-1", res.advice, what_if=True) == 6
    stored = any_wh.query(
        "SELECT term_years, payment, discount, rate_source FROM commitment_advice ORDER BY term_years, payment"
    )
    assert [(t, p, D(d), s) for t, p, d, s in stored] == [
        (1, "all_upfront", D("0.33"), "config"),
        (1, "no_upfront", D("0.3"), "price_data:all"),
        (1, "partial_upfront", D("0.24"), "default"),
        (3, "all_upfront", D("0.48"), "default"),
        (3, "no_upfront", D("0.40"), "default"),
        (3, "partial_upfront", D("0.45"), "default"),
    ]
    ri = purchase_advice(any_wh, settings, TODAY, WhatIf("aws", "reserved_instance", D("0.10"), scope="g5"))
    by = {(a.scope, a.offer.term_years, a.offer.payment): a.offer for a in ri.advice}
    assert (by[("g5", 1, "all_upfront")].discount, by[("g5", 1, "all_upfront")].rate_source) == (
        D("0.4"),
        "price_data:g5",
    )


def test_replace_rates_keeps_products_an_answer_did_not_cover(duckdb_wh):
    first = [_rate("savings_plan", "p5.48xlarge", 1, "no_upfront", "50", "35"),
             _rate("reserved_instance", "p5.48xlarge", 1, "no_upfront", "50", "30")]  # fmt: skip
    assert replace_rates(duckdb_wh, "aws", ["savings_plan", "reserved_instance"], ["us-east-1"], first) == 2
    # the next answer holds RI rates only (the Savings Plans call was refused): SP rows stay
    assert replace_rates(duckdb_wh, "aws", ["reserved_instance"], ["us-east-1"], first[1:]) == 1
    assert duckdb_wh.query("SELECT product FROM commitment_rates ORDER BY 1") == [
        ("reserved_instance",), ("savings_plan",)
    ]  # fmt: skip
    # a rate dearer than on demand is never stored
    assert replace_rates(duckdb_wh, "aws", ["reserved_instance"], ["us-east-1"],
                         [_rate("reserved_instance", "p5.48xlarge", 1, "no_upfront", "50", "55")]) == 0  # fmt: skip

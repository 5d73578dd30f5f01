"""Purchase advice on small usage profiles whose optimum, costs, break-even and drop risk are
worked out by hand in the comments (exact Decimal arithmetic, no tolerance)."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal as D

import pytest

from finops.commitments.advice import (
    DISCLAIMER,
    Distribution,
    Offer,
    Sample,
    advise,
    capacity_blocks,
    daily_samples,
)

CENT = D("0.01")
MONDAY = date(2026, 11, 2)
WEEK = [MONDAY + timedelta(days=i) for i in range(7)]


def _weekdays_busy(rate: str = "10") -> list[Sample]:
    """Mon-Fri at `rate` $/h on demand, Sat-Sun idle: P(u=10) = 5/7, P(u=0) = 2/7."""
    return [Sample(d, D(rate) if d.weekday() < 5 else D(0)) for d in WEEK]


def test_optimum_is_the_discount_quantile():
    # cost(k) = k(1-d) + 5/7 (10 - k) for 0 <= k <= 10: slope (1-d) - 5/7.
    # d = 0.30: slope 0.7 - 0.714.. < 0 -> buy all 10; d = 0.25: slope > 0 -> buy nothing.
    (buy,) = advise(_weekdays_busy(), [Offer("aws", "savings_plan", 1, "no_upfront", D("0.30"))],
                    scope="all", currency="USD")  # fmt: skip
    assert buy.covers_on_demand_hourly == D(10) and buy.commitment_hourly == D("7.00")
    assert buy.expected.on_demand_hourly == D(50) / 7
    assert buy.expected.committed_hourly == D(7)  # 7 an hour, nothing above it on demand
    assert buy.expected.savings_hourly == D(50) / 7 - 7  # = 1/7
    assert buy.expected.utilisation == (D(50) / 7) / 10  # 5/7 of the commitment used
    assert buy.expected_savings_term.quantize(CENT) == D("1251.43")  # 1/7 x 8760 = 1251.428..
    assert buy.break_even_utilisation == D("0.70") and buy.break_even_months == 0
    assert (buy.upfront, buy.monthly_recurring) == (D(0), D("7.00") * 8760 / 12)
    assert buy.disclaimer == DISCLAIMER and "nothing is purchased" in DISCLAIMER

    (skip,) = advise(_weekdays_busy(), [Offer("aws", "savings_plan", 1, "no_upfront", D("0.25"))],
                     scope="all", currency="USD")  # fmt: skip
    assert skip.covers_on_demand_hourly == 0 and skip.expected.savings_hourly == 0
    assert skip.break_even_months is None


def test_payment_options_upfront_and_break_even_months():
    offers = [Offer("aws", "savings_plan", 1, p, D("0.30")) for p in ("all_upfront", "partial_upfront")]
    by = {a.offer.payment: a for a in advise(_weekdays_busy(), offers, scope="all", currency="USD")}
    full = by["all_upfront"]  # 7 $/h x 8760 h = 61 320 paid on day one
    assert (full.upfront, full.monthly_recurring) == (D("61320.00"), D(0))
    # cash saved a month = (on demand avoided - nothing recurring) = (1/7 + 7) x 730 = 5214.28..;
    # 61 320 / 5214.28.. = 11.76 -> the 12th month
    assert full.break_even_months == 12
    part = by["partial_upfront"]  # half upfront, half over 12 months
    assert (part.upfront, part.monthly_recurring) == (D("30660.000"), D("2555.000"))
    assert part.break_even_months == 12  # 30 660 / ((1/7 + 3.5) x 730 = 2660) = 11.53


def test_twenty_percent_drop_turns_the_same_commitment_into_a_loss():
    (a,) = advise(_weekdays_busy(), [Offer("aws", "savings_plan", 3, "no_upfront", D("0.30"))],
                  scope="all", currency="USD")  # fmt: skip
    # usage 8 $/h on weekdays: on demand 40/7 an hour against a fixed 7: -9/7 an hour
    assert a.drop_share == D("0.2")
    assert a.drop.on_demand_hourly == D(40) / 7 and a.drop.committed_hourly == D(7)
    assert a.drop.utilisation == (D(40) / 7) / 10
    assert a.drop_savings_term.quantize(CENT) == D("-33788.57")  # -9/7 x 8760 x 3 = -33 788.571..


def test_weekday_aware_weighting():
    # Mon..Mon: two Mondays at 14 $/h, other days 0. Each weekday weighs 1/7, so the mean is
    # 14/7 = 2, not 28/8 = 3.5 as an unweighted average of the 8 days would say.
    days = [MONDAY + timedelta(days=i) for i in range(8)]
    dist = Distribution(Sample(d, D(14) if d.weekday() == 0 else D(0)) for d in days)
    assert dist.mean == D(2) and dist.n == 8
    assert dist.excess(D(4)) == D(10) / 7  # E[max(0, u - 4)] = 1/7 x 10


def test_step_grid_for_instance_sized_commitments():
    # an RI comes in whole instances (4 $/h on demand each): 10 is not buyable; 8 costs
    # 8 x 0.7 + 5/7 x 2 = 7.028..; 12 costs 8.4; 0 costs 50/7 = 7.142.. -> 8
    offer = Offer("aws", "reserved_instance", 1, "no_upfront", D("0.30"), step=D(4))
    (a,) = advise(_weekdays_busy(), [offer], scope="g5", currency="USD")
    assert a.covers_on_demand_hourly == D(8)
    assert a.expected.committed_hourly == D("5.6") + D(10) / 7


def test_what_if_prices_a_given_commitment():
    # "what if we buy 3.50 $/h at 30 % off": it covers 5 $/h of on-demand usage;
    # cost 3.5 + 5/7 x 5 = 7.071..; saves 50/7 - 7.071.. = 1/14 an hour
    (a,) = advise(_weekdays_busy(), [Offer("gcp", "resource_cud", 1, "no_upfront", D("0.30"))],
                  scope="a2", currency="USD", commitment_hourly=D("3.50"))  # fmt: skip
    assert a.covers_on_demand_hourly == D(5) and a.commitment_hourly == D("3.50")
    assert a.expected.savings_hourly == D(50) / 7 - (D("3.50") + D(25) / 7)
    assert a.expected.utilisation == D(5) / 7  # the weekday hours use all of it, the weekend none


def test_daily_samples_fill_missing_days_with_zero():
    s = daily_samples({WEEK[0]: D(240)}, WEEK[:2])
    assert [(x.at, x.rate) for x in s] == [(WEEK[0], D(10)), (WEEK[1], D(0))]


def test_capacity_block_against_on_demand():
    offers = [
        {"CapacityBlockOfferingId": "cb-1", "InstanceType": "p5.48xlarge", "InstanceCount": 2,
         "CapacityBlockDurationHours": 24, "UpfrontFee": "12345.60", "CurrencyCode": "USD",
         "StartDate": "2026-12-01T11:30:00Z"},
        {"CapacityBlockOfferingId": "cb-2", "InstanceType": "p4d.24xlarge", "InstanceCount": 1,
         "CapacityBlockDurationHours": 48, "UpfrontFee": "600.00", "CurrencyCode": "USD"},
    ]  # fmt: skip
    a, b = capacity_blocks(offers, {"p5.48xlarge": D("98.32")})
    assert (a.offering_id, a.per_instance_hour) == ("cb-2", D("12.5"))  # 600 / 48
    assert a.saving_vs_on_demand is None  # no on-demand price for p4d in the warehouse
    assert b.per_instance_hour == D("257.2")  # 12 345.60 / (2 x 24)
    assert b.saving_vs_on_demand == D("98.32") * 48 - D("12345.60")  # -7626.24: capacity costs extra


def test_bad_input_fails_clearly():
    with pytest.raises(ValueError, match="discount 1.2"):
        Offer("aws", "savings_plan", 1, "no_upfront", D("1.2"))
    with pytest.raises(ValueError, match="term 2"):
        Offer("aws", "savings_plan", 2, "no_upfront", D("0.2"))
    with pytest.raises(ValueError, match="no usage samples"):
        advise([], [], scope="all", currency="USD")
    with pytest.raises(ValueError, match="drop_share"):
        advise(_weekdays_busy(), [], scope="all", currency="USD", drop_share=D(1))

from __future__ import annotations

import random
from decimal import Decimal as D
from decimal import localcontext

import pytest

from finops.allocation.money import CENT, round_total_preserving, split


def test_split_three_ways_is_exact_and_deterministic():
    parts = split(D("100.00"), {"b": D(1), "a": D(1), "c": D(1)}, CENT)
    assert parts == {"a": D("33.34"), "b": D("33.33"), "c": D("33.33")}
    assert split(D("100.00"), {"c": D(1), "b": D(1), "a": D(1)}, CENT) == parts


def test_split_negative_credit_mirrors():
    parts = split(D("-0.05"), {"a": D(2), "b": D(1)}, CENT)
    assert parts == {"a": D("-0.03"), "b": D("-0.02")}


def test_split_zero_weights_falls_back_to_even():
    assert split(D("1.00"), {"a": D(0), "b": D(0)}, CENT) == {"a": D("0.50"), "b": D("0.50")}


def test_split_refuses_negative_weight_and_finer_amount():
    with pytest.raises(ValueError):
        split(D("1"), {"a": D(-1)})
    with pytest.raises(ValueError):
        split(D("0.001"), {"a": D(1)}, CENT)


def test_split_huge_amount_has_no_precision_loss():
    amt = D("12345678901234567890123.0000000001")
    parts = split(amt, {"a": D(1), "b": D(2), "c": D("0.5")})
    with localcontext() as ctx:  # summing 33 digits needs more than the default 28
        ctx.prec = 60
        assert sum(parts.values()) == amt


def test_random_splits_conserve():
    rng = random.Random(7)
    for _ in range(300):
        amt = D(rng.randint(-(10**12), 10**12)).scaleb(-10)
        weights = {f"t{i}": D(rng.randint(0, 1000)) / 7 for i in range(rng.randint(1, 9))}
        assert sum(split(amt, weights).values()) == amt


def test_round_total_preserving_cents_add_up():
    vals = {"a": D("0.335"), "b": D("0.335"), "c": D("0.33")}
    out = round_total_preserving(vals)
    assert sum(out.values()) == D("1.00")
    assert out == {"a": D("0.34"), "b": D("0.33"), "c": D("0.33")}

"""finops.yaml `commitments:`: a bad key or value fails when the file loads, naming the key;
discount overrides merge over the documented defaults; the what-if Params are checked."""

from __future__ import annotations

from datetime import date
from decimal import Decimal as D

import pytest

from finops.commitments.settings import DEFAULT_DISCOUNTS, parse_settings
from finops.commitments.tasks import parse_what_if, periods_for
from finops.config import ConfigError, parse_config


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"advice": {"lookback_dayz": 30}}, "commitments.advice.lookback_dayz: Extra inputs are not permitted"),
        ({"advice": {"lookback_days": 3}}, "commitments.advice.lookback_days: Input should be greater than or equal to 7"),
        ({"utilisation_floor": 1.5}, "commitments.utilisation_floor: Input should be less than or equal to 1"),
        ({"warn_days": [30, -1]}, "commitments.warn_days: Value error, whole days >= 0"),
        ({"discounts": {"aws": {"savings_plan": {"1y": {"no_upfront": 1.2}}}}}, "aws.savings_plan.1y.no_upfront: 1.2 is not in [0, 1)"),
        ({"discounts": {"aws": {"capacity_block": {}}}}, "aws.capacity_block: unknown product"),
        ({"discounts": {"gcp": {"resource_cud": {"1y": {"upfront": 0.3}}}}}, "gcp.resource_cud.1y.upfront: payment is one of"),
        ({"inventory": [{"provider": "oracle", "id": "x", "end": "2027-01-01"}]}, "commitments.inventory[0].provider: Input should be"),
    ],
)  # fmt: skip
def test_bad_config_names_the_key(section, message):
    with pytest.raises(ConfigError) as e:
        parse_config({"commitments": section})
    assert message in str(e.value)


def test_defaults_and_overrides():
    s = parse_config(
        {"commitments": {"discounts": {"aws": {"savings_plan": {"3y": {"all_upfront": 0.5}}}}}}
    ).commitments
    offers = {(o.term_years, o.payment): o.discount for o in s.offers("aws", "savings_plan")}
    assert offers[(3, "all_upfront")] == D("0.5") and offers[(1, "no_upfront")] == D("0.20")
    assert len(offers) == 6 and s.warn_days == [30, 7] and s.utilisation_floor == 0.8
    # GCP CUDs are billed monthly only: one payment option per term
    assert [(o.term_years, o.payment) for o in s.offers("gcp", "resource_cud")] == [
        (1, "no_upfront"),
        (3, "no_upfront"),
    ]
    assert set(DEFAULT_DISCOUNTS) == {"aws", "gcp", "azure"}
    assert parse_settings(None).advice.lookback_days == 60


def test_what_if_params_and_periods():
    assert parse_what_if({"what_if_hourly": ""}) is None
    w = parse_what_if({"what_if_hourly": "12.5", "what_if_provider": "azure", "what_if_product": "reservation",
                       "what_if_scope": "NCads_A100_v4"})  # fmt: skip
    assert (w.provider, w.product, w.commitment_hourly, w.scope) == (
        "azure",
        "reservation",
        D("12.5"),
        "NCads_A100_v4",
    )
    with pytest.raises(ValueError, match="unknown"):
        parse_what_if({"what_if_hourly": "1", "what_if_provider": "aws", "what_if_product": "cud"})
    with pytest.raises(ValueError, match="a number"):
        parse_what_if({"what_if_hourly": "ten", "what_if_provider": "aws", "what_if_product": "savings_plan"})
    assert periods_for(date(2026, 3, 2), 35) == ["2026-01", "2026-02", "2026-03"]

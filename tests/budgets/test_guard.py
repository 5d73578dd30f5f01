"""finops.budgets.allows_gpu_spend: the hook cost-aware training jobs call before they launch."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from finops.budgets import allows_gpu_spend
from finops.config import parse_config
from tests.fixtures.budgets import seed_showback

CFG = parse_config(
    {
        "budgets": {
            "items": [
                {"name": "ml-gpu", "team": "ml", "kind": "gpu", "amount": "1000.00"},
                {"name": "ml-all", "team": "ml", "amount": 10},  # a total budget does not gate GPU jobs
            ]
        }
    }
).budgets
TODAY = date(2026, 3, 10)


def test_within_over_and_override(any_wh, caplog):
    seed_showback(any_wh, "ml", date(2026, 2, 20), 18, Decimal("80.00"))  # March 1-9: 720 of GPU
    seed_showback(any_wh, "ml", date(2026, 3, 1), 9, Decimal("500.00"), line="storage")  # not GPU
    ok = allows_gpu_spend("ml", "280.00", cfg=CFG, wh=any_wh, today=TODAY)
    assert ok and ok.spent == Decimal("720") and ok.remaining == Decimal("280") and ok.budget == "ml-gpu"
    over = allows_gpu_spend("ml", Decimal("280.01"), cfg=CFG, wh=any_wh, today=TODAY)
    assert not over and "would exceed it" in over.reason and "override=True" in over.reason
    forced = allows_gpu_spend(
        "ml", 5000, override=True, requested_by="alice", cfg=CFG, wh=any_wh, today=TODAY
    )
    assert forced.allowed and forced.overridden and forced.remaining == Decimal("280")
    assert "GPU budget override by alice" in caplog.text


def test_team_without_gpu_budget_is_allowed_without_touching_the_warehouse():
    d = allows_gpu_spend("data", 10**9, cfg=CFG, wh=None)
    assert d.allowed and d.budget is None and "no GPU budget" in d.reason


@pytest.mark.parametrize("bad", ["ten", "-1", "NaN", "Infinity"])
def test_bad_amount_is_refused(bad):
    with pytest.raises(ValueError, match="amount must be"):
        allows_gpu_spend("ml", bad, cfg=CFG)

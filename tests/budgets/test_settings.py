"""The `budgets:` section is validated with the rest of finops.yaml: a bad key or value fails
when the file loads, naming the key and the reason."""

from __future__ import annotations

from decimal import Decimal

import pytest

from finops.config import ConfigError, load_config, parse_config


@pytest.mark.parametrize(
    ("section", "message"),
    [
        (
            {"items": [{"name": "ml", "team": "ml", "amount": -1}]},
            "budgets.items[0].amount: Input should be greater than 0",
        ),
        (
            {"items": [{"name": "ml", "team": "ml", "amount": "lots"}]},
            "budgets.items[0].amount: Input should be a valid decimal",
        ),
        (
            {"items": [{"name": "ml", "team": "ml", "amount": 5, "colour": "red"}]},
            "budgets.items[0].colour: Extra inputs are not permitted",
        ),
        (
            {"items": [{"name": "ml", "amount": 5}]},
            "budgets.items[0]: Value error, set exactly one of team, project, account",
        ),
        ({"items": [{"name": "ml", "team": "a", "account": "1", "amount": 5}]}, "(got team, account)"),
        ({"items": [{"name": "ml", "project": "x", "kind": "gpu", "amount": 5}]}, "kind 'gpu' needs a team"),
        (
            {"items": [{"name": "ml", "team": "ml", "amount": 5, "currency": "usd"}]},
            "budgets.items[0].currency: String should match pattern",
        ),
        (
            {"items": [{"name": "ML Team", "team": "ml", "amount": 5}]},
            "budgets.items[0].name: Value error, must be 1-63",
        ),
        (
            {"items": [{"name": "ml", "team": "ml", "amount": 5}, {"name": "ml", "team": "x", "amount": 5}]},
            "budget name 'ml' is used twice",
        ),
        (
            {"thresholds": {"actual": [50, 50]}},
            "budgets.thresholds.actual: Value error, thresholds must not repeat",
        ),
        ({"thresholds": {"forecast": [0]}}, "budgets.thresholds.forecast: Value error, each threshold"),
        (
            {"items": [{"name": "ml", "team": "ml", "amount": 5, "thresholds": {"forecast": [2000]}}]},
            "budgets.items[0].thresholds.forecast",
        ),
        (
            {"items": [{"name": "ml", "team": "ml", "amount": 5, "kind": "storage"}]},
            "budgets.items[0].kind: Input should be 'total' or 'gpu'",
        ),
        (
            {"items": [{"name": "ml", "team": "ml\nx", "amount": 5}]},
            "budgets.items[0].team: Value error, must be 1-200",
        ),
    ],
)
def test_bad_budget_fails_naming_the_key(section, message):
    with pytest.raises(ConfigError) as e:
        parse_config({"budgets": section})
    assert message in str(e.value), str(e.value)


def test_bad_budget_in_a_file_names_the_file_and_key(tmp_path):
    p = tmp_path / "finops.yaml"
    p.write_text("budgets:\n  items:\n    - {name: ml, team: ml-research, amount: 0}\n")
    with pytest.raises(
        ConfigError, match=r"finops\.yaml: budgets\.items\[0\]\.amount: Input should be greater than 0"
    ):
        load_config(p)


def test_good_budgets_parse_exactly_with_defaults():
    cfg = parse_config(
        {
            "budgets": {
                "thresholds": {"actual": [100, 50]},
                "items": [
                    {"name": "ml", "team": "ml", "amount": 20000.1},
                    {
                        "name": "ml-gpu",
                        "team": "ml",
                        "kind": "gpu",
                        "amount": "12000.005",
                        "currency": "EUR",
                        "thresholds": {"forecast": [90, 100, 120]},
                    },
                    {"name": "search", "project": "search", "amount": 5000, "notify_team": "search-eng"},
                    {"name": "prod", "account": "123456789012", "amount": 1},
                ],
            }
        }
    ).budgets
    ml, gpu, search, prod = cfg.items
    assert ml.amount == Decimal("20000.1") and gpu.amount == Decimal("12000.005")
    assert cfg.thresholds_of(ml).actual == [50, 100] and cfg.thresholds_of(ml).forecast == [80, 100]
    assert cfg.thresholds_of(gpu).forecast == [90, 100, 120]
    assert (search.scope, search.scope_value, search.route_team) == ("project", "search", "search-eng")
    assert (prod.scope, prod.route_team) == ("account", None)


def test_shipped_config_still_loads():
    from pathlib import Path

    load_config(Path(__file__).resolve().parents[2] / "include" / "config" / "finops.yaml")

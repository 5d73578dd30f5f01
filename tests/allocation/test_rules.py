from __future__ import annotations

import pytest

from finops.allocation.rules import AllocationConfigError, load_rules, parse_rules
from finops.allocation.settings import allocation_rules
from finops.paths import include_dir


def test_example_rules_file_loads():
    rules = load_rules(include_dir() / "config" / "allocation.yaml")
    assert {t.name for t in rules.teams} == {"ml-research", "ml-platform", "data-eng"}
    assert [p.method for p in rules.shared] == ["proportional", "fixed", "even"]
    assert allocation_rules({}) == rules  # empty finops.yaml section -> the example file


def test_fixed_percentages_must_sum_to_100():
    with pytest.raises(AllocationConfigError, match=r"shared\[0\].*sum to 100, got 90"):
        parse_rules(
            {
                "shared": [
                    {
                        "name": "x",
                        "match": {"services": ["s"]},
                        "method": "fixed",
                        "percentages": {"a": 60, "b": 30},
                    }
                ]
            }
        )


def test_unknown_team_is_named():
    with pytest.raises(AllocationConfigError, match="unknown team 'ghost'"):
        parse_rules({"teams": [{"name": "a"}], "rules": [{"team": "ghost", "match": {"accounts": ["1"]}}]})


def test_empty_match_and_typos_are_refused():
    with pytest.raises(AllocationConfigError, match=r"rules\[0\]\.match"):
        parse_rules({"rules": [{"team": "a", "match": {}}]})
    with pytest.raises(AllocationConfigError, match="accountz"):
        parse_rules({"rules": [{"team": "a", "match": {"accountz": ["1"]}}]})
    with pytest.raises(AllocationConfigError, match="percentages only apply"):
        parse_rules(
            {
                "shared": [
                    {"name": "x", "match": {"services": ["s"]}, "method": "even", "percentages": {"a": 100}}
                ]
            }
        )


def test_rules_file_reference(tmp_path):
    from finops.allocation.rules import rules_from_config

    f = tmp_path / "r.yaml"
    f.write_text("unallocated: {mode: spread, method: even}\n")
    assert rules_from_config({"rules_file": str(f)}).unallocated.mode == "spread"
    with pytest.raises(AllocationConfigError, match="not found"):
        rules_from_config({"rules_file": str(tmp_path / "missing.yaml")})

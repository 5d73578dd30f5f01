"""Allocation rules from finops.yaml `allocation:` (inline, or `rules_file:` relative to the
repo root), defaulting to include/config/allocation.yaml when the section is empty."""

from __future__ import annotations

from finops.allocation.rules import AllocationRules, load_rules, rules_from_config
from finops.paths import REPO_ROOT, include_dir


def allocation_rules(section: dict | None = None) -> AllocationRules:
    if section is None:
        from finops.config import get_config

        section = get_config().allocation
    if section:
        return rules_from_config(section, base_dir=REPO_ROOT)
    default = include_dir() / "config" / "allocation.yaml"
    return load_rules(default) if default.exists() else AllocationRules()

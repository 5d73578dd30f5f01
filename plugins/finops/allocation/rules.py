"""Allocation rules (YAML -> pydantic), validated with messages that name the key path.

Shape (see include/config/allocation.yaml):

    tag_keys:           # canonical key -> aliases as providers spell them
      team: [Team, team, "user:team", user_team]
    teams:              # known teams and their cost centres
      - {name: ml-research, cost_centre: CC-100}
    rules:              # first match wins, for rows whose tags name no team
      - {team: ml-research, match: {accounts: ["111111111111"]}}
    shared:             # pools split over teams instead of charged to one
      - {name: support, match: {services: ["AWS Support"]}, method: proportional}
    unallocated: {mode: bucket}   # or {mode: spread, method: proportional | even}
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from finops.exceptions import ConfigError

UNALLOCATED = "unallocated"
_TEAM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


class AllocationConfigError(ConfigError):
    """An allocation rules problem, phrased as `path.to.key: reason`."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Match(_Model):
    """All given criteria must hold (AND); a list means any of its values (OR)."""

    accounts: list[str] = []  # BillingAccountId or SubAccountId (AWS account)
    projects: list[str] = []  # GCP project = SubAccountId
    subscriptions: list[str] = []  # Azure subscription = SubAccountId
    providers: list[str] = []
    services: list[str] = []
    service_categories: list[str] = []
    tags: dict[str, list[str] | str] = {}  # canonical or raw tag key -> accepted values; "*" = any

    @model_validator(mode="after")
    def _not_empty(self) -> Match:
        if not any(
            (
                self.accounts,
                self.projects,
                self.subscriptions,
                self.providers,
                self.services,
                self.service_categories,
                self.tags,
            )
        ):
            raise ValueError("match needs at least one criterion")
        return self


class Team(_Model):
    name: str
    cost_centre: str | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _TEAM.match(v):
            raise ValueError("team names are 1-63 chars of letters, digits, '_', '.', '-'")
        return v


class Rule(_Model):
    team: str
    match: Match


class SharedPool(_Model):
    name: str
    match: Match
    method: Literal["even", "proportional", "fixed"] = "proportional"
    teams: list[str] = []  # even / proportional: recipients (default: every team with direct cost)
    percentages: dict[str, Decimal] = {}  # fixed: team -> percent, summing to exactly 100

    @model_validator(mode="after")
    def _fixed(self) -> SharedPool:
        if self.method == "fixed":
            if not self.percentages:
                raise ValueError("method 'fixed' needs percentages")
            total = sum(self.percentages.values(), Decimal(0))
            if total != 100:
                raise ValueError(f"percentages must sum to 100, got {total}")
            if any(p < 0 for p in self.percentages.values()):
                raise ValueError("percentages must be >= 0")
        elif self.percentages:
            raise ValueError(f"percentages only apply to method 'fixed', not {self.method!r}")
        return self


class Unallocated(_Model):
    mode: Literal["bucket", "spread"] = "bucket"
    bucket: str = UNALLOCATED
    method: Literal["even", "proportional"] = "proportional"  # for mode 'spread'


DEFAULT_TAG_KEYS: dict[str, list[str]] = {
    "team": ["team", "Team", "TEAM", "user:team", "user:Team", "user_team", "team_name"],
    "cost_centre": [
        "cost_centre",
        "cost_center",
        "CostCenter",
        "CostCentre",
        "user:cost_center",
        "user:CostCenter",
    ],
}


class AllocationRules(_Model):
    tag_keys: dict[str, list[str]] = Field(default_factory=lambda: dict(DEFAULT_TAG_KEYS))
    teams: list[Team] = []
    rules: list[Rule] = []
    shared: list[SharedPool] = []
    unallocated: Unallocated = Unallocated()
    gpu_models: dict[str, str] = {}  # extra instance-type prefix -> GPU model

    @model_validator(mode="after")
    def _teams_known(self) -> AllocationRules:
        if "team" not in self.tag_keys:
            raise ValueError("tag_keys needs a 'team' entry (the aliases of the team tag)")
        known = {t.name for t in self.teams}
        if len(known) != len(self.teams):
            raise ValueError("teams: a team name is listed twice")
        if known:
            for i, r in enumerate(self.rules):
                if r.team not in known:
                    raise ValueError(f"rules[{i}].team: unknown team {r.team!r}; known: {sorted(known)}")
            for i, s in enumerate(self.shared):
                for t in [*s.teams, *s.percentages]:
                    if t not in known:
                        raise ValueError(
                            f"shared[{i}] ({s.name}): unknown team {t!r}; known: {sorted(known)}"
                        )
        return self

    def cost_centre(self, team: str) -> str | None:
        for t in self.teams:
            if t.name == team:
                return t.cost_centre
        return None


def _fmt_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


def parse_rules(data: Any, origin: str = "allocation") -> AllocationRules:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise AllocationConfigError(f"{origin}: (root): expected a mapping, got {type(data).__name__}")
    try:
        return AllocationRules.model_validate(data)
    except ValidationError as e:
        lines = [f"{origin}: {_fmt_loc(err['loc'])}: {err['msg']}" for err in e.errors()]
        raise AllocationConfigError("\n".join(lines)) from None


def load_rules(path: str | Path) -> AllocationRules:
    from finops.config import load_yaml

    p = Path(path)
    if not p.exists():
        raise AllocationConfigError(f"{p}: allocation rules file not found")
    return parse_rules(load_yaml(p, AllocationConfigError), origin=str(p))


def rules_from_config(section: dict[str, Any], base_dir: Path | None = None) -> AllocationRules:
    """finops.yaml `allocation:` either inlines the rules or names a file with `rules_file`."""
    section = dict(section or {})
    rules_file = section.pop("rules_file", None)
    if rules_file:
        if section:
            raise AllocationConfigError("allocation: give either rules_file or inline rules, not both")
        p = Path(rules_file)
        if not p.is_absolute() and base_dir is not None:
            p = base_dir / p
        return load_rules(p)
    return parse_rules(section)

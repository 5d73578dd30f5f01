"""finops.yaml `budgets:` section. Validated when the file is loaded (finops.config), so a bad
key or value fails naming it: `finops.yaml: budgets.items[0].amount: Input should be greater
than 0`.

    budgets:
      thresholds: {actual: [50, 80, 100], forecast: [80, 100]}   # % of the amount (defaults)
      items:
        - {name: ml-research, team: ml-research, amount: 20000, currency: USD}
        - {name: ml-research-gpu, team: ml-research, kind: gpu, amount: 12000}
        - {name: search-project, project: search, amount: 5000, notify_team: search-eng}
        - {name: prod-account, account: "123456789012", amount: 30000.50, thresholds: {forecast: [90, 100, 120]}}
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")
Scope = Literal["team", "project", "account"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _pcts(v: list[int]) -> list[int]:
    if len(set(v)) != len(v):
        raise ValueError("thresholds must not repeat")
    return sorted(v)


class Thresholds(_Model):
    """Percentages of the budget amount. `actual`: spend so far; `forecast`: the month-end
    point forecast (the early warning, while there is still time to act)."""

    actual: list[int] = Field(default=[50, 80, 100], description="% of the amount, 1-1000")
    forecast: list[int] = Field(default=[80, 100], description="% of the amount, 1-1000")

    @field_validator("actual", "forecast")
    @classmethod
    def _valid(cls, v: list[int]) -> list[int]:
        if any(p < 1 or p > 1000 for p in v):
            raise ValueError("each threshold is a percentage of the amount between 1 and 1000")
        return _pcts(v)


class Budget(_Model):
    name: str = Field(description="unique; a-z, 0-9, '_', '.', '-'")
    team: str | None = Field(default=None, description="showback team")
    project: str | None = Field(default=None, description="value of the project tag (canonical key)")
    account: str | None = Field(default=None, description="sub-account / project / subscription id")
    kind: Literal["total", "gpu"] = Field(default="total", description="gpu: the team's GPU line only")
    amount: Decimal = Field(gt=0, max_digits=28, decimal_places=10, description="per calendar month")
    currency: str = Field(default="USD", pattern=r"^[A-Z]{3}$")
    cost_view: Literal["amortised", "billed"] = "amortised"
    thresholds: Thresholds | None = Field(default=None, description="default: budgets.thresholds")
    notify_team: str | None = Field(default=None, description="route alerts as this team (default: `team`)")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(
                "must be 1-63 chars of a-z, 0-9, '_', '.' or '-', starting with a letter or digit"
            )
        return v

    @field_validator("team", "project", "account", "notify_team")
    @classmethod
    def _text(cls, v: str | None) -> str | None:
        if v is not None and (not v.strip() or len(v) > 200 or any(ord(c) < 32 for c in v)):
            raise ValueError("must be 1-200 printable characters")
        return v

    @model_validator(mode="after")
    def _one_scope(self) -> Budget:
        given = [s for s in ("team", "project", "account") if getattr(self, s) is not None]
        if len(given) != 1:
            raise ValueError(f"set exactly one of team, project, account (got {', '.join(given) or 'none'})")
        if self.kind == "gpu" and self.team is None:
            raise ValueError("kind 'gpu' needs a team (the GPU line comes from the team's showback)")
        return self

    @property
    def scope(self) -> Scope:
        return "team" if self.team is not None else ("project" if self.project is not None else "account")

    @property
    def scope_value(self) -> str:
        return str(self.team or self.project or self.account)

    @property
    def route_team(self) -> str | None:
        """The team whose alert routes get this budget's alerts (None: the default route)."""
        return self.notify_team or self.team


class BudgetsConfig(_Model):
    thresholds: Thresholds = Thresholds()
    project_tag_key: str = Field(default="project", description="canonical tag key of `project` budgets")
    items: list[Budget] = []

    @model_validator(mode="after")
    def _unique(self) -> BudgetsConfig:
        seen: set[str] = set()
        for b in self.items:
            if b.name in seen:
                raise ValueError(f"budget name {b.name!r} is used twice; names must be unique")
            seen.add(b.name)
        return self

    def thresholds_of(self, b: Budget) -> Thresholds:
        return b.thresholds or self.thresholds

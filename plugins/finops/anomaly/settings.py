"""finops.yaml `anomaly:` section: monitors and their thresholds (AWS Cost Anomaly Detection
style: an absolute $ floor AND a % threshold per monitor, plus our robust z on the log scale,
and the share spend must fall by for an outage alert).

The defaults are the detector's (finops.anomaly.detect.Thresholds), chosen in
bench/anomaly.py by tuning on half of its regimes and judging on the other half."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from finops.anomaly.detect import Thresholds
from finops.exceptions import ConfigError

_DEFAULT = Thresholds()

MonitorType = Literal["provider", "service", "account", "team", "tag"]
# Where a monitor's daily series comes from. "showback": showback_daily, which finops_showback
# rewrites after each billing load, so those monitors run in finops_anomalies_teams, scheduled on
# finops_showback's own asset; the others read focus_costs and run in finops_anomalies, on the
# billing asset, whether or not showback succeeds.
Source = Literal["focus_costs", "showback"]
SHOWBACK_MONITORS = frozenset({"team"})


def source_of(monitor: str) -> Source:
    """The source of a monitor, by its type or by the name stored in anomalies.monitor_type."""
    return "showback" if monitor in SHOWBACK_MONITORS else "focus_costs"


class AnomalyConfigError(ConfigError):
    pass


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Monitor(_Model):
    type: MonitorType
    tag_key: str | None = Field(default=None, description="for type 'tag': canonical tag key, e.g. project")
    abs_floor: float | None = Field(
        default=None, ge=0, description="$ above expected, default from anomaly.abs_floor"
    )
    pct: float | None = Field(default=None, ge=0, description="share above expected (0.35 = 35 %)")
    z: float | None = Field(default=None, gt=0)
    drop_pct: float | None = Field(
        default=None, gt=0, le=1, description="share spend must fall by (0.7 = 70 %)"
    )

    @model_validator(mode="after")
    def _tag(self) -> Monitor:
        if (self.type == "tag") != bool(self.tag_key):
            raise ValueError("tag_key is required for type 'tag' and only allowed there")
        return self

    @property
    def name(self) -> str:
        return f"tag:{self.tag_key}" if self.type == "tag" else self.type

    @property
    def source(self) -> Source:
        return source_of(self.type)


class AnomalySettings(_Model):
    cost_view: Literal["billed", "amortised"] = "amortised"
    lookback_days: int = Field(default=120, ge=35, le=730)
    alert_window_days: int = Field(default=3, ge=1, le=31, description="only runs ending this recently alert")
    gap_days: int = Field(default=2, ge=0, le=7)
    abs_floor: float = Field(default=_DEFAULT.abs_floor, ge=0)
    pct: float = Field(default=_DEFAULT.pct, ge=0)
    z: float = Field(default=_DEFAULT.z, gt=0, description="robust z-score on the log scale")
    drop_pct: float = Field(
        default=_DEFAULT.drop_pct,
        gt=0,
        le=1,
        description="an outage alerts when spend falls by this share (0.7 = 70 %)",
    )
    top_contributors: int = Field(default=5, ge=1, le=20)
    monitors: list[Monitor] = Field(
        default_factory=lambda: [
            Monitor(type="provider"),
            Monitor(type="service"),
            Monitor(type="account"),
            Monitor(type="team"),
        ]
    )

    def thresholds(self, m: Monitor) -> tuple[float, float, float]:
        return (
            self.abs_floor if m.abs_floor is None else m.abs_floor,
            self.pct if m.pct is None else m.pct,
            self.z if m.z is None else m.z,
        )

    def drop_pct_for(self, m: Monitor) -> float:
        return self.drop_pct if m.drop_pct is None else m.drop_pct


def parse_settings(data: Any) -> AnomalySettings:
    try:
        return AnomalySettings.model_validate(data or {})
    except ValidationError as e:
        lines = []
        for err in e.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "(root)"
            lines.append(f"anomaly.{loc}: {err['msg']}")
        raise AnomalyConfigError("\n".join(lines)) from None


def anomaly_settings(section: dict | None = None) -> AnomalySettings:
    if section is None:
        from finops.config import get_config

        section = get_config().anomaly
    return parse_settings(section)

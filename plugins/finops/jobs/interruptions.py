"""Spot interruption rates for the planner, from what the price jobs store: AWS Spot Placement
Scores and spot price history. Pure: plain values in, rates out.

No cloud publishes an hourly interruption rate, so the rate is the planner's default
(`base_rate_per_h`, the rate a median place gets) scaled by two signals:

- placement score (AWS, 1-10; higher = more spare capacity, fewer interruptions): a geometric
  scale around the median score 5.5, `score_span ** ((5.5 - score) / 4.5)`, so score 10 gives
  base / span and score 1 base x span (span 4: 0.0125 and 0.2 per hour around 0.05). A region
  scored per AZ takes the mean of its AZs' scores (the launch does not choose its AZ). Scores
  older than `max_score_age_days` are ignored.
- price pressure: the spot price now over its lowest in the window (the cheapest zone's
  series, the zone `latest_prices` quotes). AWS spot prices follow long-term supply and
  demand: a price well above its window low means the pool is tighter than it was. The
  factor is capped at `max_price_factor`; a series with one point gives 1.

With neither signal a place gets no rate of its own (None): the planner's default applies.
The result is clamped to [`floor_per_h`, `cap_per_h`].
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

Key = tuple[str, str, str]  # provider, region, instance type


@dataclass(frozen=True)
class RateSettings:
    base_rate_per_h: float = 0.05  # the planner's default_spot_rate_per_h
    score_span: float = 4.0
    max_price_factor: float = 3.0
    max_score_age_days: float = 14.0
    floor_per_h: float = 0.001
    cap_per_h: float = 1.0


@dataclass(frozen=True)
class Score:
    provider: str
    region: str
    zone_id: str
    instance_type: str
    score: float
    observed_at: datetime


@dataclass(frozen=True)
class SpotPoint:
    provider: str
    region: str
    zone: str
    instance_type: str
    price_per_hour: Decimal
    observed_at: datetime


@dataclass(frozen=True)
class Rate:
    rate_per_h: float
    why: str


def score_factor(score: float, span: float = 4.0) -> float:
    """span ** ((5.5 - score) / 4.5): 1 at the median score, 1/span at 10, span at 1."""
    s = min(max(float(score), 1.0), 10.0)
    return float(span ** ((5.5 - s) / 4.5))


def price_factor(points: Iterable[SpotPoint], cap: float = 3.0) -> float | None:
    """The cheapest zone's latest spot price over its lowest in the series (>= 1, capped);
    None with fewer than two points in that zone."""
    by_zone: dict[str, list[SpotPoint]] = {}
    for p in points:
        by_zone.setdefault(p.zone, []).append(p)
    if not by_zone:
        return None
    latest = {z: max(ps, key=lambda p: p.observed_at) for z, ps in by_zone.items()}
    zone = min(latest, key=lambda z: (latest[z].price_per_hour, z))
    series = by_zone[zone]
    low = min(p.price_per_hour for p in series)
    if len(series) < 2 or low <= 0:
        return None
    return min(max(float(latest[zone].price_per_hour / low), 1.0), cap)


def interruption_rates(
    scores: Iterable[Score], history: Iterable[SpotPoint], now: datetime, settings: RateSettings | None = None
) -> dict[Key, Rate]:
    """(provider, region, instance type) -> the spot interruption rate per hour and why."""
    cfg = settings or RateSettings()
    oldest = now - timedelta(days=cfg.max_score_age_days)
    by_key_scores: dict[Key, list[Score]] = {}
    for s in scores:
        if s.observed_at >= oldest:
            by_key_scores.setdefault((s.provider, s.region, s.instance_type), []).append(s)
    by_key_prices: dict[Key, list[SpotPoint]] = {}
    for p in history:
        by_key_prices.setdefault((p.provider, p.region, p.instance_type), []).append(p)
    out: dict[Key, Rate] = {}
    for key in sorted(set(by_key_scores) | set(by_key_prices)):
        rate, why = cfg.base_rate_per_h, []
        found = by_key_scores.get(key)
        if found:
            region_wide = [s.score for s in found if s.zone_id == ""]
            vals = region_wide or [s.score for s in found]
            score = sum(vals) / len(vals)
            rate *= score_factor(score, cfg.score_span)
            why.append(f"placement score {score:g}" + ("" if region_wide else f" (mean of {len(vals)} AZs)"))
        pf = price_factor(by_key_prices.get(key, []), cfg.max_price_factor)
        if pf is not None:
            rate *= pf
            why.append(f"spot price {pf:.2f}x its window low")
        if not why:
            continue
        out[key] = Rate(min(max(rate, cfg.floor_per_h), cfg.cap_per_h), ", ".join(why))
    return out

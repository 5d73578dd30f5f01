"""The questions users ask of the price history, each one documented function call.

    spot_price_history(wh, "aws", "p5.48xlarge", region="us-east-1", days=30)
    cheapest_offers(wh, "H100", gpu_count=8)                 # across clouds, spot and on-demand
    spot_discount_by_region(wh, provider="azure")
    spot_placement_risk(wh, "p5.48xlarge", region="us-east-1")   # AWS Spot Placement Scores
    offered_places(wh)                                        # (provider, region) -> types offered
    catalog_drift(wh)                                         # GPU types no rule classifies

Every value is a bound parameter; prices come back as Decimal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING

from finops.prices.gpu_models import normalise_gpu
from finops.prices.records import utcnow

if TYPE_CHECKING:
    from finops.warehouse.base import Warehouse


@dataclass(frozen=True)
class PricePoint:
    provider: str
    region: str
    zone: str
    instance_type: str
    price_per_hour: Decimal
    currency: str
    observed_at: datetime


def spot_price_history(
    wh: Warehouse, provider: str, instance_type: str, region: str | None = None, days: int = 30
) -> list[PricePoint]:
    """Spot price points of one instance type over the last `days`, oldest first, per zone.

    The point in effect when the window opens is included too (with its own, older timestamp),
    so the series answers "what did it cost on day 1 of the window"."""
    since = utcnow() - timedelta(days=days)
    region_sql = " AND region = ?" if region else ""
    base = [provider, instance_type] + ([region] if region else [])
    rows = wh.query(
        f"""SELECT provider, region, zone, instance_type, price_per_hour, currency, observed_at FROM spot_prices
            WHERE provider = ? AND instance_type = ?{region_sql} AND observed_at >= ?
            UNION ALL
            SELECT provider, region, zone, instance_type, price_per_hour, currency, observed_at FROM (
                SELECT provider, region, zone, instance_type, price_per_hour, currency, observed_at,
                       ROW_NUMBER() OVER (PARTITION BY region, zone ORDER BY observed_at DESC) AS rn
                FROM spot_prices WHERE provider = ? AND instance_type = ?{region_sql} AND observed_at < ?
            ) b WHERE rn = 1
            ORDER BY observed_at, region, zone""",
        [*base, since, *base, since],
    )
    return [PricePoint(r[0], r[1], r[2], r[3], Decimal(str(r[4])), r[5], r[6]) for r in rows]


def _fetched_within(alias: str, max_age_days: int | None) -> tuple[str, list[object]]:
    """` AND ...` keeping rows of `alias` whose region was fetched successfully within
    `max_age_days` (price_fetch_log): series store changes only, so an old observed_at alone does
    not mean stale, and a region no longer fetched at all (dropped from finops.yaml) is. None: no filter."""
    if max_age_days is None:
        return "", []
    return (
        f" AND EXISTS (SELECT 1 FROM price_fetch_log f WHERE f.provider = {alias}.provider"
        f" AND f.region = {alias}.region AND f.fetched_at >= ?)",
        [utcnow() - timedelta(days=max_age_days)],
    )


@dataclass(frozen=True)
class Offer:
    provider: str
    region: str
    zone: str
    instance_type: str
    pricing_model: str
    price_per_hour: Decimal
    currency: str
    observed_at: datetime
    gpu_model: str
    gpu_count: int
    gpu_memory_gib: float | None
    vcpus: int | None
    memory_gib: float | None
    interconnect: str | None
    gpu_divisor: int = 1  # the VM gets gpu_count / gpu_divisor GPUs (1/6 of an A10: 1 and 6)

    @property
    def gpus(self) -> Fraction:
        """GPUs the VM gets, exactly: Fraction(1, 6) for a sixth of one."""
        return Fraction(self.gpu_count, self.gpu_divisor or 1)

    @property
    def price_per_gpu_hour(self) -> Decimal:
        """The price of one whole GPU-hour: a sixth of an A10 at P costs 6 x P per A10-hour."""
        return self.price_per_hour * (self.gpu_divisor or 1) / self.gpu_count


# An offer counts as available unless the spec APIs listed its (provider, region) and the type
# is not offered there (unrestricted, in the price's zone when the price has one). A region
# never checked (Lambda's `global`, a provider whose spec API is not configured) is not judged.
_AVAILABLE_SQL = """ AND (NOT EXISTS (SELECT 1 FROM instance_availability a0
                          WHERE a0.provider = lp.provider AND a0.region = lp.region)
                     OR EXISTS (SELECT 1 FROM instance_availability a1
                          WHERE a1.provider = lp.provider AND a1.region = lp.region
                            AND a1.instance_type = lp.instance_type AND a1.restriction IS NULL
                            AND (lp.zone = '' OR a1.zone = lp.zone)))"""


def cheapest_offers(
    wh: Warehouse,
    gpu_model: str,
    gpu_count: int = 1,
    pricing: Sequence[str] = ("spot", "ondemand"),
    currency: str = "USD",
    limit: int = 20,
    max_age_days: int | None = 7,
    gpu_divisor: int = 1,
) -> list[Offer]:
    """Current offers of exactly `gpu_count` x `gpu_model` across clouds, cheapest first.

    `gpu_model` takes any spelling ("H100", "nvidia-h100-80gb", "A100 80GB"). Regions whose
    source has not been fetched successfully within `max_age_days` (price_fetch_log) are left
    out (None keeps all); prices their provider withdrew are never in latest_prices; a type the
    spec APIs say its region (or zone) does not offer is left out. Whole GPUs by default: a
    partitioned size is asked for with `gpu_divisor` (gpu_count=1, gpu_divisor=6: 1/6 GPU)."""
    model = normalise_gpu(gpu_model) or gpu_model
    pricing = [p for p in pricing if p in ("spot", "ondemand")]
    if not pricing:
        return []
    marks = ", ".join("?" for _ in pricing)
    age_sql, age_params = _fetched_within("lp", max_age_days)
    params: list[object] = [model, gpu_count, gpu_divisor, *pricing, currency, *age_params, limit]
    rows = wh.query(
        f"""SELECT lp.provider, lp.region, lp.zone, lp.instance_type, lp.pricing_model, lp.price_per_hour,
                   lp.currency, lp.observed_at, c.gpu_model, c.gpu_count, c.gpu_memory_gib, c.vcpus,
                   c.memory_gib, c.interconnect, COALESCE(c.gpu_divisor, 1)
            FROM latest_prices lp
            JOIN instance_catalog c ON c.provider = lp.provider AND c.instance_type = lp.instance_type
            WHERE c.gpu_model = ? AND c.gpu_count = ? AND COALESCE(c.gpu_divisor, 1) = ?
              AND lp.pricing_model IN ({marks}) AND lp.currency = ?{age_sql}{_AVAILABLE_SQL}
            ORDER BY lp.price_per_hour, lp.provider, lp.region, lp.instance_type, lp.pricing_model
            LIMIT ?""",
        params,
    )
    return [
        Offer(
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            Decimal(str(r[5])),
            r[6],
            r[7],
            r[8],
            int(r[9]),
            r[10],
            r[11],
            r[12],
            r[13],
            int(r[14]),
        )
        for r in rows
    ]


def offered_places(wh: Warehouse, provider: str | None = None) -> dict[tuple[str, str], set[str]]:
    """(provider, region) -> instance types the spec APIs list there without a restriction.
    A (provider, region) absent from the map was never checked: `bench.pricing` does not judge it."""
    rows = wh.query(
        "SELECT provider, region, instance_type, restriction FROM instance_availability"
        + (" WHERE provider = ?" if provider else ""),
        [provider] if provider else [],
    )
    out: dict[tuple[str, str], set[str]] = {}
    for p, region, itype, restriction in rows:
        types = out.setdefault((p, region), set())
        if restriction is None:
            types.add(itype)
    return out


@dataclass(frozen=True)
class DriftEntry:
    provider: str
    instance_type: str
    gpu_name: str | None
    gpu_count: int | None
    source: str | None
    updated_at: datetime


def catalog_drift(wh: Warehouse, provider: str | None = None) -> list[DriftEntry]:
    """Instance types a spec API lists with a GPU that no rule classifies (gpu_model unknown),
    or with a GPU model but no count: they are in the catalog, unpriced per GPU, until
    gpu_models learns the name (or the count)."""
    rows = wh.query(
        """SELECT provider, instance_type, gpu_name, gpu_count, source, updated_at FROM instance_catalog
           WHERE COALESCE(source, '') <> 'static'
             AND ((gpu_model IS NULL AND (gpu_count > 0 OR gpu_name IS NOT NULL))
                  OR (gpu_model IS NOT NULL AND gpu_count IS NULL))"""
        + (" AND provider = ?" if provider else "")
        + " ORDER BY provider, instance_type",
        [provider] if provider else [],
    )
    return [DriftEntry(r[0], r[1], r[2], None if r[3] is None else int(r[3]), r[4], r[5]) for r in rows]


@dataclass(frozen=True)
class SpotDiscount:
    provider: str
    region: str
    instance_type: str
    spot_price: Decimal
    ondemand_price: Decimal
    currency: str

    @property
    def discount(self) -> Decimal:
        """1 - spot / on-demand (0.7 = spot is 70% cheaper)."""
        return Decimal(1) - self.spot_price / self.ondemand_price


def spot_discount_by_region(
    wh: Warehouse, provider: str | None = None, instance_type: str | None = None, max_age_days: int | None = 7
) -> list[SpotDiscount]:
    """Latest spot (cheapest zone) vs latest on-demand price per region and instance type,
    biggest discount first. Regions not fetched within `max_age_days` are left out, as in
    `cheapest_offers`."""
    where: list[str] = []
    params: list[object] = []
    if provider:
        where.append("s.provider = ?")
        params.append(provider)
    if instance_type:
        where.append("s.instance_type = ?")
        params.append(instance_type)
    age_sql, age_params = _fetched_within("s", max_age_days)
    params += age_params
    rows = wh.query(
        f"""SELECT s.provider, s.region, s.instance_type, s.price_per_hour, o.price_per_hour, s.currency
            FROM latest_prices s
            JOIN latest_prices o ON o.provider = s.provider AND o.region = s.region
                 AND o.instance_type = s.instance_type AND o.os = s.os AND o.currency = s.currency
                 AND o.pricing_model = 'ondemand'
            WHERE s.pricing_model = 'spot' AND o.price_per_hour > 0{"".join(" AND " + w for w in where)}{age_sql}
            ORDER BY s.price_per_hour / o.price_per_hour, s.provider, s.region, s.instance_type""",
        params,
    )
    return [SpotDiscount(r[0], r[1], r[2], Decimal(str(r[3])), Decimal(str(r[4])), r[5]) for r in rows]


@dataclass(frozen=True)
class PlacementRisk:
    region: str
    zone_id: str
    instance_type: str
    score: int  # 1-10: AWS Spot Placement Score; low = capacity scarce, interruptions likely
    observed_at: datetime


def spot_placement_risk(
    wh: Warehouse, instance_type: str, region: str | None = None, target_capacity: int = 1
) -> list[PlacementRisk]:
    """The latest AWS Spot Placement Score per region / AZ for an instance type, riskiest first."""
    region_sql = " AND region = ?" if region else ""
    params: list[object] = [instance_type, target_capacity] + ([region] if region else [])
    rows = wh.query(
        f"""SELECT region, zone_id, instance_type, score, observed_at FROM (
                SELECT region, zone_id, instance_type, score, observed_at,
                       ROW_NUMBER() OVER (PARTITION BY region, zone_id ORDER BY observed_at DESC) AS rn
                FROM spot_placement_scores
                WHERE provider = 'aws' AND instance_type = ? AND target_capacity = ?{region_sql}
            ) s WHERE rn = 1 ORDER BY score, region, zone_id""",
        params,
    )
    return [PlacementRisk(r[0], r[1], r[2], int(r[3]), r[4]) for r in rows]

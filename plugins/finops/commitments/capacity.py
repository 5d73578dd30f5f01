"""AWS Capacity Block offerings the price jobs stored (capacity_block_offerings, migration 802)
priced against the latest on-demand price of the same instance type and region (latest_prices).
Advice only: the offerings are described, never purchased."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from finops.commitments.advice import CapacityBlockAdvice, by_price, price_capacity_block


def on_demand_prices(wh: Any, region: str) -> dict[str, Decimal]:
    """instance type -> the latest on-demand Linux $/h of AWS in `region` (the cheapest zone row)."""
    out: dict[str, Decimal] = {}
    for itype, price in wh.query(
        "SELECT instance_type, MIN(price_per_hour) FROM latest_prices WHERE provider = 'aws' "
        "AND pricing_model = 'ondemand' AND region = ? AND os = 'linux' AND currency = 'USD' GROUP BY instance_type",
        [region],
    ):
        out[itype] = Decimal(price)
    return out


def stored_capacity_blocks(wh: Any) -> list[tuple[str, CapacityBlockAdvice]]:
    """(region, priced offering) for every stored offering, cheapest per instance-hour first
    within each region; regions in name order."""
    if not wh.table_exists("capacity_block_offerings"):
        return []
    by_region: dict[str, list[tuple]] = {}
    for region, *row in wh.query(
        "SELECT region, offering_id, instance_type, instance_count, duration_hours, upfront_fee, currency, "
        "start_date FROM capacity_block_offerings ORDER BY region, offering_id"
    ):
        by_region.setdefault(region, []).append(tuple(row))
    out = []
    for region in sorted(by_region):
        od = on_demand_prices(wh, region)
        priced = (
            price_capacity_block(
                oid, itype, int(count), int(hours), Decimal(str(fee)), str(cur or "USD"),
                None if start is None else start.isoformat(), od,
            )
            for oid, itype, count, hours, fee, cur, start in by_region[region]
        )  # fmt: skip
        out += [(region, a) for a in by_price(priced)]
    return out


def block_row(region: str, a: CapacityBlockAdvice) -> dict[str, Any]:
    """One priced offering as the task result, the page and the report show it (money as text)."""
    on_demand_cost = (
        None
        if a.on_demand_per_instance_hour is None
        else a.on_demand_per_instance_hour * a.instance_count * a.hours
    )
    saving = a.saving_vs_on_demand
    return {
        "region": region,
        "offering_id": a.offering_id,
        "instance_type": a.instance_type,
        "instance_count": a.instance_count,
        "hours": a.hours,
        "start": a.start,
        "currency": a.currency,
        "upfront_fee": str(a.upfront_fee.quantize(Decimal("0.01"))),
        "per_instance_hour": str(a.per_instance_hour.quantize(Decimal("0.0001"))),
        "on_demand_per_instance_hour": None
        if a.on_demand_per_instance_hour is None
        else str(a.on_demand_per_instance_hour.quantize(Decimal("0.0001"))),
        "on_demand_cost": None if on_demand_cost is None else str(on_demand_cost.quantize(Decimal("0.01"))),
        "saving_vs_on_demand": None if saving is None else str(saving.quantize(Decimal("0.01"))),
    }

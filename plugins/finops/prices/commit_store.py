"""commitment_rates and capacity_block_offerings (migration 802): written by the price jobs,
read by the purchase advice (finops.commitments.rates, finops.commitments.store)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from finops.prices.capacity_blocks import CapacityBlockOffering
from finops.prices.commit_rates import CommitmentRate
from finops.prices.store import money

if TYPE_CHECKING:
    from finops.warehouse.base import Warehouse

_M = pa.decimal128(38, 10)
RATE_SCHEMA = pa.schema(
    [
        ("provider", pa.string()),
        ("product", pa.string()),
        ("term_years", pa.int32()),
        ("payment", pa.string()),
        ("region", pa.string()),
        ("instance_type", pa.string()),
        ("family", pa.string()),
        ("currency", pa.string()),
        ("on_demand_hourly", _M),
        ("commitment_hourly", _M),
        ("discount", _M),
        ("source", pa.string()),
        ("sku", pa.string()),
        ("observed_at", pa.timestamp("us")),
    ]
)
BLOCK_SCHEMA = pa.schema(
    [
        ("region", pa.string()),
        ("offering_id", pa.string()),
        ("instance_type", pa.string()),
        ("availability_zone", pa.string()),
        ("instance_count", pa.int32()),
        ("start_date", pa.timestamp("us")),
        ("end_date", pa.timestamp("us")),
        ("duration_hours", pa.int32()),
        ("upfront_fee", _M),
        ("currency", pa.string()),
        ("tenancy", pa.string()),
        ("fetched_at", pa.timestamp("us")),
    ]
)


def replace_rates(
    wh: Warehouse,
    provider: str,
    products: Sequence[str],
    regions: Sequence[str],
    rates: Iterable[CommitmentRate],
) -> int:
    """Replace the stored rates of (provider, product, region) for the products and regions
    this fetch answered for. A product whose answer held nothing keeps its rows (an empty
    answer is more likely a refused call than an offer withdrawn everywhere)."""
    rows = [r for r in rates if r.provider == provider and r.usable]
    answered = sorted({r.product for r in rows} & set(products))
    if not answered or not regions:
        return 0
    rows = [r for r in rows if r.product in answered and r.region in regions]
    pm, rm = ", ".join("?" for _ in answered), ", ".join("?" for _ in regions)
    table = pa.Table.from_pylist(
        [
            {
                "provider": r.provider,
                "product": r.product,
                "term_years": r.term_years,
                "payment": r.payment,
                "region": r.region,
                "instance_type": r.instance_type,
                "family": r.family,
                "currency": r.currency,
                "on_demand_hourly": money(r.on_demand_hourly),
                "commitment_hourly": money(r.commitment_hourly),
                "discount": money(r.discount),
                "source": r.source,
                "sku": r.sku,
                "observed_at": r.observed_at,
            }
            for r in rows
        ],
        schema=RATE_SCHEMA,
    )
    with wh.partition_lock("commitment_rates", {"provider": provider}):
        wh.execute(
            f"DELETE FROM commitment_rates WHERE provider = ? AND product IN ({pm}) AND region IN ({rm})",
            [provider, *answered, *regions],
        )
        return wh.insert_arrow("commitment_rates", table)


def replace_capacity_blocks(wh: Warehouse, region: str, offerings: Iterable[CapacityBlockOffering]) -> int:
    """Replace one region's stored offerings with this answer (an empty answer clears them:
    offerings come and go by the hour, and a stale one would be advice on capacity that is gone)."""
    rows = [o for o in offerings if o.region == region]
    table = pa.Table.from_pylist(
        [{**o.__dict__, "upfront_fee": money(o.upfront_fee)} for o in rows], schema=BLOCK_SCHEMA
    )
    with wh.partition_lock("capacity_block_offerings", {"region": region}):
        wh.execute("DELETE FROM capacity_block_offerings WHERE region = ?", [region])
        return wh.insert_arrow("capacity_block_offerings", table) if rows else 0

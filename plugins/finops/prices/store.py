"""Writing price rows to the warehouse: append-only time series with de-duplication.

Two kinds of sources, two de-duplication rules:
- `points` (AWS spot history): each point carries the provider's timestamp; a point already
  stored with the same key and timestamp is skipped, so re-fetching an overlapping window
  adds nothing.
- `changes` (snapshot APIs: Azure, GCP, Lambda, AWS Pricing): a row is stored only when the
  price differs from the latest stored one for that key, so a 6-hourly poll of an unchanged
  price list adds nothing and the table stays a list of price changes.

Because series are change-only, an old observed_at does not mean a price is gone. A fetch
records what its answer listed (`record_listing`: `price_presence`, one row per item, the newest
fetch that listed it) and what that answer is authoritative for (`price_coverage`, one row per
scope). The latest views (migration 101) leave out an item that a newer covering fetch no longer
lists: a withdrawn price is history, never "latest".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass, fields
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import TYPE_CHECKING, Literal

import pyarrow as pa

from finops.prices.records import CatalogEntry, PlacementScore, PriceRecord, TypeMatch, naive_utc, utcnow

if TYPE_CHECKING:
    from finops.prices.records import Offering
    from finops.warehouse.base import Warehouse

TABLES = {"spot": "spot_prices", "ondemand": "ondemand_prices"}
KEY = ("provider", "region", "zone", "instance_type", "os")
POINT_KEY = (*KEY, "observed_at")
_SCALE = Decimal("1e-10")

PRICE_SCHEMA = pa.schema(
    [
        ("provider", pa.string()),
        ("region", pa.string()),
        ("zone", pa.string()),
        ("instance_type", pa.string()),
        ("os", pa.string()),
        ("price_per_hour", pa.decimal128(38, 10)),
        ("currency", pa.string()),
        ("observed_at", pa.timestamp("us")),
        ("source", pa.string()),
        ("product", pa.string()),
        ("sku", pa.string()),
        ("effective_from", pa.timestamp("us")),
        ("details", pa.string()),
        ("fetched_at", pa.timestamp("us")),
    ]
)


def money(d: Decimal) -> Decimal:
    """The warehouse's DECIMAL(38,10) scale."""
    return d.quantize(_SCALE, rounding=ROUND_HALF_EVEN)


def _key(r: PriceRecord) -> tuple[str, ...]:
    return (r.provider, r.region, r.zone, r.instance_type, r.os)


def price_table(records: Sequence[PriceRecord], fetched_at: datetime | None = None) -> pa.Table:
    fetched = fetched_at or utcnow()
    rows = {
        "provider": [r.provider for r in records],
        "region": [r.region for r in records],
        "zone": [r.zone for r in records],
        "instance_type": [r.instance_type for r in records],
        "os": [r.os for r in records],
        "price_per_hour": [money(r.price_per_hour) for r in records],
        "currency": [r.currency for r in records],
        "observed_at": [naive_utc(r.observed_at) for r in records],
        "source": [r.source for r in records],
        "product": [r.product for r in records],
        "sku": [r.sku for r in records],
        "effective_from": [r.effective_from for r in records],
        "details": [r.details for r in records],
        "fetched_at": [fetched for _ in records],
    }
    return pa.table(rows, schema=PRICE_SCHEMA)


def _latest(wh: Warehouse, table: str, provider: str) -> dict[tuple[str, ...], tuple[Decimal, str]]:
    rows = wh.query(
        f"""SELECT provider, region, zone, instance_type, os, price_per_hour, currency FROM (
                SELECT provider, region, zone, instance_type, os, price_per_hour, currency,
                       ROW_NUMBER() OVER (PARTITION BY provider, region, zone, instance_type, os
                                          ORDER BY observed_at DESC) AS rn
                FROM {table} WHERE provider = ?) t WHERE rn = 1""",
        [provider],
    )
    return {tuple(r[:5]): (money(Decimal(str(r[5]))), r[6]) for r in rows}


def append_prices(
    wh: Warehouse, records: Iterable[PriceRecord], mode: Literal["points", "changes"]
) -> dict[str, int]:
    """Append new points / changed prices; returns rows inserted per table."""
    by_model: dict[str, list[PriceRecord]] = {"spot": [], "ondemand": []}
    for r in records:
        by_model[r.pricing_model].append(r)
    inserted: dict[str, int] = {}
    for model, recs in by_model.items():
        table = TABLES[model]
        if not recs:
            inserted[table] = 0
            continue
        if mode == "changes":
            recs = _changed_only(wh, table, recs)
        else:
            uniq: dict[tuple, PriceRecord] = {}
            for r in recs:
                uniq.setdefault((*_key(r), naive_utc(r.observed_at)), r)
            recs = list(uniq.values())
        inserted[table] = wh.insert_arrow(table, price_table(recs), dedup_keys=POINT_KEY) if recs else 0
    return inserted


def _changed_only(wh: Warehouse, table: str, recs: list[PriceRecord]) -> list[PriceRecord]:
    latest: dict[tuple[str, ...], tuple[Decimal, str]] = {}
    for provider in {r.provider for r in recs}:
        latest.update(_latest(wh, table, provider))
    out: dict[tuple[str, ...], PriceRecord] = {}
    for r in recs:
        k = _key(r)
        if k in out:
            continue  # first row per key in a batch wins
        if latest.get(k) == (money(r.price_per_hour), r.currency):
            continue
        out[k] = r
    return list(out.values())


CATALOG_SCHEMA = pa.schema(
    [
        ("provider", pa.string()),
        ("instance_type", pa.string()),
        ("gpu_model", pa.string()),
        ("gpu_count", pa.int32()),
        ("gpu_memory_gib", pa.float64()),
        ("vcpus", pa.int32()),
        ("memory_gib", pa.float64()),
        ("interconnect", pa.string()),
        ("source", pa.string()),
        ("updated_at", pa.timestamp("us")),
        ("gpu_divisor", pa.int32()),
        ("gpu_name", pa.string()),
    ]
)


def upsert_catalog(wh: Warehouse, entries: Iterable[CatalogEntry]) -> int:
    """Insert or replace instance specs by (provider, instance_type)."""
    uniq = {(e.provider, e.instance_type): e for e in entries}
    if not uniq:
        return 0
    cols = {f.name: [getattr(e, f.name) for e in uniq.values()] for f in CATALOG_SCHEMA}
    return wh.upsert_arrow(
        "instance_catalog", pa.table(cols, schema=CATALOG_SCHEMA), keys=("provider", "instance_type")
    )


AVAILABILITY_SCHEMA = pa.schema(
    [
        ("provider", pa.string()),
        ("region", pa.string()),
        ("zone", pa.string()),
        ("instance_type", pa.string()),
        ("restriction", pa.string()),
        ("source", pa.string()),
        ("checked_at", pa.timestamp("us")),
        ("run_id", pa.string()),
    ]
)


def replace_availability(
    wh: Warehouse, provider: str, offers: Iterable[Offering], run_id: str | None = None
) -> int:
    """Replace the stored availability of each (provider, region) this answer listed anything
    in. A region the answer listed nothing for keeps its rows: an empty answer is more likely a
    glitch than a region that lost every GPU type."""
    uniq = {(o.region, o.zone, o.instance_type): o for o in offers if o.provider == provider}
    if not uniq:
        return 0
    now = utcnow()
    regions = sorted({r for r, _, _ in uniq})
    marks = ", ".join("?" for _ in regions)
    rows = sorted(uniq.values(), key=lambda o: (o.region, o.zone, o.instance_type))
    cols = {
        "provider": [provider] * len(rows),
        "region": [o.region for o in rows],
        "zone": [o.zone for o in rows],
        "instance_type": [o.instance_type for o in rows],
        "restriction": [o.restriction for o in rows],
        "source": [o.source for o in rows],
        "checked_at": [now] * len(rows),
        "run_id": [run_id] * len(rows),
    }
    with wh.partition_lock("instance_availability", {"provider": provider}):
        wh.execute(
            f"DELETE FROM instance_availability WHERE provider = ? AND region IN ({marks})",
            [provider, *regions],
        )
        return wh.insert_arrow("instance_availability", pa.table(cols, schema=AVAILABILITY_SCHEMA))


SCORE_SCHEMA = pa.schema(
    [
        ("provider", pa.string()),
        ("region", pa.string()),
        ("zone_id", pa.string()),
        ("instance_type", pa.string()),
        ("target_capacity", pa.int32()),
        ("single_az", pa.bool_()),
        ("score", pa.int32()),
        ("observed_at", pa.timestamp("us")),
    ]
)
SCORE_KEY = ("provider", "region", "zone_id", "instance_type", "target_capacity", "single_az", "observed_at")


def append_placement_scores(wh: Warehouse, scores: Iterable[PlacementScore]) -> int:
    scores = list(scores)
    if not scores:
        return 0
    cols = {f.name: [getattr(s, f.name) for s in scores] for f in SCORE_SCHEMA}
    return wh.insert_arrow("spot_placement_scores", pa.table(cols, schema=SCORE_SCHEMA), dedup_keys=SCORE_KEY)


def get_watermark(wh: Warehouse, provider: str, region: str, stream: str, item: str) -> datetime | None:
    rows = wh.query(
        "SELECT MAX(watermark) FROM price_watermarks WHERE provider = ? AND region = ? AND stream = ? AND item = ?",
        [provider, region, stream, item],
    )
    return rows[0][0] if rows and rows[0][0] is not None else None


def set_watermark(
    wh: Warehouse, provider: str, region: str, stream: str, item: str, ts: datetime
) -> datetime:
    """Move the watermark forward only (a backfill of older data never rewinds it)."""
    ts = naive_utc(ts)
    old = get_watermark(wh, provider, region, stream, item)
    if old is not None and old >= ts:
        return old
    table = pa.table(
        {
            "provider": [provider],
            "region": [region],
            "stream": [stream],
            "item": [item],
            "watermark": pa.array([ts], pa.timestamp("us")),
            "updated_at": pa.array([utcnow()], pa.timestamp("us")),
        }
    )
    wh.upsert_arrow("price_watermarks", table, keys=("provider", "region", "stream", "item"))
    return ts


def log_fetch(
    wh: Warehouse,
    provider: str,
    regions: Iterable[str],
    source: str,
    seen: int,
    inserted: int,
    run_id: str | None = None,
) -> None:
    """Record a successful fetch per region: `cheapest_offers` uses it to drop stale sources."""
    now = utcnow()
    for region in sorted(set(regions)):
        wh.execute(
            "INSERT INTO price_fetch_log (provider, region, source, fetched_at, rows_seen, rows_inserted, run_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [provider, region, source, now, seen, inserted, run_id],
        )


PresenceKey = tuple[str, str, str, str, str, str]  # provider, region, zone, instance_type, os, pricing_model
PRESENCE_KEY = ("provider", "region", "zone", "instance_type", "os", "pricing_model")


def presence_key(r: PriceRecord) -> PresenceKey:
    return (r.provider, r.region, r.zone, r.instance_type, r.os, r.pricing_model)


@dataclass(frozen=True)
class Coverage:
    """A scope one fetch's answer is authoritative for: it lists every item of `provider` in
    `region` with this pricing model and OS whose instance type matches, so an item it covers
    and did not list is withdrawn. type_match 'prefix': a case-insensitive prefix of the type
    ('' = every type); 'exact': the type itself."""

    provider: str
    region: str
    pricing_model: str
    os: str = "linux"
    type_match: TypeMatch = "prefix"
    type_pattern: str = ""


COVERAGE_KEY = tuple(f.name for f in fields(Coverage))  # a row of price_coverage is astuple(Coverage)


def stored_items(wh: Warehouse, provider: str, region: str, pricing_model: str) -> list[PresenceKey]:
    """Every item ever stored for one provider, region and pricing model (any age)."""
    rows = wh.query(
        f"SELECT DISTINCT zone, instance_type, os FROM {TABLES[pricing_model]} WHERE provider = ? AND region = ?",
        [provider, region],
    )
    return [(provider, region, z, t, o, pricing_model) for z, t, o in rows]


def _stamp(
    wh: Warehouse,
    table: str,
    key: Sequence[str],
    ts_col: str,
    provider: str,
    rows: Iterable[tuple],
    at: datetime,
    run_id: str | None,
) -> int:
    """Upsert `rows` (values of `key`) stamped `at`, forward only like watermarks: a row that a
    fetch started later already stamped (it stored first) is left as it is."""
    newer = {
        tuple(r)
        for r in wh.query(
            f"SELECT {', '.join(key)} FROM {table} WHERE provider = ? AND {ts_col} >= ?", [provider, at]
        )
    }
    todo = sorted(set(rows) - newer)
    if not todo:
        return 0
    data = {k: [r[i] for r in todo] for i, k in enumerate(key)}
    data[ts_col] = pa.array([at] * len(todo), pa.timestamp("us"))
    data["run_id"] = pa.array([run_id] * len(todo), pa.string())
    return wh.upsert_arrow(table, pa.table(data), keys=key)


def record_listing(
    wh: Warehouse,
    provider: str,
    seen: Iterable[PresenceKey],
    coverage: Iterable[Coverage],
    at: datetime,
    run_id: str | None = None,
) -> None:
    """Stamp what one fetch (started at `at`) listed, then what its answer covers. Presence is
    written first: a failure between the two leaves items present, never wrongly withdrawn."""
    at = naive_utc(at)
    _stamp(wh, "price_presence", PRESENCE_KEY, "last_seen_at", provider, seen, at, run_id)
    _stamp(wh, "price_coverage", COVERAGE_KEY, "covered_at", provider, map(astuple, coverage), at, run_id)

"""Withdrawn prices leave the latest views. Price series are stored change-only, so a price the
provider stopped offering would otherwise stay "latest" forever.

- `price_presence`: per item (provider, region, zone, instance type, OS, pricing model) the
  newest fetch whose answer listed it (`last_seen_at`, the fetch's start time).
- `price_coverage`: per scope the newest fetch whose answer is authoritative for it: every item
  of `provider` in `region` with this pricing model and OS whose instance type matches
  (`type_match` 'prefix': case-insensitive prefix of `type_pattern`, '' = every type;
  'exact': the type itself). A fetch narrowed by Params (some families, some regions) covers
  only what it asked for; AWS spot history is covered only through describe_instance_types
  (finops.prices.jobs documents what each stream's answer proves).
- `latest_zone_prices` (and `latest_prices`, which reads it) leave an item out when a fetch
  covering it is newer than the item was last known to exist: its presence row, or, for rows
  stored before this migration (no presence row yet), its own observed_at. Nothing disappears
  on upgrade; the first covering fetch that no longer lists an item withdraws it, and a later
  one that lists it again brings it back.

The price union is m0100's, imported: a migration is a fixed snapshot and m0100 never changes.
"No newer covering fetch" is an anti-join (LEFT JOIN ... IS NULL), not NOT EXISTS: DuckDB
decorrelates the NOT EXISTS over every history row (1M spot rows: 455 ms against 127 ms, and
106 ms for m0100's view).
"""

from __future__ import annotations

from finops.warehouse.migrations.m0100_prices import _UNION

VERSION = 101
DESCRIPTION = "price_presence / price_coverage: withdrawn prices leave latest_zone_prices / latest_prices"

_KEY = ("pricing_model", "provider", "region", "zone", "instance_type", "os")
_COLS = (*_KEY, "price_per_hour", "currency", "observed_at", "source")


def statements(dialect: str) -> list[str]:
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    return [
        f"""CREATE TABLE IF NOT EXISTS price_presence (
            provider {text} NOT NULL,
            region {text} NOT NULL,
            zone {text} NOT NULL DEFAULT '',
            instance_type {text} NOT NULL,
            os {text} NOT NULL DEFAULT 'linux',
            pricing_model {text} NOT NULL,
            last_seen_at TIMESTAMP NOT NULL,
            run_id {text}
        )""",
        "CREATE INDEX IF NOT EXISTS price_presence_item ON price_presence (provider, region, instance_type)",
        f"""CREATE TABLE IF NOT EXISTS price_coverage (
            provider {text} NOT NULL,
            region {text} NOT NULL,
            pricing_model {text} NOT NULL,
            os {text} NOT NULL DEFAULT 'linux',
            type_match {text} NOT NULL,
            type_pattern {text} NOT NULL,
            covered_at TIMESTAMP NOT NULL,
            run_id {text}
        )""",
        "CREATE INDEX IF NOT EXISTS price_coverage_scope ON price_coverage (provider, region, pricing_model)",
        f"""CREATE OR REPLACE VIEW latest_zone_prices AS
        SELECT {", ".join(f"z.{c}" for c in _COLS)} FROM (
            SELECT p.*, ROW_NUMBER() OVER (
                PARTITION BY pricing_model, provider, region, zone, instance_type, os
                ORDER BY observed_at DESC) AS rn
            FROM ({_UNION}) p
        ) z
        LEFT JOIN price_presence s ON {" AND ".join(f"s.{c} = z.{c}" for c in _KEY)}
        LEFT JOIN price_coverage c
          ON c.provider = z.provider AND c.region = z.region AND c.pricing_model = z.pricing_model
         AND c.os = z.os
         AND CASE WHEN c.type_match = 'exact' THEN z.instance_type = c.type_pattern
                  ELSE LOWER(SUBSTR(z.instance_type, 1, LENGTH(c.type_pattern))) = LOWER(c.type_pattern) END
         AND c.covered_at > CASE WHEN s.last_seen_at > z.observed_at THEN s.last_seen_at ELSE z.observed_at END
        WHERE z.rn = 1 AND c.provider IS NULL""",
    ]

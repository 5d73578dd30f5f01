"""Price history: spot_prices, ondemand_prices (append-only), instance_catalog,
spot_placement_scores, price_watermarks, price_fetch_log (when each region was last
fetched: change-only series need it to tell a stable price from a stale one), and the latest_zone_prices / latest_prices views."""

from __future__ import annotations

VERSION = 100
DESCRIPTION = "spot / on-demand price history, instance catalog, placement scores, watermarks"


def _price_table(name: str, text: str, money: str) -> str:
    return f"""CREATE TABLE IF NOT EXISTS {name} (
        provider {text} NOT NULL,
        region {text} NOT NULL,
        zone {text} NOT NULL DEFAULT '',
        instance_type {text} NOT NULL,
        os {text} NOT NULL DEFAULT 'linux',
        price_per_hour {money} NOT NULL,
        currency {text} NOT NULL,
        observed_at TIMESTAMP NOT NULL,
        source {text} NOT NULL,
        product {text},
        sku {text},
        effective_from TIMESTAMP,
        details {text},
        fetched_at TIMESTAMP NOT NULL
    )"""


_UNION = """
    SELECT 'spot' AS pricing_model, provider, region, zone, instance_type, os, price_per_hour, currency,
           observed_at, source FROM spot_prices
    UNION ALL
    SELECT 'ondemand' AS pricing_model, provider, region, zone, instance_type, os, price_per_hour, currency,
           observed_at, source FROM ondemand_prices"""

_COLS = (
    "pricing_model, provider, region, zone, instance_type, os, price_per_hour, currency, observed_at, source"
)


def statements(dialect: str) -> list[str]:
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    money = "DECIMAL(38,10)" if dialect == "duckdb" else "NUMERIC(38,10)"
    return [
        _price_table("spot_prices", text, money),
        _price_table("ondemand_prices", text, money),
        "CREATE INDEX IF NOT EXISTS spot_prices_lookup ON spot_prices (provider, instance_type, region, observed_at)",
        "CREATE INDEX IF NOT EXISTS ondemand_prices_lookup ON ondemand_prices (provider, instance_type, region, observed_at)",
        f"""CREATE TABLE IF NOT EXISTS instance_catalog (
            provider {text} NOT NULL,
            instance_type {text} NOT NULL,
            gpu_model {text},
            gpu_count INTEGER,
            gpu_memory_gib DOUBLE PRECISION,
            vcpus INTEGER,
            memory_gib DOUBLE PRECISION,
            interconnect {text},
            source {text},
            updated_at TIMESTAMP NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS instance_catalog_gpu ON instance_catalog (gpu_model, gpu_count)",
        f"""CREATE TABLE IF NOT EXISTS spot_placement_scores (
            provider {text} NOT NULL,
            region {text} NOT NULL,
            zone_id {text} NOT NULL DEFAULT '',
            instance_type {text} NOT NULL,
            target_capacity INTEGER NOT NULL,
            single_az BOOLEAN NOT NULL,
            score INTEGER NOT NULL,
            observed_at TIMESTAMP NOT NULL
        )""",
        f"""CREATE TABLE IF NOT EXISTS price_watermarks (
            provider {text} NOT NULL,
            region {text} NOT NULL,
            stream {text} NOT NULL,
            item {text} NOT NULL,
            watermark TIMESTAMP NOT NULL,
            updated_at TIMESTAMP NOT NULL
        )""",
        f"""CREATE TABLE IF NOT EXISTS price_fetch_log (
            provider {text} NOT NULL,
            region {text} NOT NULL,
            source {text} NOT NULL,
            fetched_at TIMESTAMP NOT NULL,
            rows_seen INTEGER NOT NULL,
            rows_inserted INTEGER NOT NULL,
            run_id {text}
        )""",
        "CREATE INDEX IF NOT EXISTS price_fetch_log_recent ON price_fetch_log (provider, region, fetched_at)",
        f"""CREATE OR REPLACE VIEW latest_zone_prices AS
        SELECT {_COLS} FROM (
            SELECT p.*, ROW_NUMBER() OVER (
                PARTITION BY pricing_model, provider, region, zone, instance_type, os
                ORDER BY observed_at DESC) AS rn
            FROM ({_UNION}) p
        ) z WHERE rn = 1""",
        f"""CREATE OR REPLACE VIEW latest_prices AS
        SELECT {_COLS} FROM (
            SELECT z.*, ROW_NUMBER() OVER (
                PARTITION BY pricing_model, provider, region, instance_type, os
                ORDER BY price_per_hour ASC, zone ASC) AS rn
            FROM latest_zone_prices z
        ) r WHERE rn = 1""",
    ]

"""Commitment rates and AWS Capacity Block offerings from the providers' price data
(finops.prices.commit_rates, finops.prices.capacity_blocks; written by the finops_prices jobs).

commitment_rates           one row per (provider, product, term, payment, region, instance
                           type): the commitment's effective hourly rate next to the on-demand
                           rate of the same SKU, and the discount 1 - commitment / on-demand.
                           Each fetch replaces the rows of its provider and region(s).
capacity_block_offerings   EC2 DescribeCapacityBlockOfferings answers (read only: nothing is
                           purchased), replaced per region on each fetch.
commitment_advice.rate_source  where each advice row's discount came from: config, price_data
                           (with its scope) or default.
"""

from __future__ import annotations

VERSION = 802
DESCRIPTION = "commitment_rates, capacity_block_offerings, commitment_advice.rate_source"


def statements(dialect: str) -> list[str]:
    money = "DECIMAL(38,10)" if dialect == "duckdb" else "NUMERIC(38,10)"
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    return [
        f"""CREATE TABLE IF NOT EXISTS commitment_rates (
            provider {text} NOT NULL,
            product {text} NOT NULL,
            term_years INTEGER NOT NULL,
            payment {text} NOT NULL,
            region {text} NOT NULL,
            instance_type {text} NOT NULL,
            family {text} NOT NULL,
            currency {text} NOT NULL,
            on_demand_hourly {money} NOT NULL,
            commitment_hourly {money} NOT NULL,
            discount {money} NOT NULL,
            source {text} NOT NULL,
            sku {text},
            observed_at TIMESTAMP NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS commitment_rates_key ON commitment_rates (provider, product, region)",
        f"""CREATE TABLE IF NOT EXISTS capacity_block_offerings (
            region {text} NOT NULL,
            offering_id {text} NOT NULL,
            instance_type {text} NOT NULL,
            availability_zone {text},
            instance_count INTEGER NOT NULL,
            start_date TIMESTAMP,
            end_date TIMESTAMP,
            duration_hours INTEGER NOT NULL,
            upfront_fee {money} NOT NULL,
            currency {text} NOT NULL,
            tenancy {text},
            fetched_at TIMESTAMP NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS capacity_block_offerings_region ON capacity_block_offerings (region, instance_type)",
        f"ALTER TABLE commitment_advice ADD COLUMN IF NOT EXISTS rate_source {text}",
    ]

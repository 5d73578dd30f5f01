"""The GPU catalog from the providers' spec APIs: fractional GPUs, drift, regional availability.

- `instance_catalog.gpu_divisor`: a partitioned size gets gpu_count / gpu_divisor of a GPU
  (Standard_NV6ads_A10_v5: 1 / 6); 1 for whole GPUs, so existing rows stay whole.
- `instance_catalog.gpu_name`: the provider's own GPU name (accelerator type, family, GpuInfo
  name): a row with a GPU count or name and no gpu_model is drift (a model the catalog cannot
  classify), listed by `catalog_drift`.
- `instance_catalog.source`: api / static / api+static (which of the two said what).
- `instance_availability`: which (provider, region, zone, instance type) the spec APIs list as
  offered, with the restriction Azure reports (`NotAvailableForSubscription`, ...) where one
  applies; replaced per (provider, region) by each fetch whose answer listed anything there.
"""

from __future__ import annotations

VERSION = 102
DESCRIPTION = "instance_catalog gpu_divisor / gpu_name; instance_availability"


def statements(dialect: str) -> list[str]:
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    return [
        "ALTER TABLE instance_catalog ADD COLUMN IF NOT EXISTS gpu_divisor INTEGER DEFAULT 1",
        f"ALTER TABLE instance_catalog ADD COLUMN IF NOT EXISTS gpu_name {text}",
        f"""CREATE TABLE IF NOT EXISTS instance_availability (
            provider {text} NOT NULL,
            region {text} NOT NULL,
            zone {text} NOT NULL DEFAULT '',
            instance_type {text} NOT NULL,
            restriction {text},
            source {text} NOT NULL,
            checked_at TIMESTAMP NOT NULL,
            run_id {text}
        )""",
        "CREATE INDEX IF NOT EXISTS instance_availability_lookup"
        " ON instance_availability (provider, region, instance_type)",
    ]

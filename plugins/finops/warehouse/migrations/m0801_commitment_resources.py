"""What each provider-listed commitment commits to (finops.commitments.inventory).

commitment_resources  one row per (provider, commitment_id, resource_type, accelerator_type):
                      a GCP Compute API commitment's `resources[]` (VCPU, MEMORY in MB,
                      ACCELERATOR with its acceleratorType, LOCAL_SSD), its region, project
                      and plan type (e.g. ACCELERATOR_OPTIMIZED). The billed CUD fee of a
                      region and resource is shared among the commitments active that day by
                      these amounts (finops.commitments.gcp_attribution).
accelerator_type is '' for a resource without one (it is part of the key).
"""

from __future__ import annotations

VERSION = 801
DESCRIPTION = "commitment_resources (GCP commitments' resources, for per-commitment CUD shares)"


def statements(dialect: str) -> list[str]:
    amount = "DECIMAL(38,10)" if dialect == "duckdb" else "NUMERIC(38,10)"
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    return [
        f"""CREATE TABLE IF NOT EXISTS commitment_resources (
            provider {text} NOT NULL,
            commitment_id {text} NOT NULL,
            resource_type {text} NOT NULL,
            accelerator_type {text} NOT NULL,
            amount {amount} NOT NULL,
            region {text} NOT NULL,
            project {text},
            plan_type {text},
            updated_at TIMESTAMP NOT NULL,
            PRIMARY KEY (provider, commitment_id, resource_type, accelerator_type)
        )""",
    ]

"""The Cloud Billing BigQuery export's schema, and how a table of any version is brought to it.

Google has grown the standard (`gcp_billing_export_v1_<ACCOUNT>`) and detailed
(`gcp_billing_export_resource_v1_<ACCOUNT>`) tables over the years: `tags`, `cost_at_list`,
`transaction_type`, `seller_name`, `price.list_price`, `consumption_model`, ... are newer than
many tables still being exported, and the standard table never has `resource`, `price` or
`subscription`. A converter that names every field fails on every table but the newest; one
that names only the oldest fields loses what the newer ones carry. So `normalize_sql` gives the
converter ONE shape: every field below exists, with its own type, NULL where the table lacks
it (a missing top-level column, or a missing field inside a RECORD / repeated RECORD).

Field names and types: Google's schema reference for the standard and detailed usage cost
tables (docs.cloud.google.com/billing/docs/how-to/export-data-bigquery-tables/standard-usage,
.../detailed-usage), as a live table's INFORMATION_SCHEMA reports them. Pure string building.
"""

from __future__ import annotations

from collections.abc import Mapping

from finops.sql_text import sql_ident

_KV = {"key": "VARCHAR", "value": "VARCHAR"}
_CREDIT = {"name": "VARCHAR", "amount": "DOUBLE", "full_name": "VARCHAR", "id": "VARCHAR", "type": "VARCHAR"}

# column -> (repeated?, {field: type}) for RECORD columns; column -> type for scalars.
RECORDS: dict[str, tuple[bool, dict[str, str]]] = {
    "service": (False, {"id": "VARCHAR", "description": "VARCHAR"}),
    "sku": (False, {"id": "VARCHAR", "description": "VARCHAR"}),
    "project": (
        False,
        {
            "id": "VARCHAR",
            "number": "VARCHAR",
            "name": "VARCHAR",
            "labels": "STRUCT(key VARCHAR, value VARCHAR)[]",
            "ancestry_numbers": "VARCHAR",
            "ancestors": "STRUCT(resource_name VARCHAR, display_name VARCHAR)[]",
        },
    ),
    "labels": (True, _KV),
    "system_labels": (True, _KV),
    "location": (
        False,
        {"location": "VARCHAR", "country": "VARCHAR", "region": "VARCHAR", "zone": "VARCHAR"},
    ),
    "tags": (True, {"key": "VARCHAR", "value": "VARCHAR", "inherited": "BOOLEAN", "namespace": "VARCHAR"}),
    "usage": (
        False,
        {
            "amount": "DOUBLE",
            "unit": "VARCHAR",
            "amount_in_pricing_units": "DOUBLE",
            "pricing_unit": "VARCHAR",
        },
    ),
    "credits": (True, _CREDIT),
    "invoice": (False, {"month": "VARCHAR", "publisher_type": "VARCHAR"}),
    "adjustment_info": (
        False,
        {"id": "VARCHAR", "description": "VARCHAR", "mode": "VARCHAR", "type": "VARCHAR"},
    ),
    # detailed (resource-level) table only
    "resource": (False, {"name": "VARCHAR", "global_name": "VARCHAR"}),
    "price": (
        False,
        {
            "effective_price": "DECIMAL(38,9)",
            "tier_start_amount": "DECIMAL(38,9)",
            "unit": "VARCHAR",
            "pricing_unit_quantity": "DECIMAL(38,9)",
            "list_price": "DECIMAL(38,9)",
            "effective_price_default": "DECIMAL(38,9)",
            "list_price_consumption_model": "DECIMAL(38,9)",
        },
    ),
    "subscription": (False, {"instance_id": "VARCHAR"}),
    "consumption_model": (
        False,
        {"id": "VARCHAR", "description": "VARCHAR", "applied_subscription_instance_id": "VARCHAR"},
    ),
}
SCALARS: dict[str, str] = {
    "billing_account_id": "VARCHAR",
    "usage_start_time": "TIMESTAMPTZ",
    "usage_end_time": "TIMESTAMPTZ",
    "export_time": "TIMESTAMPTZ",
    "cost": "DOUBLE",
    "currency": "VARCHAR",
    "currency_conversion_rate": "DOUBLE",
    "cost_type": "VARCHAR",
    "cost_at_list": "DOUBLE",
    "transaction_type": "VARCHAR",
    "seller_name": "VARCHAR",
    "cost_at_effective_price_default": "DOUBLE",
    "cost_at_list_consumption_model": "DOUBLE",
}
# Present in every version of both tables: without them there is no bill to read.
REQUIRED = (
    "billing_account_id",
    "service",
    "sku",
    "usage_start_time",
    "usage_end_time",
    "cost",
    "currency",
    "credits",
    "invoice",
    "cost_type",
)
DETAILED_ONLY = ("resource", "price")


def struct_type(fields: Mapping[str, str]) -> str:
    return "STRUCT(" + ", ".join(f"{sql_ident(k)} {t}" for k, t in fields.items()) + ")"


def field_names(duckdb_type: str) -> set[str]:
    """Lower-cased top-level field names of a DuckDB STRUCT / STRUCT[] type string."""
    t = duckdb_type.strip()
    while t.endswith("[]"):
        t = t[:-2]
    if not t.upper().startswith("STRUCT(") or not t.endswith(")"):
        return set()
    body, depth, part, parts = t[7:-1], 0, "", []
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(part)
            part = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        part += ch
    parts.append(part)
    names = set()
    for p in parts:
        p = p.strip()
        if p.startswith('"'):
            names.add(p[1 : p.index('"', 1)].lower())
        elif p:
            names.add(p.split()[0].lower())
    return names


def _record_expr(col: str, repeated: bool, fields: dict[str, str], present: set[str]) -> str:
    """The column rebuilt with every field, NULL for the ones the table lacks."""
    typ = struct_type(fields) + ("[]" if repeated else "")
    ref = "e" if repeated else sql_ident(col)
    parts = ", ".join(
        f"{sql_ident(f)} := CAST({ref}.{sql_ident(f)} AS {t})"
        if f in present
        else f"{sql_ident(f)} := CAST(NULL AS {t})"
        for f, t in fields.items()
    )
    if repeated:
        return f"CAST(list_transform({sql_ident(col)}, lambda e: struct_pack({parts})) AS {typ})"
    return f"CASE WHEN {sql_ident(col)} IS NULL THEN NULL ELSE struct_pack({parts}) END"


def normalize_sql(raw: str, columns: Mapping[str, str]) -> str:
    """SELECT over `raw` with every standard / detailed export field present (NULL where absent).
    A column whose fields are all there passes through untouched (no per-row rebuild)."""
    cols = {c.lower(): c for c in columns}
    replace, add = [], []
    for col, (repeated, fields) in RECORDS.items():
        if col not in cols:
            if col not in REQUIRED:  # a required one stays missing: the spine names it
                add.append(
                    f"CAST(NULL AS {struct_type(fields)}{'[]' if repeated else ''}) AS {sql_ident(col)}"
                )
            continue
        present = field_names(columns[cols[col]])
        if not set(fields) <= present:
            replace.append(f"{_record_expr(cols[col], repeated, fields, present)} AS {sql_ident(cols[col])}")
    for col, typ in SCALARS.items():
        if col not in cols and col not in REQUIRED:
            add.append(f"CAST(NULL AS {typ}) AS {sql_ident(col)}")
    star = f"* REPLACE ({', '.join(replace)})" if replace else "*"
    return f"SELECT {', '.join([star, *add])} FROM {raw}"


def variant(columns: Mapping[str, str] | list[str] | tuple[str, ...]) -> str:
    """Which of Google's tables this is, from its columns."""
    names = {c.lower() for c in columns}
    if names & set(DETAILED_ONLY):
        return "GCP detailed usage cost export"
    return "GCP standard usage cost export"

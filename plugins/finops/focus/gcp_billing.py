"""GCP standard and detailed usage cost exports -> FOCUS 1.2 rows, as DuckDB SQL.

Input: parquet files holding rows of `gcp_billing_export_v1_<ACCOUNT>` (standard) or
`gcp_billing_export_resource_v1_<ACCOUNT>` (detailed, resource-level) exactly as BigQuery
returns them (nested `service`, `sku`, `project`, `location`, `resource`, `invoice`, `price`,
`usage`; repeated `labels`, `system_labels`, `tags`, `project.labels`, `project.ancestors`,
`credits`), of any schema version: finops.focus.gcp_export_schema fills what an older or
standard table lacks with NULLs. Money is FLOAT64 in the export; it is cast to
DECIMAL(38,10) once, the same way on both sides of the reconciliation.

Credit rule (FOCUS: BilledCost is "inclusive of all reduced rates and discounts"):
- discount-type credits (SUSTAINED_USAGE_DISCOUNT, COMMITTED_USAGE_DISCOUNT[_DOLLAR_BASE],
  DISCOUNT, FREE_TIER, SUBSCRIPTION_BENEFIT, RESELLER_MARGIN, any other non-promotion
  type) are netted into the row they belong to: BilledCost = cost + those credits;
- PROMOTION credits (promotional / trial credit programmes, applied after the fact) become
  their own ChargeCategory='Credit' rows, one per credit entry, inheriting the parent's
  account, project, service, region and tags so showback still attributes them.
So per billing period: SUM(BilledCost) == SUM(cost) + SUM(credits.amount), to the cent.

ContractedCost = cost + non-commitment discount credits (negotiated / automatic price
reductions), ListCost = cost_at_list (falls back to cost), EffectiveCost = BilledCost:
GCP bills commitment fees monthly (no upfront to amortise), and the CUD credit already
lands on the usage it covers. cost_type maps regular -> Usage (commitment fee SKUs too, as in
GCP's own FOCUS view: the monthly fee is billed as it accrues, and FOCUS would force a
Purchase row's EffectiveCost to 0 with nothing amortised in its place; the fee row gets
ChargeFrequency 'Recurring' and PricingCategory 'Committed'), tax -> Tax, adjustment / rounding_error -> Adjustment (ChargeClass
'Correction' when adjustment_info is present). Spot / preemptible SKUs -> PricingCategory
'Dynamic', CUD-covered usage -> 'Committed'.

Units: usage.pricing_unit / usage.unit ('hour', 'gibibyte month', 'byte-seconds', ...) go through
finops.focus.units' table-driven scaler into FOCUS UnitFormat ('Hours', 'GiB-Months',
'B-Seconds'); a block unit would scale PricingQuantity / ConsumedQuantity and the unit prices by
its multiplier (GCP's own units carry none: their multiplier is 1). `price.effective_price` is the price of
`price.pricing_unit_quantity` units (Google: "$1 per 1000000 bytes" shows 1000000), so the
per-unit ContractedUnitPrice divides by it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from finops.focus import gcp_export_schema
from finops.focus.projection import (
    files_list,
    lineage,
    lit,
    other_subcategory_sql,
    period_bounds_sql,
    raw_totals_by_currency,
    select_list,
)
from finops.focus.units import UnitScaler

MONEY = "DECIMAL(38,10)"
PROMO = "'PROMOTION'"
COMMITMENT_TYPES = "('COMMITTED_USAGE_DISCOUNT', 'COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE')"
# Spend-based CUDs on Google's multiprice model (new accounts since 2025-07-15, every account
# from 2026-01-21; VMware Engine, NetApp, Backup for GKE CUDs stay on the credit model): the
# covered usage is billed at the CUD price, its `consumption_model` naming the CUD; the fee SKU
# ($1 a unit: the commitment in discounted dollars) carries a FEE_UTILIZATION_OFFSET credit for
# the part used, so the fee row nets to the unused commitment. Google: "Migrated CUD SKUs,
# offers, and consumption model IDs" (docs.cloud.google.com/docs/cuds-migration).
FEE_OFFSET = "'FEE_UTILIZATION_OFFSET'"
NOT_CONTRACTED = (
    "('COMMITTED_USAGE_DISCOUNT', 'COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE', 'FEE_UTILIZATION_OFFSET')"
)
CUD_CONSUMPTION_MODELS = (
    "73A1-AD60-B867", "A4B6-DEDF-1A65", "A03A-2A56-8086", "4F61-4520-4936", "75D9-38E7-870F",
    "9E06-4EF0-37D8", "DD5B-8EB3-C48D", "8E4B-B283-45D8", "558C-892D-2291", "38C3-A961-A68B",
    "2F93-FEF4-BD6E", "6E88-5C17-F3E1", "C100-AA7B-33B1", "4920-CA74-2184", "61F8-639B-D89C",
    "52FB-D69D-95BE", "D97B-0795-975B", "70D7-D1AB-12A4", "03DE-CED5-0B0E", "FBB4-D107-5857",
    "3892-BA17-92A7", "2FD9-44B6-D2AC", "DD83-D9A3-79AF", "4D8D-49A7-C5B1", "AEA3-CEC2-9DF3",
    "224F-258C-7F84",
)  # fmt: skip
# Compute flexible CUD fee SKUs of the new model (1 and 3 years); other products' new fee SKUs
# are known by their FEE_UTILIZATION_OFFSET credit or their `... Committed Use Discounts - N Year`
# description.
NEW_CUD_FEE_SKUS = ("5515-81A8-03A2", "B22F-51BE-D599")
_IDS = ", ".join(f"'{i}'" for i in CUD_CONSUMPTION_MODELS)
# usage priced by a CUD consumption model ("Compute Flexible CUD - 1 Year", "Cloud SQL CUD - 3 Years")
CM_CUD_SQL = (
    f"COALESCE(consumption_model.id IN ({_IDS}) "
    r"OR regexp_matches(consumption_model.description, '\bCUD\b'), false)"
)
NEW_FEE_SQL = (
    f"COALESCE(sku.id IN ({', '.join(repr(i) for i in NEW_CUD_FEE_SKUS)}) "
    f"OR len(list_filter(credits, lambda c: c.type = {FEE_OFFSET})) > 0 "
    "OR sku.description ILIKE '%committed use discount%', false)"
)
# invoice.month is a Pacific-time month: usage of Oct 31 17:00-24:00 PDT (Nov 1 UTC) is on October's
# invoice, so the billing period bounds are Pacific midnights (else those rows end after their period).
INVOICE_TZ = "America/Los_Angeles"

# service.description -> FOCUS ServiceCategory (everything unlisted is 'Other').
SERVICE_CATEGORIES: dict[str, str] = {
    "Compute Engine": "Compute",
    "Kubernetes Engine": "Compute",
    "Google Kubernetes Engine": "Compute",
    "Cloud Run": "Compute",
    "Cloud Functions": "Compute",
    "App Engine": "Compute",
    "Cloud Storage": "Storage",
    "Filestore": "Storage",
    "BigQuery": "Databases",
    "Dataflow": "Analytics",
    "Dataproc": "Analytics",
    "Pub/Sub": "Integration",
    "Cloud SQL": "Databases",
    "Cloud Spanner": "Databases",
    "Firestore": "Databases",
    "Cloud Bigtable": "Databases",
    "Memorystore for Redis": "Databases",
    "Vertex AI": "AI and Machine Learning",
    "Cloud TPU": "AI and Machine Learning",
    "Gemini API": "AI and Machine Learning",
    "Networking": "Networking",
    "Cloud DNS": "Networking",
    "Cloud CDN": "Networking",
    "Cloud Load Balancing": "Networking",
    "Cloud Logging": "Management and Governance",
    "Cloud Monitoring": "Management and Governance",
    "Secret Manager": "Security",
    "Cloud Key Management Service (KMS)": "Security",
    "Artifact Registry": "Developer Tools",
    "Cloud Build": "Developer Tools",
    "Support": "Other",
    "Invoice": "Other",
}

# service.description -> FOCUS 1.2 ServiceSubcategory (one per service, parent = category above).
SERVICE_SUBCATEGORIES: dict[str, str] = {
    "Compute Engine": "Virtual Machines",
    "Kubernetes Engine": "Containers",
    "Google Kubernetes Engine": "Containers",
    "Cloud Run": "Serverless Compute",
    "Cloud Functions": "Serverless Compute",
    "App Engine": "Serverless Compute",
    "Cloud Storage": "Object Storage",
    "Filestore": "File Storage",
    "BigQuery": "Data Warehouses",
    "Dataflow": "Data Processing",
    "Dataproc": "Data Processing",
    "Pub/Sub": "Messaging",
    "Cloud SQL": "Relational Databases",
    "Cloud Spanner": "Relational Databases",
    "Firestore": "NoSQL Databases",
    "Cloud Bigtable": "NoSQL Databases",
    "Memorystore for Redis": "Caching",
    "Vertex AI": "Machine Learning",
    "Cloud TPU": "Machine Learning",
    "Gemini API": "Generative AI",
    "Networking": "Network Connectivity",
    "Cloud DNS": "Network Routing",
    "Cloud CDN": "Content Delivery",
    "Cloud Load Balancing": "Application Networking",
    "Cloud Logging": "Observability",
    "Cloud Monitoring": "Observability",
    "Secret Manager": "Secret Management",
    "Cloud Key Management Service (KMS)": "Secret Management",
    "Artifact Registry": "Developer Platforms",
    "Cloud Build": "Continuous Integration and Deployment",
}

# location.region -> display name (FOCUS RegionName); unknown regions fall back to the id.
REGION_NAMES: dict[str, str] = {
    "us-central1": "Iowa",
    "us-east1": "South Carolina",
    "us-east4": "Northern Virginia",
    "us-west1": "Oregon",
    "us-west2": "Los Angeles",
    "us-west4": "Las Vegas",
    "europe-west1": "Belgium",
    "europe-west2": "London",
    "europe-west3": "Frankfurt",
    "europe-west4": "Netherlands",
    "asia-east1": "Taiwan",
    "asia-northeast1": "Tokyo",
    "asia-southeast1": "Singapore",
}


def _case(expr: str, mapping: dict[str, str], default: str) -> str:
    whens = " ".join(f"WHEN {lit(k)} THEN {lit(v)}" for k, v in mapping.items())
    return f"CASE {expr} {whens} ELSE {default} END"


def _money(expr: str) -> str:
    return f"CAST({expr} AS {MONEY})"


def _credit_sum(cond: str) -> str:
    """Sum of the row's credits matching a lambda condition on `c`, as exact money."""
    return (
        f"COALESCE(list_sum(list_transform(list_filter(credits, lambda c: {cond}), "
        f"lambda c: CAST(c.amount AS {MONEY}))), 0)"
    )


def _tags(row: str = "") -> str:
    """One JSON object from project.labels, tags (Resource Manager tags, inherited ones too),
    system_labels and labels; later ones win (a resource label overrides a tag or project label
    of the same key, the order Google's FOCUS view ranks them). Keys sorted so a reload writes
    byte-identical rows."""
    p = f"{row}." if row else ""
    tags = f"list_transform(COALESCE({p}tags, []), lambda t: {{'key': t.key, 'value': t.value}})"
    all_labels = (
        f"(COALESCE({p}project.labels, []) || {tags} || COALESCE({p}system_labels, []) "
        f"|| COALESCE({p}labels, []))"
    )
    return (
        "(SELECT CASE WHEN count(*) > 0 THEN to_json(map_from_entries(list((k, v) ORDER BY k))) END FROM ("
        "SELECT e.key AS k, last(e.value ORDER BY i) AS v FROM ("
        f"SELECT unnest({all_labels}) AS e, generate_subscripts({all_labels}, 1) AS i"
        ") GROUP BY e.key))"
    )


# Units of the pricing and the consumed quantity (columns x_pu_* / x_cu_* of the prepared rows).
PRICING = UnitScaler("usage.pricing_unit", "x_pu_")
CONSUMED = UnitScaler("usage.unit", "x_cu_")

# FOCUS columns the export has no field for, filled on every row (derived_counts_sql).
DERIVED_ON_EVERY_ROW = ("ChargeDescription", "ChargeFrequency", "InvoiceId", "ServiceSubcategory")


class GcpBillingConverter:
    """Converter for the GCP standard and detailed usage cost exports (spine Converter protocol)."""

    provider = "gcp"
    required_raw_columns = gcp_export_schema.REQUIRED

    def __init__(self, name: str = "gcp_detailed") -> None:
        self.name = name

    def reader_sql(self, files: list[str]) -> str:
        return f"SELECT * FROM read_parquet({files_list(files)}, union_by_name = true)"

    def normalize_sql(self, raw: str, columns: Mapping[str, str]) -> str:
        return gcp_export_schema.normalize_sql(raw, columns)

    def variant(self, columns: Sequence[str]) -> str:
        return gcp_export_schema.variant(list(columns))

    def derived_counts_sql(self, raw: str) -> str:
        """(column, rows) for the FOCUS columns GCP's export has no field for: ChargeDescription
        (from sku.description, or the adjustment's description), ChargeFrequency (from cost_type),
        InvoiceId (provisional: account + invoice month) and ServiceSubcategory (our service
        table; `Other (<ServiceCategory>)` for a service it does not know)."""
        return " UNION ALL ".join(
            f"SELECT {lit(c)} AS column, count(*) AS rows FROM {raw}" for c in DERIVED_ON_EVERY_ROW
        )

    def raw_billed_totals_sql(self, raw: str) -> str:
        return raw_totals_by_currency(
            raw, "currency", f"COALESCE({_money('cost')}, 0) + {_credit_sum('true')}"
        )

    def focus_sql(self, raw: str, ctx: object) -> str:
        start, end = period_bounds_sql(ctx.billing_period, INVOICE_TZ)  # type: ignore[attr-defined]
        base = self._prepared(raw)
        usage_cols = self._usage_columns(start, end)
        credit_cols = self._credit_columns(start, end)
        shared = lineage(ctx, self.provider)
        return (
            f"WITH g AS ({PRICING.relation('(' + CONSUMED.relation('(' + base + ')') + ')')}),\n"
            "promo AS (SELECT g.*, c.name AS credit_name, c.full_name AS credit_full_name, c.id AS credit_id, "
            f"CAST(c.amount AS {MONEY}) AS credit_amount FROM g, "
            f"unnest(list_filter(g.credits, lambda c: c.type = {PROMO})) AS u(c))\n"
            f"SELECT {select_list({**usage_cols, **shared})} FROM g\n"
            "UNION ALL\n"
            f"SELECT {select_list({**credit_cols, **shared})} FROM promo"
        )

    # -- internals ---------------------------------------------------------------------
    @staticmethod
    def _prepared(raw: str) -> str:
        """Per raw row: exact money, the CUD credit (if any), merged tags, category."""
        return f"""SELECT *,
  {_money("cost")} AS x_cost,
  {_money("COALESCE(cost_at_list, cost)")} AS x_list,
  {_credit_sum(f"coalesce(c.type, '') <> {PROMO}")} AS x_discounts,
  {_credit_sum(f"coalesce(c.type, '') <> {PROMO} AND coalesce(c.type, '') NOT IN {NOT_CONTRACTED}")}
    AS x_contract_discounts,
  {CM_CUD_SQL} AS x_cm_cud,
  {NEW_FEE_SQL} AS x_new_fee,
  list_filter(credits, lambda c: c.type IN {COMMITMENT_TYPES})[1] AS x_cud,
  {_tags()} AS x_tags,
  CASE lower(cost_type)
    WHEN 'tax' THEN 'Tax'
    WHEN 'adjustment' THEN 'Adjustment'
    WHEN 'rounding_error' THEN 'Adjustment'
    ELSE 'Usage'
  END AS x_category,
  (sku.description ILIKE 'Commitment%' OR {NEW_FEE_SQL}) AS x_cud_fee,
  (sku.description ILIKE '%spot%' OR sku.description ILIKE '%preemptible%') AS x_spot,
  list_filter(system_labels, lambda l: l.key = 'compute.googleapis.com/machine_spec')[1].value AS x_machine
FROM {raw}"""

    @staticmethod
    def _common(start: str, end: str) -> dict[str, str]:
        return {
            "billing_account_id": "billing_account_id",
            "billing_account_name": "billing_account_id",
            "billing_account_type": "'Billing Account'",
            "billing_currency": "currency",
            "billing_period_start": start,
            "billing_period_end": end,
            # FOCUS: InvoiceIssuerName == ProviderName unless a third party invoices.
            "invoice_issuer_name": "CASE WHEN transaction_type = 'THIRD_PARTY_RESELLER' "
            "THEN COALESCE(seller_name, 'Google Cloud') ELSE 'Google Cloud' END",
            "provider_name": "'Google Cloud'",
            "publisher_name": "CASE WHEN transaction_type = 'THIRD_PARTY_AGENCY' "
            "THEN COALESCE(seller_name, 'Google Cloud') ELSE 'Google Cloud' END",
            "service_name": "COALESCE(service.description, 'Unknown')",
            "service_category": _case("service.description", SERVICE_CATEGORIES, "'Other'"),
            "sub_account_id": "project.id",
            "sub_account_name": "project.name",
            "sub_account_type": "CASE WHEN project.id IS NULL THEN NULL ELSE 'Project' END",
            "region_id": "location.region",
            "region_name": _case("location.region", REGION_NAMES, "location.region"),
            "availability_zone": "location.zone",
            "resource_id": "resource.global_name",
            "resource_name": "resource.name",
            "resource_type": r"regexp_extract(resource.global_name, '/([A-Za-z]+)/[^/]+$', 1)",
            "tags": "x_tags",
            # provisional invoice id (the export has none): one invoice per account and month
            "invoice_id": "billing_account_id || '-' || invoice.month",
            "service_subcategory": _case(
                "service.description",
                SERVICE_SUBCATEGORIES,
                other_subcategory_sql(_case("service.description", SERVICE_CATEGORIES, "'Other'")),
            ),
            "x_usage_type": "sku.description",
            "x_instance_type": "x_machine",
        }

    def _usage_columns(self, start: str, end: str) -> dict[str, str]:
        regular = "lower(cost_type) = 'regular'"
        is_usage = "x_category = 'Usage'"
        billed = "x_cost + x_discounts"
        return {
            **self._common(start, end),
            "billed_cost": billed,
            "effective_cost": billed,
            # CUD-priced usage: at the default consumption model's price (negotiated, no CUD)
            "contracted_cost": f"CASE WHEN x_cm_cud THEN {_money('COALESCE(cost_at_effective_price_default, cost)')} "
            "+ x_contract_discounts ELSE x_cost + x_contract_discounts END",
            "list_cost": "CASE WHEN lower(cost_type) = 'regular' THEN x_list ELSE x_cost END",
            "charge_category": "x_category",
            "charge_class": "CASE WHEN lower(cost_type) IN ('adjustment', 'rounding_error') "
            "AND adjustment_info.id IS NOT NULL THEN 'Correction' END",
            "charge_description": "COALESCE(adjustment_info.description, sku.description, service.description, "
            "cost_type)",
            "charge_frequency": "CASE WHEN x_category = 'Usage' AND x_cud_fee THEN 'Recurring' "
            "WHEN x_category = 'Usage' THEN 'Usage-Based' ELSE 'One-Time' END",
            "charge_period_start": "timezone('UTC', usage_start_time)",
            "charge_period_end": "timezone('UTC', usage_end_time)",
            "pricing_quantity": f"CASE WHEN {regular} THEN {PRICING.quantity('usage.amount_in_pricing_units')} END",
            "pricing_unit": f"CASE WHEN {regular} THEN {PRICING.unit} END",
            "consumed_quantity": f"CASE WHEN {is_usage} THEN {CONSUMED.quantity('usage.amount')} END",
            "consumed_unit": f"CASE WHEN {is_usage} THEN {CONSUMED.unit} END",
            # effective_price is per price.pricing_unit_quantity units: per one unit here
            "contracted_unit_price": f"CASE WHEN {regular} THEN "
            + PRICING.price(
                "CAST(price.effective_price AS DECIMAL(38,12)) "
                "/ COALESCE(NULLIF(CAST(price.pricing_unit_quantity AS DECIMAL(38,12)), 0), 1)"
            )
            + " END",
            "list_unit_price": f"CASE WHEN {regular} AND usage.amount_in_pricing_units > 0 THEN "
            + PRICING.price(
                "CAST(cost_at_list AS DECIMAL(38,12)) / CAST(usage.amount_in_pricing_units AS DECIMAL(38,12))"
            )
            + " END",
            "pricing_category": f"CASE WHEN NOT {regular} THEN NULL WHEN x_cud IS NOT NULL OR x_cud_fee OR x_cm_cud "
            "THEN 'Committed' WHEN x_spot THEN 'Dynamic' ELSE 'Standard' END",
            "commitment_discount_category": "CASE WHEN x_cud.type = 'COMMITTED_USAGE_DISCOUNT' THEN 'Usage' "
            "WHEN x_cud.type = 'COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE' OR x_cm_cud OR x_new_fee THEN 'Spend' END",
            # new model: the CUD's subscription ties the fee to the usage it discounted
            "commitment_discount_id": "COALESCE(x_cud.id, CASE WHEN x_cm_cud THEN COALESCE("
            "consumption_model.applied_subscription_instance_id, subscription.instance_id, consumption_model.id) "
            "WHEN x_new_fee THEN COALESCE(subscription.instance_id, sku.id) END)",
            "commitment_discount_name": "COALESCE(x_cud.full_name, CASE WHEN x_cm_cud THEN consumption_model.description "
            "WHEN x_new_fee THEN sku.description END)",
            "commitment_discount_type": "CASE WHEN x_cud IS NOT NULL OR x_cm_cud OR x_new_fee "
            "THEN 'Committed Use Discount' END",
            # a new-model fee row nets (fee + offset) to the commitment not used: 'Unused'
            "commitment_discount_status": f"CASE WHEN NOT {is_usage} THEN NULL WHEN x_cud IS NOT NULL OR x_cm_cud "
            "THEN 'Used' WHEN x_new_fee THEN 'Unused' END",
            "sku_id": "sku.id",
            "sku_meter": "sku.description",
            "sku_price_id": f"CASE WHEN {regular} THEN sku.id || ':' || "
            "COALESCE(CAST(price.tier_start_amount AS VARCHAR), '0') END",
            "x_charge_type": "cost_type",
        }

    def _credit_columns(self, start: str, end: str) -> dict[str, str]:
        return {
            **self._common(start, end),
            "billed_cost": "credit_amount",
            "effective_cost": "credit_amount",
            "contracted_cost": "0",
            "list_cost": "0",
            "charge_category": "'Credit'",
            "charge_description": "COALESCE(credit_full_name, credit_name, 'Promotional credit')",
            "charge_frequency": "'One-Time'",
            "charge_period_start": "timezone('UTC', usage_start_time)",
            "charge_period_end": "timezone('UTC', usage_end_time)",
            "sku_id": "sku.id",
            "x_charge_type": "'credit:PROMOTION'",
            "x_operation": "credit_id",
        }


CONVERTER = GcpBillingConverter("gcp_detailed")
STANDARD = GcpBillingConverter("gcp_standard")

"""Where AWS CUR becomes FOCUS 1.2: converters for CUR 2.0 (Data Exports, parquet) and
legacy CUR (csv.gz / parquet). Pure: only DuckDB SQL text, no I/O.

One mapping serves both: legacy names (`lineItem/UnblendedCost`, `resourceTags/user:team`,
or the legacy-parquet `resource_tags_user_team` columns) are first renamed to CUR 2.0 snake
names (`line_item_unblended_cost`, a `resource_tags` MAP) by `normalize_sql`. The one piece of
I/O: a legacy csv delivery's header lines are read as written (`csv_headers`), because DuckDB
folds header names that differ only in case, and AWS tag keys do not (`user:Team` and
`user:team` are two tags).

Money rules: BilledCost = line_item_unblended_cost on every row (the invoice, so the
FOCUS total equals the export's unblended total to the cent); EffectiveCost is amortised
(SP covered usage -> SP effective cost, negation and upfront fees -> 0, RI discounted usage
-> reservation effective cost, RI upfront Fee -> 0, everything else -> unblended).

Commitment fee lines (SavingsPlanRecurringFee, RIFee) become TWO FOCUS rows, as FOCUS 1.2
models unused commitment: a `Purchase` row (BilledCost = the fee, EffectiveCost 0: FOCUS and
its validator want EffectiveCost 0 on purchases) and a `Usage` row with
CommitmentDiscountStatus `Unused` (BilledCost 0, EffectiveCost = the unused commitment). Both
totals are unchanged; a period therefore has one more FOCUS row per commitment fee line than
raw rows. ProviderName = PublisherName = InvoiceIssuerName = "AWS" (as AWS's own FOCUS export;
the validator wants BilledCost 0 whenever ProviderName differs from InvoiceIssuerName).
Each ServiceName has exactly one ServiceCategory and ServiceSubcategory (EBS and data
transfer get their own ServiceName). See docs/focus-validator.md.

A line without a description gets a ChargeDescription built from its service, usage type and
operation (FOCUS: SHOULD NOT be null); `derived_counts_sql` counts those rows per load. The
variants AWS ships (CUR 2.0 column selections, legacy csv / parquet names) are in
docs/billing-exports/aws.md.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import re
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence

from finops.batch import ConvertContext
from finops.focus.aws_columns import CUR2_COLUMNS, cur2_variant, legacy_variant
from finops.focus.projection import raw_totals_by_currency
from finops.focus.units import unit_sql
from finops.sql_text import sql_ident, sql_literal

DEC = "DECIMAL(38,10)"
# BillingCurrency, in the mapping and in the raw per-currency totals (line_item_currency_code is required)
_RAW_CURRENCY = "UPPER(TRIM(NULLIF(CAST(line_item_currency_code AS VARCHAR), '')))"
QDEC = "DECIMAL(38,12)"  # FOCUS quantities keep 12 decimals (schema QUANTITY_SCALE)

# Columns the mapping cannot work without (after legacy normalisation).
REQUIRED = (
    "bill_payer_account_id",
    "bill_billing_period_start_date",
    "bill_billing_period_end_date",
    "line_item_line_item_type",
    "line_item_unblended_cost",
    "line_item_usage_start_date",
    "line_item_usage_end_date",
    "line_item_currency_code",
    "line_item_product_code",
)

NUMERIC = (
    "line_item_unblended_cost",
    "line_item_unblended_rate",
    "line_item_net_unblended_cost",
    "line_item_net_unblended_rate",
    "line_item_usage_amount",
    "line_item_blended_cost",
    "pricing_public_on_demand_cost",
    "pricing_public_on_demand_rate",
    "savings_plan_savings_plan_effective_cost",
    "savings_plan_total_commitment_to_date",
    "savings_plan_used_commitment",
    "savings_plan_savings_plan_rate",
    "savings_plan_recurring_commitment_for_billing_period",
    "savings_plan_amortized_upfront_commitment_for_billing_period",
    "reservation_effective_cost",
    "reservation_unused_amortized_upfront_fee_for_billing_period",
    "reservation_unused_recurring_fee",
    "reservation_unused_quantity",
    "reservation_amortized_upfront_fee_for_billing_period",
    "reservation_recurring_fee_for_usage",
)
TIMESTAMPS = (
    "bill_billing_period_start_date",
    "bill_billing_period_end_date",
    "line_item_usage_start_date",
    "line_item_usage_end_date",
)

SP_TYPES = (
    "SavingsPlanCoveredUsage",
    "SavingsPlanNegation",
    "SavingsPlanRecurringFee",
    "SavingsPlanUpfrontFee",
)
RI_TYPES = ("DiscountedUsage", "RIFee")
COMMITMENT_FEES = ("SavingsPlanRecurringFee", "RIFee")  # each -> a Purchase row + an Unused Usage row

SERVICE_NAMES = {
    "AmazonEC2": "Amazon Elastic Compute Cloud",
    "AmazonEBS": "Amazon Elastic Block Store",  # EC2 EBS lines (own service key, see _svc_key)
    "AmazonS3": "Amazon Simple Storage Service",
    "AWSDataTransfer": "AWS Data Transfer",
    "AmazonSageMaker": "Amazon SageMaker",
    "AmazonBedrock": "Amazon Bedrock",
    "AmazonEKS": "Amazon Elastic Kubernetes Service",
    "AmazonECS": "Amazon Elastic Container Service",
    "AWSLambda": "AWS Lambda",
    "AmazonRDS": "Amazon Relational Database Service",
    "AmazonDynamoDB": "Amazon DynamoDB",
    "AmazonRedshift": "Amazon Redshift",
    "AmazonCloudWatch": "AmazonCloudWatch",
    "AmazonVPC": "Amazon Virtual Private Cloud",
    "AmazonCloudFront": "Amazon CloudFront",
    "AmazonRoute53": "Amazon Route 53",
    "AWSELB": "Elastic Load Balancing",
    "AmazonEFS": "Amazon Elastic File System",
    "AmazonFSx": "Amazon FSx",
    "AWSBackup": "AWS Backup",
    "AWSSupportBusiness": "AWS Support (Business)",
    "AWSSupportEnterprise": "AWS Support (Enterprise)",
    "ComputeSavingsPlans": "Savings Plans for AWS Compute usage",
    "AmazonAthena": "Amazon Athena",
    "AWSGlue": "AWS Glue",
    "AmazonKinesis": "Amazon Kinesis",
}
# service key -> (ServiceCategory, ServiceSubcategory); FOCUS 1.2 allows one of each per ServiceName.
SERVICE_CLASSES: dict[str, tuple[str, str]] = {
    "AmazonEC2": ("Compute", "Virtual Machines"),
    "AmazonEKS": ("Compute", "Containers"),
    "AmazonECS": ("Compute", "Containers"),
    "AWSLambda": ("Compute", "Serverless Compute"),
    "ComputeSavingsPlans": ("Compute", "Other (Compute)"),
    "AmazonEBS": ("Storage", "Block Storage"),
    "AmazonS3": ("Storage", "Object Storage"),
    "AmazonEFS": ("Storage", "File Storage"),
    "AmazonFSx": ("Storage", "File Storage"),
    "AWSBackup": ("Storage", "Backup Storage"),
    "AWSDataTransfer": ("Networking", "Network Connectivity"),
    "AmazonVPC": ("Networking", "Network Infrastructure"),
    "AmazonCloudFront": ("Networking", "Content Delivery"),
    "AmazonRoute53": ("Networking", "Network Routing"),
    "AWSELB": ("Networking", "Application Networking"),
    "AmazonSageMaker": ("AI and Machine Learning", "Machine Learning"),
    "AmazonBedrock": ("AI and Machine Learning", "Generative AI"),
    "AmazonRDS": ("Databases", "Relational Databases"),
    "AmazonDynamoDB": ("Databases", "NoSQL Databases"),
    "AmazonRedshift": ("Databases", "Data Warehouses"),
    "AmazonAthena": ("Analytics", "Analytics Platforms"),
    "AWSGlue": ("Analytics", "Data Processing"),
    "AmazonKinesis": ("Analytics", "Streaming Analytics"),
    "AmazonCloudWatch": ("Management and Governance", "Observability"),
    "AWSSupportBusiness": ("Management and Governance", "Support"),
    "AWSSupportEnterprise": ("Management and Governance", "Support"),
}
SERVICE_CATEGORIES = {k: v[0] for k, v in SERVICE_CLASSES.items()}
SERVICE_SUBCATEGORIES = {k: v[1] for k, v in SERVICE_CLASSES.items()}


# ChargeDescription where the line has none (FOCUS ChargeDescription SHOULD NOT be null): what
# the line itself says, e.g. "Amazon Elastic Compute Cloud USE1-BoxUsage:p5.48xlarge (RunInstances)",
# "Tax: AWS Lambda". Columns of the `f` step of cur2_focus_sql.
_DERIVED_DESCRIPTION = (
    "concat_ws(' ', CASE WHEN lit IS NOT NULL AND lit <> 'Usage' THEN lit || ':' END, "
    "COALESCE(svc_name, product_code, 'AWS'), usage_type, '(' || operation || ')')"
)
# Columns the derived counts read: normalize_sql adds them as NULL when an export left them out.
_ENSURED = ("line_item_line_item_description",)


def _derived_counts(raw: str) -> str:
    """(FOCUS column, FOCUS rows) this mapping filled because the export left it empty. A
    commitment fee line is two FOCUS rows (Purchase + Unused), so it counts twice."""
    weight = f"CASE WHEN {_when_in('CAST(line_item_line_item_type AS VARCHAR)', COMMITMENT_FEES)} THEN 2 ELSE 1 END"
    return (
        f'SELECT \'ChargeDescription\' AS "column", CAST(COALESCE(SUM({weight}), 0) AS BIGINT) AS "rows" '
        f"FROM {raw} WHERE NULLIF(TRIM(CAST(line_item_line_item_description AS VARCHAR)), '') IS NULL"
    )


# --------------------------------------------------------------------------- helpers
def legacy_to_snake(name: str) -> str:
    """`lineItem/UnblendedCost` -> `line_item_unblended_cost`; `savingsPlan/SavingsPlanARN` ->
    `savings_plan_savings_plan_a_r_n` (CUR 2.0 / Athena spell every capital separately)."""
    category, _, field = name.partition("/")

    def snake(s: str) -> str:
        return re.sub(r"(?<!^)([A-Z])", r"_\1", s).lower()

    return f"{snake(category)}_{snake(field)}" if field else snake(category)


def _squash(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


# A header whose case was changed on the way (a lower-cased `lineitem/unblendedcost` from a
# warehouse unload, an upper-cased `LINE_ITEM_UNBLENDED_COST`) has lost the capitals the snake
# form is built from; letters and digits alone still name exactly one documented column.
_CUR2 = frozenset(CUR2_COLUMNS)
_BY_SQUASHED = {_squash(c): c for c in CUR2_COLUMNS}
assert len(_BY_SQUASHED) == len(CUR2_COLUMNS), "two CUR 2.0 columns squash to one name"


def canonical_cur_name(snaked: str) -> str:
    """The documented CUR 2.0 name of a header already snaked, when its case was lost."""
    if snaked in _CUR2:
        return snaked
    return _BY_SQUASHED.get(_squash(snaked), snaked)


def _is_varchar(t: str | None) -> bool:
    return t is not None and t.upper().startswith("VARCHAR")


def _when_in(col: str, values: tuple[str, ...]) -> str:
    return f"{col} IN ({', '.join(sql_literal(v) for v in values)})"


class _Cols:
    """Column accessors that tolerate optional columns an export left out."""

    def __init__(self, columns: Mapping[str, str]):
        self.types = dict(columns)

    def has(self, name: str) -> bool:
        return not self.types or name in self.types

    def s(self, name: str) -> str:
        """String column, '' -> NULL."""
        if not self.has(name):
            return "CAST(NULL AS VARCHAR)"
        return f"NULLIF(CAST({sql_ident(name)} AS VARCHAR), '')"

    def m(self, name: str, dec: str = DEC) -> str:
        """Exact money (or, with dec=QDEC, a quantity at FOCUS quantity scale)."""
        if not self.has(name):
            return f"CAST(NULL AS {dec})"
        t = self.types.get(name)
        if _is_varchar(t):
            v = f"NULLIF(TRIM({sql_ident(name)}), '')"
            return f"COALESCE(TRY_CAST({v} AS {dec}), CAST(CAST({v} AS DOUBLE) AS {dec}))"
        return f"CAST({sql_ident(name)} AS {dec})"

    def ts(self, name: str) -> str:
        if not self.has(name):
            return "CAST(NULL AS TIMESTAMP)"
        t = (self.types.get(name) or "TIMESTAMP").upper()
        if t.startswith("VARCHAR"):
            return f"CAST(CAST(NULLIF(TRIM({sql_ident(name)}), '') AS TIMESTAMPTZ) AS TIMESTAMP)"
        return f"CAST({sql_ident(name)} AS TIMESTAMP)"


# --------------------------------------------------------------------------- mapping
def cur2_focus_sql(raw: str, ctx: ConvertContext) -> str:
    """SELECT producing every FOCUS column (snake_case) from CUR 2.0-named `raw`."""
    c = _Cols(ctx.raw_columns)
    if not c.has("resource_tags"):
        tags = "CAST(NULL AS VARCHAR)"
    elif _is_varchar(c.types.get("resource_tags")):  # csv Data Exports carry the map as JSON text
        tags = (
            "CASE WHEN NULLIF(TRIM(resource_tags), '') IS NULL OR TRIM(resource_tags) = '{}' THEN NULL "
            "ELSE CAST(json(resource_tags) AS VARCHAR) END"
        )
    else:
        tags = (
            "CASE WHEN resource_tags IS NULL OR cardinality(resource_tags) = 0 THEN NULL "
            "ELSE CAST(to_json(resource_tags) AS VARCHAR) END"
        )
    cr_status = (
        f"CASE WHEN {c.s('capacity_reservation_capacity_reservation_status')} ILIKE '%unused%' THEN 'Unused' "
        f"WHEN {c.s('capacity_reservation_capacity_reservation_a_r_n')} IS NOT NULL THEN 'Used' END"
    )
    base = f"""
SELECT
  {c.s("line_item_line_item_type")} AS lit,
  {c.m("line_item_unblended_cost")} AS unblended,
  {c.m("line_item_net_unblended_cost")} AS net_unblended,
  {c.m("line_item_unblended_rate")} AS unblended_rate,
  {c.m("line_item_net_unblended_rate")} AS net_unblended_rate,
  {c.m("line_item_usage_amount", QDEC)} AS usage_amount,
  {c.m("pricing_public_on_demand_cost")} AS public_od_cost,
  {c.m("pricing_public_on_demand_rate")} AS public_od_rate,
  {c.m("savings_plan_savings_plan_effective_cost")} AS sp_effective,
  {c.m("savings_plan_total_commitment_to_date")} AS sp_total_commitment,
  {c.m("savings_plan_used_commitment")} AS sp_used_commitment,
  {c.m("reservation_effective_cost")} AS ri_effective,
  {c.m("reservation_unused_amortized_upfront_fee_for_billing_period")} AS ri_unused_upfront,
  {c.m("reservation_unused_recurring_fee")} AS ri_unused_recurring,
  {c.m("reservation_unused_quantity", QDEC)} AS ri_unused_quantity,
  {c.s("savings_plan_savings_plan_a_r_n")} AS sp_arn,
  {c.s("reservation_reservation_a_r_n")} AS ri_arn,
  {c.s("line_item_usage_type")} AS usage_type,
  {c.s("line_item_operation")} AS operation,
  {c.s("line_item_product_code")} AS product_code,
  {c.s("product_product_family")} AS product_family,
  {_RAW_CURRENCY} AS currency,
  UPPER(TRIM({c.s("pricing_currency")})) AS pricing_currency,
  {c.s("pricing_unit")} AS pricing_unit,
  {c.s("bill_bill_type")} AS bill_type,
  {c.s("bill_payer_account_id")} AS payer_id,
  {c.s("bill_payer_account_name")} AS payer_name,
  {c.s("bill_invoice_id")} AS invoice_id,
  {c.s("bill_invoicing_entity")} AS invoicing_entity,
  {c.s("bill_billing_entity")} AS billing_entity,
  {c.s("line_item_legal_entity")} AS legal_entity,
  {c.ts("bill_billing_period_start_date")} AS bp_start,
  {c.ts("bill_billing_period_end_date")} AS bp_end,
  {c.ts("line_item_usage_start_date")} AS cp_start,
  {c.ts("line_item_usage_end_date")} AS cp_end,
  {c.s("line_item_line_item_description")} AS description,
  {c.s("line_item_usage_account_id")} AS usage_account_id,
  {c.s("line_item_usage_account_name")} AS usage_account_name,
  {c.s("line_item_availability_zone")} AS az,
  {c.s("product_region_code")} AS region_code,
  {c.s("product_location")} AS region_name,
  {c.s("line_item_resource_id")} AS resource_id,
  {c.s("product_sku")} AS sku,
  {c.s("pricing_rate_code")} AS rate_code,
  {c.s("product_instance_type")} AS instance_type,
  {c.s("capacity_reservation_capacity_reservation_a_r_n")} AS cr_id,
  {cr_status} AS cr_status,
  {tags} AS tags_json
FROM {raw}"""
    # service key: data transfer and EC2 EBS lines are services of their own, so each
    # ServiceName keeps exactly one ServiceCategory / ServiceSubcategory.
    svc_key = """CASE
    WHEN usage_type LIKE '%DataTransfer%' OR usage_type LIKE '%-Bytes%' OR product_family = 'Data Transfer'
      THEN 'AWSDataTransfer'
    WHEN product_code = 'AmazonEC2' AND (usage_type LIKE '%EBS:%' OR product_family = 'Storage') THEN 'AmazonEBS'
    ELSE product_code END"""

    usage_like = (
        "Usage",
        "DiscountedUsage",
        "SavingsPlanCoveredUsage",
        "SavingsPlanNegation",
        "BundledDiscount",
    )
    charge_category = f"""CASE
    WHEN unused THEN 'Usage'
    WHEN lit = 'Tax' THEN 'Tax'
    WHEN lit = 'Credit' THEN 'Credit'
    WHEN lit = 'Refund' THEN 'Adjustment'
    WHEN {_when_in("lit", ("Fee", "RIFee", "SavingsPlanUpfrontFee", "SavingsPlanRecurringFee"))} THEN 'Purchase'
    WHEN {_when_in("lit", usage_like)} OR lit LIKE '%Discount' THEN 'Usage'
    ELSE 'Adjustment' END"""
    # `unused` row of a commitment fee line: the unused commitment; its Purchase row: 0.
    effective = """CASE
    WHEN unused THEN CASE lit
        WHEN 'SavingsPlanRecurringFee' THEN COALESCE(sp_total_commitment - sp_used_commitment, unblended)
        ELSE COALESCE(ri_unused_upfront, 0) + COALESCE(ri_unused_recurring, 0) END
    WHEN lit = 'SavingsPlanCoveredUsage' THEN COALESCE(sp_effective, 0)
    WHEN lit IN ('SavingsPlanNegation', 'SavingsPlanUpfrontFee', 'SavingsPlanRecurringFee', 'RIFee') THEN 0
    WHEN lit = 'DiscountedUsage' THEN COALESCE(ri_effective, 0)
    WHEN lit = 'Fee' AND ri_arn IS NOT NULL THEN 0
    ELSE unblended END"""
    is_spot = "(usage_type LIKE '%SpotUsage%')"
    pricing_category = f"""CASE
    WHEN cc IN ('Tax', 'Credit', 'Adjustment') THEN NULL
    WHEN {_when_in("lit", ("DiscountedUsage", "SavingsPlanCoveredUsage", "SavingsPlanNegation"))} THEN 'Committed'
    WHEN {_when_in("lit", ("RIFee", "SavingsPlanRecurringFee", "SavingsPlanUpfrontFee"))}
         OR (lit = 'Fee' AND ri_arn IS NOT NULL) THEN 'Committed'
    WHEN {is_spot} THEN 'Dynamic'
    ELSE 'Standard' END"""
    cd_id = f"""CASE
    WHEN {_when_in("lit", SP_TYPES)} THEN sp_arn
    WHEN {_when_in("lit", RI_TYPES)} OR (lit = 'Fee' AND ri_arn IS NOT NULL) THEN ri_arn END"""
    # One hash join against a 26-row table instead of three 26-branch CASE chains per row.
    services = ", ".join(
        f"({sql_literal(k)}, {sql_literal(SERVICE_NAMES[k])}, {sql_literal(SERVICE_CATEGORIES[k])}, "
        f"{sql_literal(SERVICE_SUBCATEGORIES[k])})"
        for k in SERVICE_NAMES
    )
    frequency = f"""CASE
    WHEN {_when_in("lit", ("RIFee", "SavingsPlanRecurringFee", "Tax"))} AND NOT unused THEN 'Recurring'
    WHEN {_when_in("lit", ("Fee", "SavingsPlanUpfrontFee", "Credit", "Refund"))} OR bill_type IN ('Purchase', 'Refund') THEN 'One-Time'
    ELSE 'Usage-Based' END"""
    usage_cat = "cc = 'Usage'"
    same_ccy = "(pricing_currency IS NULL OR pricing_currency = currency)"

    return f"""
WITH b0 AS ({base}
), b AS (  -- commitment fee lines twice: their Purchase row, then their Unused usage row
SELECT *, unnest(CASE WHEN {_when_in("lit", COMMITMENT_FEES)} THEN [false, true] ELSE [false] END) AS unused,
  {svc_key} AS svc
FROM b0
), f AS (
SELECT b.*, {charge_category} AS cc, ({effective}) AS eff, {unit_sql("pricing_unit")} AS focus_unit,
  svc_map.svc_name, svc_map.svc_category, svc_map.svc_subcategory
FROM b LEFT JOIN (VALUES {services}) AS svc_map(svc_key, svc_name, svc_category, svc_subcategory)
  ON b.svc = svc_map.svc_key
)
SELECT
  CASE WHEN unused THEN 0 ELSE unblended END AS billed_cost,
  payer_id AS billing_account_id,
  payer_name AS billing_account_name,
  currency AS billing_currency,
  bp_start AS billing_period_start,
  bp_end AS billing_period_end,
  cc AS charge_category,
  CASE WHEN lit = 'Refund' THEN 'Correction' END AS charge_class,
  COALESCE(description, {_DERIVED_DESCRIPTION}) AS charge_description,
  cp_start AS charge_period_start,
  cp_end AS charge_period_end,
  CASE WHEN unused THEN 0 ELSE COALESCE(net_unblended, unblended) END AS contracted_cost,
  eff AS effective_cost,
  'AWS' AS invoice_issuer_name,
  CASE
    WHEN unused OR lit = 'SavingsPlanNegation' THEN 0
    WHEN {_when_in("lit", ("Usage", "DiscountedUsage", "SavingsPlanCoveredUsage"))} THEN COALESCE(public_od_cost, unblended)
    ELSE unblended END AS list_cost,
  CASE WHEN cc IN ('Usage', 'Purchase') THEN usage_amount END AS pricing_quantity,
  CASE WHEN cc IN ('Usage', 'Purchase') AND usage_amount IS NOT NULL THEN COALESCE(focus_unit, 'Units') END
    AS pricing_unit,
  'AWS' AS provider_name,
  CASE WHEN billing_entity = 'AWS Marketplace' THEN COALESCE(legal_entity, 'AWS Marketplace') ELSE 'AWS' END AS publisher_name,
  COALESCE(svc_category, 'Other') AS service_category,
  COALESCE(svc_subcategory, 'Other (Other)') AS service_subcategory,
  COALESCE(svc_name, svc, 'Unknown') AS service_name,
  az AS availability_zone,
  {frequency} AS charge_frequency,
  invoice_id AS invoice_id,
  CAST(NULL AS VARCHAR) AS billing_account_type,
  cr_id AS capacity_reservation_id,
  cr_status AS capacity_reservation_status,
  CASE WHEN {_when_in("lit", SP_TYPES)} AND sp_arn IS NOT NULL THEN 'Spend'
       WHEN ({_when_in("lit", RI_TYPES)} OR lit = 'Fee') AND ri_arn IS NOT NULL THEN 'Usage' END
    AS commitment_discount_category,
  {cd_id} AS commitment_discount_id,
  CAST(NULL AS VARCHAR) AS commitment_discount_name,
  CASE
    WHEN lit = 'SavingsPlanCoveredUsage' THEN sp_effective
    WHEN lit = 'SavingsPlanRecurringFee' AND unused THEN sp_total_commitment - sp_used_commitment
    WHEN lit = 'SavingsPlanRecurringFee' THEN sp_total_commitment
    WHEN lit = 'DiscountedUsage' THEN usage_amount
    WHEN lit = 'RIFee' AND unused THEN ri_unused_quantity
    WHEN lit = 'RIFee' THEN usage_amount END AS commitment_discount_quantity,
  CASE
    WHEN ({_when_in("lit", SP_TYPES)} AND sp_arn IS NOT NULL) THEN currency
    WHEN ({_when_in("lit", RI_TYPES)} AND ri_arn IS NOT NULL) THEN 'Hours' END AS commitment_discount_unit,
  CASE
    WHEN {_when_in("lit", ("DiscountedUsage", "SavingsPlanCoveredUsage", "SavingsPlanNegation"))} THEN 'Used'
    WHEN unused THEN 'Unused' END AS commitment_discount_status,
  CASE WHEN {_when_in("lit", SP_TYPES)} AND sp_arn IS NOT NULL THEN 'Savings Plan'
       WHEN ({_when_in("lit", RI_TYPES)} OR lit = 'Fee') AND ri_arn IS NOT NULL THEN 'Reserved Instance' END
    AS commitment_discount_type,
  -- a negation line takes back the on-demand *cost* of SP-covered usage, not the usage: its
  -- consumption is 0, or sum(ConsumedQuantity) would count covered usage twice (FOCUS 1.2 only
  -- asks for a non-null decimal on Usage rows)
  CASE WHEN {usage_cat} AND NOT unused THEN CASE WHEN lit = 'SavingsPlanNegation' THEN 0 ELSE usage_amount END END
    AS consumed_quantity,
  CASE WHEN {usage_cat} AND NOT unused AND usage_amount IS NOT NULL THEN COALESCE(focus_unit, 'Units') END
    AS consumed_unit,
  CASE WHEN unused THEN 0 WHEN cc IN ('Usage', 'Purchase') THEN COALESCE(net_unblended_rate, unblended_rate) END
    AS contracted_unit_price,
  CASE WHEN unused THEN 0 WHEN cc IN ('Usage', 'Purchase') THEN public_od_rate END AS list_unit_price,
  {pricing_category} AS pricing_category,
  COALESCE(pricing_currency, currency) AS pricing_currency,
  CASE WHEN {same_ccy} AND unused THEN 0
       WHEN {same_ccy} AND cc IN ('Usage', 'Purchase') THEN COALESCE(net_unblended_rate, unblended_rate) END
    AS pricing_currency_contracted_unit_price,
  CASE WHEN {same_ccy} THEN eff END AS pricing_currency_effective_cost,
  CASE WHEN {same_ccy} AND unused THEN 0
       WHEN {same_ccy} AND cc IN ('Usage', 'Purchase') THEN public_od_rate END AS pricing_currency_list_unit_price,
  region_code AS region_id,
  region_name AS region_name,
  resource_id AS resource_id,
  CAST(NULL AS VARCHAR) AS resource_name,
  CAST(NULL AS VARCHAR) AS resource_type,
  sku AS sku_id,
  usage_type AS sku_meter,
  CAST(NULL AS VARCHAR) AS sku_price_details,
  rate_code AS sku_price_id,
  usage_account_id AS sub_account_id,
  usage_account_name AS sub_account_name,
  CAST(NULL AS VARCHAR) AS sub_account_type,
  tags_json AS tags,
  {sql_literal(ctx.source)} AS x_source,
  {sql_literal(ctx.billing_period)} AS x_billing_period,
  'aws' AS x_provider,
  usage_type AS x_usage_type,
  operation AS x_operation,
  lit AS x_charge_type,
  instance_type AS x_instance_type,
  {sql_literal(ctx.load_id)} AS x_load_id
FROM f"""


def _read_parquet(files: list[str]) -> str:
    lst = ", ".join(sql_literal(f) for f in files)
    return f"SELECT * FROM read_parquet([{lst}], union_by_name = true, hive_partitioning = false)"


class Cur2Converter:
    """AWS Data Exports CUR 2.0 (parquet; snake columns, resource_tags MAP)."""

    name = "cur2"
    required_raw_columns = REQUIRED

    def reader_sql(self, files: list[str]) -> str:
        # Data Exports can also deliver gzip csv: the same names, all text
        if any(".csv" in f.lower() for f in files):
            return CurLegacyConverter().reader_sql(files)
        return _read_parquet(files)

    def normalize_sql(self, raw: str, columns: Mapping[str, str]) -> str:
        return _typed_select(raw, columns, {k: k for k in columns}, tag_columns={})

    def focus_sql(self, raw: str, ctx: ConvertContext) -> str:
        return cur2_focus_sql(raw, ctx)

    def raw_billed_totals_sql(self, raw: str) -> str:
        return raw_totals_by_currency(raw, _RAW_CURRENCY, f"CAST(line_item_unblended_cost AS {DEC})")

    def variant(self, columns: Sequence[str]) -> str:
        return cur2_variant(columns)

    def derived_counts_sql(self, raw: str) -> str:
        return _derived_counts(raw)


def _typed_select(
    raw: str, columns: Mapping[str, str], renames: Mapping[str, str], tag_columns: Mapping[str, str]
) -> str:
    """Rename columns (original -> CUR 2.0 name), type text money / timestamps, and fold
    per-tag columns (original -> tag key) into a `resource_tags` MAP. Keys are SQL literals
    (escaped); tag values stay column references, never text in the SQL."""
    out: list[str] = []
    seen: set[str] = set()
    for orig, new in renames.items():
        if new in seen:  # two legacy spellings of one column: first wins
            continue
        seen.add(new)
        t = columns.get(orig, "")
        ident = sql_ident(orig)
        if new in NUMERIC and _is_varchar(t):
            v = f"NULLIF(TRIM({ident}), '')"
            expr = f"COALESCE(TRY_CAST({v} AS {DEC}), CAST(CAST({v} AS DOUBLE) AS {DEC}))"
        elif new in TIMESTAMPS and _is_varchar(t):
            expr = f"CAST(CAST(NULLIF(TRIM({ident}), '') AS TIMESTAMPTZ) AS TIMESTAMP)"
        else:
            expr = ident
        out.append(f"{expr} AS {sql_ident(new)}")
    if tag_columns:
        keys_seen: set[str] = set()
        entries = []
        for orig, key in tag_columns.items():
            if key in keys_seen:
                continue
            keys_seen.add(key)
            entries.append(f"struct_pack(k := {sql_literal(key)}, v := CAST({sql_ident(orig)} AS VARCHAR))")
        out.append(
            f"map_from_entries(list_filter([{', '.join(entries)}], lambda e: e.v IS NOT NULL AND e.v <> '')) "
            "AS resource_tags"
        )
    out += [f"CAST(NULL AS VARCHAR) AS {sql_ident(c)}" for c in _ENSURED if c not in seen]
    return f"SELECT {', '.join(out)} FROM {raw}"


# A header that another header of the delivery equals but for case gets this suffix + a hash of
# its exact spelling, so DuckDB (case-insensitive names) keeps the two apart; never part of an
# AWS tag key, whose characters are letters, digits, spaces and _ . : / = + - @.
_CASE_TAG = re.compile(r"~[0-9a-f]{8}$")


def csv_headers(path: str) -> list[str]:
    """A csv(.gz) file's header line, exactly as written."""
    opener = gzip.open if path.lower().endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8-sig", newline="") as f:
        return next(csv.reader(f), [])


def _case_safe(headers: list[list[str]]) -> list[list[str]]:
    spellings: dict[str, set[str]] = {}
    for names in headers:
        dup = sorted(n for n, k in Counter(names).items() if k > 1)
        if dup:
            raise ValueError(f"a csv file names column(s) {dup[:5]} twice")
        for n in names:
            spellings.setdefault(n.lower(), set()).add(n)

    def safe(n: str) -> str:
        return n if len(spellings[n.lower()]) == 1 else f"{n}~{hashlib.sha256(n.encode()).hexdigest()[:8]}"

    return [[safe(n) for n in names] for names in headers]


class CurLegacyConverter:
    """Legacy CUR: csv(.gz) with `category/Name` headers, or parquet with snake names and
    `resource_tags_*` columns. Renamed to CUR 2.0 names, then the one mapping applies."""

    name = "cur_legacy"
    required_raw_columns = REQUIRED
    _CSV_OPTIONS = (
        "all_varchar = true, delim = ',', quote = '\"', escape = '\"', auto_detect = false, strict_mode = true, "
        "max_line_size = 10000000"
    )

    def reader_sql(self, files: list[str]) -> str:
        csv_files = [f for f in files if ".csv" in f.lower()]
        if csv_files and len(csv_files) != len(files):
            raise ValueError("a legacy CUR delivery mixes csv and parquet files")
        if not csv_files:
            return _read_parquet(files)
        try:
            headers = [csv_headers(f) for f in files]
        except (OSError, EOFError, UnicodeDecodeError, csv.Error, zlib.error):
            headers = []  # unreadable: DuckDB's own read below names the problem
        safe = _case_safe(headers)
        if safe == headers:  # no two headers differ only in case: one multi-file read
            lst = ", ".join(sql_literal(f) for f in files)
            return (
                f"SELECT * FROM read_csv([{lst}], header = true, union_by_name = true, {self._CSV_OPTIONS})"
            )
        # case-distinct headers: each file read with its own names, skipping its header line
        parts = []
        for f, names in zip(files, safe, strict=True):
            cols = "{" + ", ".join(f"{sql_literal(n)}: 'VARCHAR'" for n in names) + "}"
            parts.append(
                f"SELECT * FROM read_csv({sql_literal(f)}, header = false, skip = 1, columns = {cols}, "
                f"{self._CSV_OPTIONS})"
            )
        return "\nUNION ALL BY NAME\n".join(parts)

    def normalize_sql(self, raw: str, columns: Mapping[str, str]) -> str:
        renames: dict[str, str] = {}
        tags: dict[str, str] = {}
        for col in columns:
            name = _CASE_TAG.sub("", col)  # the header as written (see _case_safe)
            if name.lower().startswith("resourcetags/"):
                tags[col] = name.split("/", 1)[1].replace(":", "_")
            elif name.startswith("resource_tags_"):
                tags[col] = name[len("resource_tags_") :]
            elif name == "resource_tags":
                renames[col] = name
            elif "/" in name:
                renames[col] = canonical_cur_name(legacy_to_snake(name))
            else:
                renames[col] = canonical_cur_name(name)
        # legacy `product/region` is CUR 2.0 `product_region_code` when the latter is absent;
        # an ARN header spelled `...Arn` (not `...ARN`) snakes to `_arn`, CUR 2.0 says `_a_r_n`
        aliases = {"product_region": "product_region_code"}
        aliases |= {n: n[: -len("_arn")] + "_a_r_n" for n in renames.values() if n.endswith("_arn")}
        for orig, new in list(renames.items()):
            if new in aliases and aliases[new] not in renames.values():
                renames[orig] = aliases[new]
        return _typed_select(raw, columns, renames, tags)

    def focus_sql(self, raw: str, ctx: ConvertContext) -> str:
        return cur2_focus_sql(raw, ctx)

    def raw_billed_totals_sql(self, raw: str) -> str:
        return raw_totals_by_currency(raw, _RAW_CURRENCY, f"CAST(line_item_unblended_cost AS {DEC})")

    def variant(self, columns: Sequence[str]) -> str:
        return legacy_variant([_CASE_TAG.sub("", c) for c in columns])

    def derived_counts_sql(self, raw: str) -> str:
        return _derived_counts(raw)

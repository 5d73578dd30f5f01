"""Google Cloud data already in FOCUS form -> our FOCUS table. Three shapes, one converter:

- Google's FOCUS export (`gcp_billing_export_focus_<ACCOUNT>`, Preview): FOCUS 1.x columns
  plus x_Credits, x_Project (Id, Number, Name, AncestryNumbers, Ancestors), x_Labels,
  x_SystemLabels, x_ProjectLabels, x_Tags (Key, Value, x_Inherited, x_Namespace) ...; it has
  no Tags, ServiceCategory, ServiceSubcategory, ChargeFrequency, InvoiceIssuerName,
  InvoiceId or CommitmentDiscount* columns.
- Google's published FOCUS BigQuery view over the detailed export
  (looker-open-source/google_cloud_focus, focus_bigquery_view.sql): Tags as
  ARRAY<STRUCT<key, value, x_type, x_inherited, x_namespace>>, x_Credits, x_Project
  (id, number, name, ...), SubAccountId = the billing account, ServiceCategory from the
  pricing export's product taxonomy, lower-case enum values, BillingPeriodEnd the last day.
- A FOCUS file for Google Cloud (CSV or parquet, e.g. the FinOps Foundation's sample data):
  the spec's columns, Tags as a JSON object text.

Credits: both Google shapes already net every credit: `BilledCost = EffectiveCost = cost +
SUM(credits.amount)`; x_Credits only itemises what was netted, so SUM(BilledCost) is the
invoice and the raw total. As the detailed converter does, PROMOTION entries are taken back
out of their row and become their own ChargeCategory='Credit' rows (same account / project /
service / tags as the parent); discount-type credits stay netted. Totals are unchanged.

What the export lacks or spells otherwise is filled, and counted by `derived_counts_sql`:
ServiceCategory (kept when it is a FOCUS category, else our service table), ServiceSubcategory
(kept when valid under that category, else our table, else `Other (<ServiceCategory>)`),
ChargeFrequency (from ChargeCategory), InvoiceIssuerName / PublisherName ('Google Cloud'),
InvoiceId (provisional: account + month), SubAccount* (x_Project), CommitmentDiscount* (the
CUD entry of x_Credits; multiprice spend-based CUDs from x_ConsumptionModel*,
x_SubscriptionInstanceId and the FEE_UTILIZATION_OFFSET credit, as finops.focus.gcp_billing maps
them), x_instance_type (the export's machine_spec system label), units (FOCUS UnitFormat via finops.focus.units). Billing period bounds:
the export's own when they are UTC midnights of the period, else the invoice month's Pacific
midnights (the view's end is an inclusive last day).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from finops.focus.gcp_billing import (
    CUD_CONSUMPTION_MODELS,
    FEE_OFFSET,
    INVOICE_TZ,
    NEW_CUD_FEE_SKUS,
    NOT_CONTRACTED,
    SERVICE_CATEGORIES,
    SERVICE_SUBCATEGORIES,
    _case,
)
from finops.focus.native_focus import NativeFocusConverter
from finops.focus.projection import lineage, lit, other_subcategory_sql, period_bounds_sql, select_list
from finops.focus.schema import BY_NAME
from finops.focus.schema import SERVICE_SUBCATEGORIES as SUBCATEGORY_PARENT
from finops.focus.units import UnitScaler, unit_sql

MONEY = "DECIMAL(38,10)"
_CREDITS_T = "STRUCT(Name VARCHAR, Amount DECIMAL(38,10), FullName VARCHAR, Id VARCHAR, Type VARCHAR)[]"
PROMO = "'PROMOTION'"
_PROMO_SUM = (
    f'COALESCE(list_sum(list_transform(list_filter("x_Credits", lambda c: c.Type = {PROMO}), '
    f"lambda c: CAST(c.Amount AS {MONEY}))), 0)"
)
_CUD = (
    "list_filter(\"x_Credits\", lambda c: c.Type IN ('COMMITTED_USAGE_DISCOUNT', "
    "'COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE'))[1]"
)
_SERVICE_NAME = '"ServiceName"'
# Spend-based CUDs on Google's multiprice model (as finops.focus.gcp_billing maps them from the
# detailed export): the usage's x_ConsumptionModel* names the CUD, the $1 fee SKU carries a
# FEE_UTILIZATION_OFFSET credit; x_SubscriptionInstanceId ties both to the CUD.
_CM_CUD = (
    f'COALESCE("x_ConsumptionModelId" IN ({", ".join(lit(i) for i in CUD_CONSUMPTION_MODELS)}) '
    "OR regexp_matches(\"x_ConsumptionModelDescription\", '\\bCUD\\b'), false)"
)
_NEW_FEE = (
    f'COALESCE("SkuId" IN ({", ".join(lit(i) for i in NEW_CUD_FEE_SKUS)}) '
    f'OR len(list_filter("x_Credits", lambda c: c.Type = {FEE_OFFSET})) > 0, false)'
)
_NOT_CONTRACTED = NOT_CONTRACTED[:-1] + ", 'PROMOTION')"  # credits ContractedCost leaves out


def _credits(cond: str) -> str:
    return (
        f'COALESCE(list_sum(list_transform(list_filter("x_Credits", lambda c: {cond}), '
        f"lambda c: CAST(c.Amount AS {MONEY}))), 0)"
    )


PRICING = UnitScaler('"PricingUnit"', "x_pu_")
CONSUMED = UnitScaler('"ConsumedUnit"', "x_cu_")
_TAG_PRIORITY = "CASE e.x_type WHEN 'label' THEN 4 WHEN 'system_label' THEN 3 WHEN 'tag' THEN 2 ELSE 1 END"
# Google's FOCUS export: its label / tag arrays, lowest priority first (a resource label wins).
_EXPORT_TAG_ARRAYS = ("x_ProjectLabels", "x_Tags", "x_SystemLabels", "x_Labels")
GOOGLE_EXPORT_MARKERS = frozenset(c.lower() for c in _EXPORT_TAG_ARRAYS)
VIEW_MARKERS = frozenset({"x_project", "x_exporttime", "x_location"})


def _text(col: str) -> str:
    return f"NULLIF(trim(CAST(\"{col}\" AS VARCHAR)), '')"


def _valid(col: str) -> str:
    """The export's value of an enumerated FOCUS column when it is an allowed one (any case)."""
    allowed = ", ".join(lit(a.lower()) for a in BY_NAME[col].allowed or ())
    return f"lower({_text(col)}) IN ({allowed})"


def _subcategory_parent(expr: str) -> str:
    whens = " ".join(f"WHEN {lit(s)} THEN {lit(p)}" for s, p in SUBCATEGORY_PARENT.items())
    return f"CASE {expr} {whens} END"


class GcpFocusConverter(NativeFocusConverter):
    name = "gcp_focus"
    provider = "gcp"
    file_format = "auto"
    extra_columns = {
        "x_Credits": _CREDITS_T,
        "x_CostType": "VARCHAR",
        "x_ServiceId": "VARCHAR",
        "x_SubscriptionInstanceId": "VARCHAR",
        "x_ConsumptionModelId": "VARCHAR",
        "x_ConsumptionModelDescription": "VARCHAR",
        "x_CostAtEffectivePriceDefault": "VARCHAR",
    }
    fallbacks = {
        "billing_account_name": "NULLIF(trim(CAST(\"BillingAccountId\" AS VARCHAR)), '')",
        "invoice_issuer_name": "COALESCE(NULLIF(trim(CAST(\"ProviderName\" AS VARCHAR)), ''), 'Google Cloud')",
        "provider_name": "'Google Cloud'",
        "publisher_name": "'Google Cloud'",
        "service_category": _case('"ServiceName"', SERVICE_CATEGORIES, "'Other'"),
        "charge_frequency": "CASE lower(\"ChargeCategory\") WHEN 'usage' THEN 'Usage-Based' "
        "WHEN 'purchase' THEN 'Recurring' ELSE 'One-Time' END",
    }

    # -- variant and derived columns (spine extras) -------------------------------------
    def variant(self, columns: Sequence[str]) -> str:
        names = {c.lower() for c in columns}
        if names & GOOGLE_EXPORT_MARKERS:
            return "GCP FOCUS export (gcp_billing_export_focus_*)"
        if names & VIEW_MARKERS:
            return "GCP FOCUS BigQuery view (google_cloud_focus)"
        return "FOCUS file (Google Cloud)"

    def derived_counts_sql(self, raw: str) -> str:
        """(column, rows): rows whose value we filled because the export had none (or none valid)."""
        category = self._category()
        checks = {
            "ServiceCategory": f"NOT COALESCE(lower({_text('ServiceCategory')}) = lower({category}), false)",
            "ServiceSubcategory": f"NOT COALESCE({_subcategory_parent(_text('ServiceSubcategory'))} = {category}, "
            "false)",
            "ChargeFrequency": f"NOT COALESCE({_valid('ChargeFrequency')}, false)",
            "ChargeDescription": f"{_text('ChargeDescription')} IS NULL",
            "InvoiceId": f"{_text('InvoiceId')} IS NULL",
            "InvoiceIssuerName": f"{_text('InvoiceIssuerName')} IS NULL",
            "BillingAccountName": f"{_text('BillingAccountName')} IS NULL",
        }
        parts = [
            f"SELECT {lit(c)} AS column, count(*) FILTER (WHERE {cond}) AS rows FROM {raw}"
            for c, cond in checks.items()
        ]
        return f"SELECT * FROM ({' UNION ALL '.join(parts)}) WHERE rows > 0"

    # -- mapping -------------------------------------------------------------------------
    def _category(self) -> str:
        """One ServiceCategory per ServiceName across every GCP source in the warehouse (the
        validator checks it over the whole export): our service table for the services it
        knows (the same the detailed converter uses), else the export's value when it is a
        FOCUS category, else 'Other'."""
        known = ", ".join(lit(k) for k in SERVICE_CATEGORIES)
        ours = _case(_SERVICE_NAME, SERVICE_CATEGORIES, "NULL")
        return f"CASE WHEN {_SERVICE_NAME} IN ({known}) THEN {ours} ELSE {self.columns()['service_category']} END"

    def _tags(self, cols: Mapping[str, str]) -> str:
        """Tags as one JSON object from whichever form this export carries."""
        lower = {c.lower(): c for c in cols}
        merged = "(SELECT CASE WHEN count(*) > 0 THEN to_json(map_from_entries(list((k, v) ORDER BY k))) END FROM ("
        if "tags" in lower and "STRUCT" in cols[lower["tags"]].upper():  # the view: array with x_type
            return (
                f"{merged}SELECT e.key AS k, arg_max(e.value, {_TAG_PRIORITY}) AS v "
                'FROM (SELECT unnest("Tags") AS e) GROUP BY e.key))'
            )
        if "tags" in lower:  # a FOCUS file: a JSON object as text
            t = _text("Tags")
            return (
                f"CASE WHEN json_valid({t}) AND json_type({t}) = 'OBJECT' THEN CAST(json({t}) AS VARCHAR) END"
            )
        arrays = [lower[a.lower()] for a in _EXPORT_TAG_ARRAYS if a.lower() in lower]
        if not arrays:
            return "NULL"
        ranked = " || ".join(
            f"list_transform(COALESCE(\"{a}\", []), lambda e: {{'k': e.Key, 'v': e.Value, 'p': {i}}})"
            for i, a in enumerate(arrays)
        )
        return f"{merged}SELECT e.k AS k, arg_max(e.v, e.p) AS v FROM (SELECT unnest({ranked}) AS e) GROUP BY e.k))"

    def _mapped(self, cols: Mapping[str, str], period: str) -> dict[str, str]:
        out = self.columns()
        lower = {c.lower() for c in cols}
        out["service_category"] = category = self._category()
        mapped_sub = _case('"ServiceName"', SERVICE_SUBCATEGORIES, "NULL")
        out["service_subcategory"] = (
            f"CASE WHEN {_subcategory_parent(mapped_sub)} = {category} THEN {mapped_sub} "
            f"WHEN {_subcategory_parent(_text('ServiceSubcategory'))} = {category} "
            f"THEN {_text('ServiceSubcategory')} "
            f"ELSE {other_subcategory_sql(category)} END"
        )
        # units into FOCUS UnitFormat; a block unit scales its quantity and unit prices (PRICING / CONSUMED
        # columns come from the relations focus_sql wraps the raw rows in)
        out["pricing_unit"], out["consumed_unit"] = PRICING.unit, CONSUMED.unit
        out["pricing_quantity"] = PRICING.quantity(out["pricing_quantity"])
        out["consumed_quantity"] = CONSUMED.quantity(out["consumed_quantity"])
        for price in (
            "list_unit_price",
            "contracted_unit_price",
            "pricing_currency_list_unit_price",
            "pricing_currency_contracted_unit_price",
        ):
            out[price] = PRICING.price(out[price])
        out["commitment_discount_unit"] = unit_sql(out["commitment_discount_unit"])
        # bounds: the export's own when they are the UTC month, else the invoice month's Pacific midnights
        start, end = period_bounds_sql(period, INVOICE_TZ)
        utc_start, utc_end = period_bounds_sql(period, None)
        own = f"{out['billing_period_start']} = {utc_start}"
        out["billing_period_start"] = f"CASE WHEN {own} THEN {utc_start} ELSE {start} END"
        out["billing_period_end"] = f"CASE WHEN {own} THEN {utc_end} ELSE {end} END"
        if "x_project" in lower:  # the view's SubAccountId is the billing account: x_Project is the project
            out["sub_account_id"] = f'COALESCE("x_Project".id, {out["sub_account_id"]})'
            out["sub_account_name"] = f'COALESCE({out["sub_account_name"]}, "x_Project".name)'
        out["sub_account_type"] = (
            f"COALESCE({out['sub_account_type']}, CASE WHEN {out['sub_account_id']} "
            "IS NOT NULL THEN 'Project' END)"
        )
        # commitment discount from the CUD entry of x_Credits when the export has no such columns
        cud = _CUD
        out["commitment_discount_id"] = f"COALESCE({out['commitment_discount_id']}, {cud}.Id)"
        out["commitment_discount_name"] = f"COALESCE({out['commitment_discount_name']}, {cud}.FullName)"
        out["commitment_discount_category"] = (
            f"COALESCE({out['commitment_discount_category']}, CASE {cud}.Type WHEN 'COMMITTED_USAGE_DISCOUNT' "
            "THEN 'Usage' WHEN 'COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE' THEN 'Spend' END)"
        )
        out["commitment_discount_type"] = (
            f"COALESCE({out['commitment_discount_type']}, CASE WHEN {cud} IS NOT NULL "
            "THEN 'Committed Use Discount' END)"
        )
        out["commitment_discount_status"] = (
            f"COALESCE({out['commitment_discount_status']}, CASE WHEN {cud} IS NOT NULL "
            f"AND {out['charge_category']} = 'Usage' THEN 'Used' END)"
        )
        self._new_spend_cuds(out)
        out["tags"] = self._tags(cols)
        if "x_systemlabels" in lower:  # Google's export: the machine type, as the detailed converter reads it
            out["x_instance_type"] = (
                "list_filter(\"x_SystemLabels\", lambda l: l.Key = 'compute.googleapis.com/machine_spec')[1].Value"
            )
        return out

    @staticmethod
    def _new_spend_cuds(out: dict[str, str]) -> None:
        """Multiprice spend-based CUD rows the export leaves without CommitmentDiscount* columns
        get what finops.focus.gcp_billing gives them: usage priced by a CUD consumption model
        'Used', the fee row 'Unused', both 'Spend' with the subscription as id, PricingCategory
        'Committed'; ContractedCost of the usage at the default price (x_CostAtEffectivePriceDefault)
        and of the fee the fee itself (EffectiveCost with the offset taken back out)."""
        usage = f"{out['charge_category']} = 'Usage'"
        cm, fee = f"({usage} AND {_CM_CUD})", f"({usage} AND NOT {_CM_CUD} AND {_NEW_FEE})"
        sub = "NULLIF(trim(\"x_SubscriptionInstanceId\"), '')"
        out["commitment_discount_id"] = (
            f"COALESCE({out['commitment_discount_id']}, CASE WHEN {cm} THEN COALESCE({sub}, "
            f'"x_ConsumptionModelId") WHEN {fee} THEN COALESCE({sub}, "SkuId") END)'
        )
        out["commitment_discount_name"] = (
            f'COALESCE({out["commitment_discount_name"]}, CASE WHEN {cm} THEN "x_ConsumptionModelDescription" '
            f"WHEN {fee} THEN {out['charge_description']} END)"
        )
        new = f"({cm} OR {fee})"
        out["commitment_discount_category"] = (
            f"COALESCE({out['commitment_discount_category']}, CASE WHEN {new} THEN 'Spend' END)"
        )
        out["commitment_discount_type"] = (
            f"COALESCE({out['commitment_discount_type']}, CASE WHEN {new} THEN 'Committed Use Discount' END)"
        )
        out["commitment_discount_status"] = (
            f"COALESCE({out['commitment_discount_status']}, CASE WHEN {cm} THEN 'Used' WHEN {fee} THEN 'Unused' END)"
        )
        out["pricing_category"] = f"CASE WHEN {new} THEN 'Committed' ELSE {out['pricing_category']} END"
        default = f"CAST(NULLIF(trim(CAST(\"x_CostAtEffectivePriceDefault\" AS VARCHAR)), '') AS {MONEY})"
        kept = _credits(f"COALESCE(c.Type, '') NOT IN {_NOT_CONTRACTED}")  # e.g. SUD, negotiated
        out["contracted_cost"] = (
            f"CASE WHEN {cm} THEN COALESCE({default} + {kept}, "
            f"CAST({out['contracted_cost']} AS {MONEY})) "
            f"WHEN {fee} THEN CAST({out['effective_cost']} AS {MONEY}) - {_credits(f'c.Type IN {_NOT_CONTRACTED}')} "
            f"ELSE CAST({out['contracted_cost']} AS {MONEY}) END"
        )

    def extensions(self) -> dict[str, str]:
        return {"x_charge_type": '"x_CostType"'}

    # raw_billed_totals_sql: the base class's SUM(BilledCost) -- the export's BilledCost is net of credits.

    def focus_sql(self, raw: str, ctx: object) -> str:
        cols = self._mapped(getattr(ctx, "raw_columns", {}) or {}, ctx.billing_period)  # type: ignore[attr-defined]
        # provisional invoice id when the export has none: one invoice per account and month
        month = ctx.billing_period.replace("-", "")  # type: ignore[attr-defined]
        cols["invoice_id"] = f"COALESCE({cols['invoice_id']}, \"BillingAccountId\" || '-{month}')"
        # promotional credits leave their (net) row for a Credit row of their own: totals unchanged
        for col in ("billed_cost", "effective_cost"):
            cols[col] = f"CAST({cols[col]} AS {MONEY}) - {_PROMO_SUM}"
        shared = lineage(ctx, self.provider)
        rows = PRICING.relation(f"({CONSUMED.relation(raw)})")
        credit = {
            **cols,
            "billed_cost": "c.Amount",
            "effective_cost": "c.Amount",
            "contracted_cost": "0",
            "list_cost": "0",
            "charge_category": "'Credit'",
            "charge_class": "NULL",
            "charge_description": "COALESCE(c.FullName, c.Name, 'Credit')",
            "charge_frequency": "'One-Time'",
            "pricing_quantity": "NULL",
            "pricing_unit": "NULL",
            "consumed_quantity": "NULL",
            "consumed_unit": "NULL",
            "pricing_category": "NULL",
            "list_unit_price": "NULL",
            "contracted_unit_price": "NULL",
            "sku_price_id": "NULL",
            "commitment_discount_status": "NULL",
            "commitment_discount_quantity": "NULL",
            "commitment_discount_unit": "NULL",
            "x_charge_type": "'credit:' || COALESCE(c.Type, 'UNKNOWN')",
            "x_operation": "c.Id",
        }
        return (
            f"SELECT {select_list({**cols, **shared})} FROM ({rows})\n"
            "UNION ALL\n"
            f"SELECT {select_list({**credit, **shared})} FROM ({rows}), "
            f'unnest(list_filter("x_Credits", lambda c: c.Type = {PROMO})) AS u(c)'
        )


CONVERTER = GcpFocusConverter()

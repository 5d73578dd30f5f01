"""Azure Cost Management FOCUS export (FocusCost 1.0 / 1.0r2 / 1.2-preview) -> our FOCUS table.

Microsoft already maps actual + amortised cost into FOCUS columns; what is left is names,
exact types, enum case, Tags (normalised like the cost exports: braces added when a
writer left them off; still-invalid JSON stops the batch for quarantine), lineage, and what
the older dataset versions lack (column lists: Microsoft's "FOCUS cost and usage details
file schema" reference):
- FOCUS 1.0 / 1.0r2 (1.0r2 only adds seconds to the timestamps, which both parse) have no
  ServiceSubcategory: filled from the meter category when our mapping's parent equals the
  export's own ServiceCategory, else `Other (<that ServiceCategory>)`, so the pair always
  agrees; the same fallback covers a 1.2 row with an empty or unknown subcategory;
- 1.0 names the invoice `x_InvoiceId`, the meter `x_SkuMeterName` and the pricing currency
  `x_PricingCurrency` (1.2: InvoiceId, SkuMeter, PricingCurrency);
- rows with no invoice yet (an open EA month) get a provisional `<account>-<YYYYMM>` id, the
  account being the last segment of BillingAccountId (Microsoft writes the whole billing
  resource path there: `/providers/Microsoft.Billing/billingAccounts/8611537`).
PricingUnit / ConsumedUnit go through `finops.focus.units.UnitScaler` (a unit already in
FOCUS form is unchanged; a block unit scales quantity and unit prices).
CSV (optionally .gz) or parquet, as the export was configured.
"""

from __future__ import annotations

from collections.abc import Sequence

from finops.focus.azure_cost import (
    AGREEMENTS,
    SERVICE_CATEGORIES,
    SERVICE_SUBCATEGORIES,
    case_sql,
    derived_counts_query,
)
from finops.focus.native_focus import NativeFocusConverter
from finops.focus.projection import lineage, other_subcategory_sql, select_list
from finops.focus.schema import SERVICE_CATEGORIES as FOCUS_CATEGORIES
from finops.focus.units import UnitScaler

_TAGS = "NULLIF(trim(CAST(\"Tags\" AS VARCHAR)), '')"


def _ref(col: str) -> str:
    return f"NULLIF(trim(CAST(\"{col}\" AS VARCHAR)), '')"


# the export's ServiceCategory in FOCUS case; anything else -> 'Other' (as the base class maps it)
_CATEGORY = case_sql(f"lower({_ref('ServiceCategory')})", {c.lower(): c for c in FOCUS_CATEGORIES}, "'Other'")
_METER = '"x_SkuMeterCategory"'
# our meter-category subcategory when its parent is the row's category, else Other (<category>)
_SUBCATEGORY = (
    f"CASE WHEN {case_sql(_METER, SERVICE_CATEGORIES, 'NULL')} = {_CATEGORY} "
    f"THEN {case_sql(_METER, SERVICE_SUBCATEGORIES, 'NULL')} ELSE {other_subcategory_sql(_CATEGORY)} END"
)
# Columns only one dataset version has and the reader's template does not add (so they show
# in `columns` only when the file has them); 1.0 and 1.0r2 differ in timestamp text only.
_ONLY_12 = {"x_AmortizationClass", "x_ServiceModel", "x_SkuPlanName"}
_ONLY_10 = {"x_SkuTerm", "x_InvoiceIssuerId"}
_PREVIEW = {"ChargeSubcategory", "UsageQuantity", "UsageUnit"}


class AzureFocusConverter(NativeFocusConverter):
    name = "azure_focus"
    provider = "azure"
    file_format = "auto"
    extra_columns = {
        "Tags": "VARCHAR",
        "x_SkuMeterCategory": "VARCHAR",
        "x_SkuDetails": "VARCHAR",
        "x_InvoiceId": "VARCHAR",
        "x_SkuMeterName": "VARCHAR",
        "x_PricingCurrency": "VARCHAR",
    }
    fallbacks = {
        "provider_name": "'Microsoft'",
        "publisher_name": "'Microsoft'",
        "invoice_issuer_name": "'Microsoft'",
        "service_category": "'Other'",
        "service_subcategory": _SUBCATEGORY,
        "sku_meter": _ref("x_SkuMeterName"),
        "pricing_currency": _ref("x_PricingCurrency"),
    }

    def __init__(self, agreement: str = "auto") -> None:
        if agreement not in AGREEMENTS:
            raise ValueError(f"Azure agreement must be one of {AGREEMENTS}, got {agreement!r}")
        self.agreement = agreement

    def variant(self, columns: Sequence[str]) -> str:
        """'Azure Cost Management FOCUS 1.2-preview export' etc., from version-specific columns."""
        cols = set(columns)
        if cols & _PREVIEW:
            version = "1.0-preview(v1)"
        elif cols & _ONLY_12:
            version = "1.2-preview"
        elif cols & _ONLY_10:
            version = "1.0 / 1.0r2"
        else:
            version = "(version not recognised)"
        agreement = "" if self.agreement == "auto" else f", agreement {self.agreement}"
        return f"Azure Cost Management FOCUS {version} export{agreement}"

    def focus_sql(self, raw: str, ctx: object) -> str:
        cols = self.columns()
        month = ctx.billing_period.replace("-", "")  # type: ignore[attr-defined]
        account = f"regexp_extract({_ref('BillingAccountId')}, '[^/]+$')"
        # EA FOCUS rows carry no invoice id while the month is open: provisional id per account and month
        cols["invoice_id"] = f"COALESCE({_ref('InvoiceId')}, {_ref('x_InvoiceId')}, {account} || '-{month}')"
        pricing, consumed = UnitScaler('"PricingUnit"', "x_pu_"), UnitScaler('"ConsumedUnit"', "x_cu_")
        cols["pricing_unit"] = pricing.unit
        cols["pricing_quantity"] = pricing.quantity(_ref("PricingQuantity"))
        cols["list_unit_price"] = pricing.price(_ref("ListUnitPrice"))
        cols["contracted_unit_price"] = pricing.price(_ref("ContractedUnitPrice"))
        cols["consumed_unit"] = consumed.unit
        cols["consumed_quantity"] = consumed.quantity(_ref("ConsumedQuantity"))
        src = consumed.relation(f"({pricing.relation(raw)})")
        return f"SELECT {select_list({**cols, **lineage(ctx, self.provider)})} FROM ({src})"

    def derived_counts_sql(self, raw: str) -> str:
        """(column, rows) for each FOCUS column filled because this export version lacks it."""
        checks = {
            "ServiceSubcategory": f"{_ref('ServiceSubcategory')} IS NULL",
            "InvoiceId": f"{_ref('InvoiceId')} IS NULL AND {_ref('x_InvoiceId')} IS NULL",
            "SkuMeter": f"{_ref('SkuMeter')} IS NULL AND {_ref('x_SkuMeterName')} IS NOT NULL",
            "PricingCurrency": f"{_ref('PricingCurrency')} IS NULL AND {_ref('x_PricingCurrency')} IS NOT NULL",
        }
        return derived_counts_query(raw, checks)

    def tags_sql(self) -> str:
        fixed = (
            f"CASE WHEN {_TAGS} IS NULL OR {_TAGS} = '{{}}' THEN NULL WHEN left({_TAGS}, 1) = '{{' THEN {_TAGS} "
            f"ELSE '{{' || {_TAGS} || '}}' END"
        )
        return (
            f"CASE WHEN ({fixed}) IS NULL THEN NULL WHEN json_valid({fixed}) THEN CAST(json({fixed}) AS VARCHAR) "
            f"ELSE error('Azure FOCUS export: Tags is not valid JSON: ' || left({_TAGS}, 200)) END"
        )

    def extensions(self) -> dict[str, str]:
        return {
            "x_usage_type": _METER,
            "x_instance_type": 'CASE WHEN json_valid("x_SkuDetails") THEN '
            "json_extract_string(\"x_SkuDetails\", '$.ServiceType') END",
        }


CONVERTER = AzureFocusConverter()

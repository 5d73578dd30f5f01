"""Azure Cost Management FOCUS export (FocusCost 1.0 / 1.0r2 / 1.2-preview) -> our FOCUS table.

Microsoft already maps actual + amortised cost into FOCUS columns; what is left is names,
exact types, enum case, Tags (normalised like the cost exports: braces added when a
writer left them off; still-invalid JSON stops the batch for quarantine) and lineage.
CSV (optionally .gz) or parquet, as the export was configured.
"""

from __future__ import annotations

from finops.focus.azure_cost import SERVICE_SUBCATEGORIES
from finops.focus.gcp_billing import _case
from finops.focus.native_focus import NativeFocusConverter
from finops.focus.projection import lineage, select_list

_TAGS = "NULLIF(trim(CAST(\"Tags\" AS VARCHAR)), '')"


class AzureFocusConverter(NativeFocusConverter):
    name = "azure_focus"
    provider = "azure"
    file_format = "auto"
    extra_columns = {"Tags": "VARCHAR", "x_SkuMeterCategory": "VARCHAR", "x_SkuDetails": "VARCHAR"}
    fallbacks = {
        "provider_name": "'Microsoft'",
        "publisher_name": "'Microsoft'",
        "invoice_issuer_name": "'Microsoft'",
        "service_category": "'Other'",
        "service_subcategory": _case("\"x_SkuMeterCategory\"", SERVICE_SUBCATEGORIES, "'Other (Other)'"),
    }

    def focus_sql(self, raw: str, ctx: object) -> str:
        cols = self.columns()
        month = ctx.billing_period.replace("-", "")  # type: ignore[attr-defined]
        # EA FOCUS rows carry no InvoiceId while the month is open: provisional id per account and month
        cols["invoice_id"] = f"COALESCE({cols['invoice_id']}, \"BillingAccountId\" || '-{month}')"
        return f"SELECT {select_list({**cols, **lineage(ctx, self.provider)})} FROM {raw}"

    def tags_sql(self) -> str:
        fixed = f"CASE WHEN {_TAGS} IS NULL OR {_TAGS} = '{{}}' THEN NULL WHEN left({_TAGS}, 1) = '{{' THEN {_TAGS} " \
                f"ELSE '{{' || {_TAGS} || '}}' END"
        return (
            f"CASE WHEN ({fixed}) IS NULL THEN NULL WHEN json_valid({fixed}) THEN CAST(json({fixed}) AS VARCHAR) "
            f"ELSE error('Azure FOCUS export: Tags is not valid JSON: ' || left({_TAGS}, 200)) END"
        )

    def extensions(self) -> dict[str, str]:
        return {
            "x_usage_type": "\"x_SkuMeterCategory\"",
            "x_instance_type": "CASE WHEN json_valid(\"x_SkuDetails\") THEN "
            "json_extract_string(\"x_SkuDetails\", '$.ServiceType') END",
        }


CONVERTER = AzureFocusConverter()

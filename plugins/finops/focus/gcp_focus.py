"""GCP's own FOCUS view / FOCUS export (BigQuery) -> our FOCUS table.

Google's published FOCUS BigQuery view (looker-open-source/google_cloud_focus,
focus_bigquery_view.sql) already nets every credit: `BilledCost = EffectiveCost = cost +
SUM(credits.amount)`, `ContractedCost = cost`; the `x_Credits` array (Name, Amount,
FullName, Id, Type) only itemises what was netted. So SUM(BilledCost) is the invoice and
is the raw total; adding x_Credits on top would count every credit twice. As the detailed
converter does, PROMOTION entries are taken back out of their row and become their own
ChargeCategory='Credit' rows (same account / project / service / tags as the parent), so
promotional credit stays visible in showback; discount-type credits stay netted. Totals are
unchanged by the split. An export without x_Credits simply passes through.

Other fixes: lower-case enum values ('usage', 'committed') are canonicalised; the view's
BillingPeriodStart/End are Pacific midnights with an inclusive last day, so the period
bounds come from the billing period we queried (Pacific midnights, end exclusive); ServiceCategory falls back to our
service map when the view's value (a Google product taxonomy) is not a FOCUS category;
Tags (ARRAY<STRUCT<key, value, x_type, ...>>) become one JSON object where a resource
label beats a system label beats a tag beats a project label.
"""

from __future__ import annotations

from finops.focus.gcp_billing import INVOICE_TZ, SERVICE_CATEGORIES, SERVICE_SUBCATEGORIES, _case
from finops.focus.native_focus import NativeFocusConverter
from finops.focus.projection import lineage, period_bounds_sql, select_list

MONEY = "DECIMAL(38,10)"
_CREDITS_T = "STRUCT(Name VARCHAR, Amount DECIMAL(38,10), FullName VARCHAR, Id VARCHAR, Type VARCHAR)[]"
PROMO = "'PROMOTION'"
_PROMO_SUM = (
    f"COALESCE(list_sum(list_transform(list_filter(\"x_Credits\", lambda c: c.Type = {PROMO}), "
    f"lambda c: CAST(c.Amount AS {MONEY}))), 0)"
)
_TAG_PRIORITY = "CASE e.x_type WHEN 'label' THEN 4 WHEN 'system_label' THEN 3 WHEN 'tag' THEN 2 ELSE 1 END"


class GcpFocusConverter(NativeFocusConverter):
    name = "gcp_focus"
    provider = "gcp"
    file_format = "parquet"
    extra_columns = {
        "x_Credits": _CREDITS_T,
        "x_CostType": "VARCHAR",
        "x_ServiceId": "VARCHAR",
    }
    fallbacks = {
        "billing_account_name": "NULLIF(trim(CAST(\"BillingAccountId\" AS VARCHAR)), '')",
        "invoice_issuer_name": "NULLIF(trim(CAST(\"ProviderName\" AS VARCHAR)), '')",
        "provider_name": "'Google Cloud'",
        "publisher_name": "'Google Cloud'",
        "service_category": _case("\"ServiceName\"", SERVICE_CATEGORIES, "'Other'"),
        "service_subcategory": _case("\"ServiceName\"", SERVICE_SUBCATEGORIES, "'Other (Other)'"),
        "charge_frequency": "CASE lower(\"ChargeCategory\") WHEN 'usage' THEN 'Usage-Based' "
        "WHEN 'purchase' THEN 'Recurring' ELSE 'One-Time' END",
    }

    def tags_sql(self) -> str:
        return (
            "(SELECT CASE WHEN count(*) > 0 THEN to_json(map_from_entries(list((k, v) ORDER BY k))) END FROM ("
            f"SELECT e.key AS k, arg_max(e.value, {_TAG_PRIORITY}) AS v FROM (SELECT unnest(\"Tags\") AS e) "
            "GROUP BY e.key))"
        )

    def extensions(self) -> dict[str, str]:
        return {"x_charge_type": "\"x_CostType\""}

    # raw_billed_totals_sql: the base class's SUM(BilledCost) -- the view's BilledCost is already net of credits.

    def focus_sql(self, raw: str, ctx: object) -> str:
        start, end = period_bounds_sql(ctx.billing_period, INVOICE_TZ)  # type: ignore[attr-defined]
        cols = self.columns()
        cols["billing_period_start"], cols["billing_period_end"] = start, end
        # provisional invoice id when the view has none: one invoice per account and month
        month = ctx.billing_period.replace("-", "")  # type: ignore[attr-defined]
        cols["invoice_id"] = f"COALESCE({cols['invoice_id']}, \"BillingAccountId\" || '-{month}')"
        # promotional credits leave their (net) row for a Credit row of their own: totals unchanged
        for col in ("billed_cost", "effective_cost"):
            cols[col] = f"CAST({cols[col]} AS {MONEY}) - {_PROMO_SUM}"
        shared = lineage(ctx, self.provider)
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
            "x_charge_type": "'credit:' || COALESCE(c.Type, 'UNKNOWN')",
            "x_operation": "c.Id",
        }
        return (
            f"SELECT {select_list({**cols, **shared})} FROM {raw}\n"
            "UNION ALL\n"
            f"SELECT {select_list({**credit, **shared})} FROM {raw}, "
            f"unnest(list_filter(\"x_Credits\", lambda c: c.Type = {PROMO})) AS u(c)"
        )


CONVERTER = GcpFocusConverter()

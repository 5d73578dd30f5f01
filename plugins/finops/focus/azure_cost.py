"""Azure Cost Management exports (actual / amortised cost; EA and MCA layouts) -> FOCUS 1.2.

EA and MCA name the same fields differently (EA `CostInBillingCurrency`,
`BillingCurrencyCode`, `ResourceGroup`; MCA `costInBillingCurrency`, `billingCurrency`,
`resourceGroupName`, plus `invoiceId`, `paygCostInBillingCurrency`, ...). `normalize_sql`
maps whichever header arrived (case-insensitive, through the alias table below) to one
internal set of names, typed NULL when a layout lacks a field; a file missing one of the
essential fields fails with a message naming it.

Values are read as text (`all_varchar`) and cast once to DECIMAL, so money never passes
through a float. Dates: `MM/DD/YYYY` (classic exports) or ISO `YYYY-MM-DD[THH:MM:SS[Z]]`
(newer exports); anything else, or a date outside the billing period (the symptom of a
day/month mix-up), stops the batch with an error naming the value: it is quarantined.
Tags: MCA writes a JSON object, EA writes the members without the outer braces
(`"team": "ml","env": "prod"`): braces are added when missing; text that is still not
valid JSON stops the batch (quarantine), nothing is silently dropped.

Costs (the export `kind` decides what `cost` means):
- actual: BilledCost = cost; EffectiveCost = cost except commitment purchases / refunds,
  which are 0 (FOCUS), and covered usage, which the actual dataset shows at 0: the actual
  export cannot show amortisation -- configure the amortized or focus export for that.
- amortized: EffectiveCost = cost. Commitment-covered usage and Unused* rows were prepaid,
  so their BilledCost is 0; commitment purchases keep BilledCost = cost, EffectiveCost = 0.
ChargeType: Usage -> Usage; Purchase -> Purchase; Refund -> Purchase + ChargeClass
'Correction'; UnusedReservation / UnusedSavingsPlan -> Usage with CommitmentDiscountStatus
'Unused'; Tax -> Tax; RoundingAdjustment -> Adjustment; Credit -> Credit.
PricingModel: OnDemand -> Standard, Reservation / SavingsPlan -> Committed, Spot -> Dynamic.
"""

from __future__ import annotations

from finops.focus.projection import (
    files_list,
    lineage,
    lit,
    period_bounds_sql,
    raw_totals_by_currency,
    select_list,
)

MONEY = "DECIMAL(38,10)"

# internal name -> header spellings seen in EA / MCA exports (compared lower-case)
ALIASES: dict[str, tuple[str, ...]] = {
    "billing_account_id": ("billingaccountid",),
    "billing_account_name": ("billingaccountname",),
    "billing_profile_id": ("billingprofileid",),
    "billing_profile_name": ("billingprofilename",),
    "invoice_id": ("invoiceid",),
    "subscription_id": ("subscriptionid", "subscriptionguid"),
    "subscription_name": ("subscriptionname",),
    "resource_group": ("resourcegroup", "resourcegroupname"),
    "resource_location": ("resourcelocation",),
    "location": ("location",),
    "date": ("date", "usagedatetime"),
    "product_name": ("productname", "product"),
    "product_id": ("productid",),
    "part_number": ("partnumber",),
    "meter_category": ("metercategory",),
    "meter_subcategory": ("metersubcategory",),
    "meter_id": ("meterid",),
    "meter_name": ("metername",),
    "meter_region": ("meterregion",),
    "unit_of_measure": ("unitofmeasure",),
    "quantity": ("quantity",),
    "effective_price": ("effectiveprice",),
    "unit_price": ("unitprice",),
    "payg_price": ("paygprice",),
    "cost": ("costinbillingcurrency",),
    "payg_cost": ("paygcostinbillingcurrency",),
    "currency": ("billingcurrencycode", "billingcurrency"),
    "pricing_currency": ("pricingcurrency",),
    "consumed_service": ("consumedservice",),
    "resource_id": ("resourceid", "instanceid"),
    "resource_name": ("resourcename",),
    "tags": ("tags",),
    "additional_info": ("additionalinfo",),
    "reservation_id": ("reservationid",),
    "reservation_name": ("reservationname",),
    "benefit_id": ("benefitid",),
    "benefit_name": ("benefitname",),
    "publisher_type": ("publishertype",),
    "publisher_name": ("publishername",),
    "charge_type": ("chargetype",),
    "frequency": ("frequency",),
    "pricing_model": ("pricingmodel",),
    "availability_zone": ("availabilityzone",),
    "service_family": ("servicefamily",),
}
ESSENTIAL = ("date", "cost", "currency", "charge_type", "billing_account_id")

SERVICE_CATEGORIES: dict[str, str] = {
    "Virtual Machines": "Compute",
    "Virtual Machines Licenses": "Compute",
    "Azure Kubernetes Service": "Compute",
    "Container Instances": "Compute",
    "Functions": "Compute",
    "Azure App Service": "Compute",
    "Storage": "Storage",
    "Backup": "Storage",
    "Bandwidth": "Networking",
    "Virtual Network": "Networking",
    "Load Balancer": "Networking",
    "Azure DNS": "Networking",
    "SQL Database": "Databases",
    "Azure Cosmos DB": "Databases",
    "Azure Database for PostgreSQL": "Databases",
    "Cognitive Services": "AI and Machine Learning",
    "Azure OpenAI": "AI and Machine Learning",
    "Machine Learning": "AI and Machine Learning",
    "Azure Monitor": "Management and Governance",
    "Log Analytics": "Management and Governance",
    "Key Vault": "Security",
    "Azure Synapse Analytics": "Analytics",
    "Azure Data Factory v2": "Analytics",
}


# MeterCategory -> FOCUS 1.2 ServiceSubcategory (parent = the category above).
SERVICE_SUBCATEGORIES: dict[str, str] = {
    "Virtual Machines": "Virtual Machines",
    "Virtual Machines Licenses": "Virtual Machines",
    "Azure Kubernetes Service": "Containers",
    "Container Instances": "Containers",
    "Functions": "Serverless Compute",
    "Azure App Service": "Other (Compute)",
    "Storage": "Block Storage",
    "Backup": "Backup Storage",
    "Bandwidth": "Network Connectivity",
    "Virtual Network": "Network Infrastructure",
    "Load Balancer": "Application Networking",
    "Azure DNS": "Network Routing",
    "SQL Database": "Relational Databases",
    "Azure Cosmos DB": "NoSQL Databases",
    "Azure Database for PostgreSQL": "Relational Databases",
    "Cognitive Services": "AI Platforms",
    "Azure OpenAI": "Generative AI",
    "Machine Learning": "Machine Learning",
    "Azure Monitor": "Observability",
    "Log Analytics": "Observability",
    "Key Vault": "Secret Management",
    "Azure Synapse Analytics": "Analytics Platforms",
    "Azure Data Factory v2": "Data Processing",
}

# UnitOfMeasure '<n> <unit>' -> FOCUS unit (the <n> multiplies the quantity).
UNITS: dict[str, str] = {
    "hour": "Hours", "hours": "Hours", "day": "Days", "days": "Days", "month": "Months", "/month": "Months",
    "gb": "GB", "gb/month": "GB-Months", "gib/month": "GiB-Months", "tb/month": "TB-Months", "gb/hour": "GB-Hours",
    "gib/hour": "GiB-Hours",
}


class AzureCostConverter:
    """One instance per export kind ('actual' or 'amortized'); EA / MCA auto-detected."""

    provider = "azure"

    def __init__(self, kind: str = "amortized") -> None:
        if kind not in ("actual", "amortized"):
            raise ValueError(f"Azure cost export kind must be actual or amortized, got {kind!r}")
        self.kind = kind
        self.name = f"azure_{kind}"

    # -- the Converter protocol ----------------------------------------------------------
    def reader_sql(self, files: list[str]) -> str:
        flist = files_list(files)
        if all(str(f).endswith(".parquet") for f in files):
            return f"SELECT * FROM read_parquet({flist}, union_by_name = true)"
        return (
            f"SELECT * FROM read_csv({flist}, header = true, all_varchar = true, union_by_name = true, "
            "quote = '\"', escape = '\"', strict_mode = true)"
        )

    def normalize_sql(self, raw: str, columns: dict[str, str]) -> str:
        by_lower = {c.lower().lstrip("\ufeff"): c for c in columns}
        picked: dict[str, str] = {}
        for name, spellings in ALIASES.items():
            src = next((by_lower[s] for s in spellings if s in by_lower), None)
            if src is not None:
                picked[name] = src
        missing = [n for n in ESSENTIAL if n not in picked]
        if missing:
            want = ", ".join(f"{n} ({'/'.join(ALIASES[n])})" for n in missing)
            raise ValueError(f"not an Azure cost export: missing column(s) {want}; got {sorted(columns)[:12]}...")
        cols = []
        for name in ALIASES:
            src = picked.get(name)
            expr = "NULL" if src is None else "NULLIF(trim(CAST(\"" + src.replace('"', '""') + "\" AS VARCHAR)), '')"
            cols.append(f"{expr} AS {name}")
        return f"SELECT {', '.join(cols)} FROM {raw}"

    def raw_billed_totals_sql(self, raw: str) -> str:
        return raw_totals_by_currency(raw, "upper(currency)", self._billed("CAST(cost AS " + MONEY + ")"))

    def focus_sql(self, raw: str, ctx: object) -> str:
        start, end = period_bounds_sql(ctx.billing_period)  # type: ignore[attr-defined]
        cols = {**self._columns(start, end), **lineage(ctx, self.provider)}
        return f"WITH a AS ({self._prepared(raw, start, end)})\nSELECT {select_list(cols)} FROM a"

    # -- internals -------------------------------------------------------------------------
    def _billed(self, cost: str) -> str:
        """BilledCost from the export's cost column (see the module docstring)."""
        if self.kind == "actual":
            return cost
        covered = (
            "(lower(replace(pricing_model, ' ', '')) IN ('reservation', 'savingsplan') AND lower(charge_type) = 'usage')"
            " OR lower(charge_type) IN ('unusedreservation', 'unusedsavingsplan')"
        )
        return f"CASE WHEN {covered} THEN 0 ELSE {cost} END"

    def _prepared(self, raw: str, start: str, end: str) -> str:
        d = "date"
        parsed = (
            f"COALESCE(try_strptime({d}, '%m/%d/%Y'), try_strptime({d}, '%Y-%m-%d'), "
            f"try_strptime({d}, '%Y-%m-%dT%H:%M:%S'), try_strptime({d}, '%Y-%m-%dT%H:%M:%SZ'), "
            f"try_strptime({d}, '%Y-%m-%dT%H:%M:%S.%fZ'), "
            # anything else ISO-shaped: .NET round-trip text (7 fraction digits, which %f refuses)
            # and a parquet TIMESTAMP column's text ('2026-10-01 00:00:00'); the UTC day is kept
            f"CAST(TRY_CAST({d} AS TIMESTAMPTZ) AS TIMESTAMP))"
        )
        tags = "CASE WHEN tags IS NULL OR tags IN ('{}', '') THEN NULL WHEN left(tags, 1) = '{' THEN tags ELSE '{' || tags || '}' END"
        return f"""SELECT *,
  CASE WHEN x_day IS NULL THEN error('Azure export: unparseable Date ' || {d})
       WHEN x_day < {start} OR x_day >= {end}
         THEN error('Azure export: Date ' || {d} || ' lies outside billing period ' || strftime({start}, '%Y-%m')
                    || ' (day/month order mixed up?)')
       ELSE x_day END AS x_charge_day,
  CASE WHEN x_tags_raw IS NULL THEN NULL WHEN json_valid(x_tags_raw) THEN CAST(json(x_tags_raw) AS VARCHAR)
       ELSE error('Azure export: Tags is not valid JSON: ' || left(tags, 200)) END AS x_tags,
  CAST(cost AS {MONEY}) AS x_cost,
  lower(charge_type) AS x_ct,
  lower(replace(COALESCE(pricing_model, 'OnDemand'), ' ', '')) AS x_pm,
  COALESCE(benefit_id, reservation_id) AS x_commit_id,
  COALESCE(benefit_name, reservation_name) AS x_commit_name
FROM (SELECT *, CAST({parsed} AS TIMESTAMP) AS x_day, {tags} AS x_tags_raw FROM {raw})"""

    def _columns(self, start: str, end: str) -> dict[str, str]:
        billed = self._billed("x_cost")
        # FOCUS: a commitment purchase (or its refund) has EffectiveCost 0 -- its value shows up
        # amortised on the usage it covers (amortized export; the actual export cannot show it).
        effective = "CASE WHEN x_ct IN ('purchase', 'refund') AND x_commit_id IS NOT NULL THEN 0 ELSE x_cost END"
        qty = "CAST(quantity AS DECIMAL(38,12))"
        # '10 Hours' -> quantity x 10 in 'Hours'; '1/Month' -> 'Months'
        uom_n = r"COALESCE(TRY_CAST(NULLIF(regexp_extract(unit_of_measure, '^\s*([0-9]+)', 1), '') AS DECIMAL(38,0)), 1)"
        uom_u = r"lower(trim(regexp_replace(unit_of_measure, '^\s*[0-9]+\s*', '')))"
        unit_map = " ".join(f"WHEN {lit(k)} THEN {lit(v)}" for k, v in UNITS.items())
        focus_unit = f"CASE {uom_u} {unit_map} ELSE unit_of_measure END"
        pqty = f"{qty} * {uom_n}"
        is_usage = "x_ct IN ('usage', 'unusedreservation', 'unusedsavingsplan')"
        category = (
            "CASE WHEN x_ct IN ('usage', 'unusedreservation', 'unusedsavingsplan') THEN 'Usage' "
            "WHEN x_ct IN ('purchase', 'refund') THEN 'Purchase' WHEN x_ct = 'tax' THEN 'Tax' "
            "WHEN x_ct = 'credit' THEN 'Credit' ELSE 'Adjustment' END"
        )
        svc_map = " ".join(f"WHEN {lit(k)} THEN {lit(v)}" for k, v in SERVICE_CATEGORIES.items())
        sub_map = " ".join(f"WHEN {lit(k)} THEN {lit(v)}" for k, v in SERVICE_SUBCATEGORIES.items())
        return {
            "billed_cost": billed,
            "effective_cost": effective,
            "list_cost": f"COALESCE(CAST(payg_cost AS {MONEY}), CAST(payg_price AS DECIMAL(38,12)) * {qty}, x_cost)",
            "contracted_cost": f"COALESCE(CAST(unit_price AS DECIMAL(38,12)) * {qty}, x_cost)",
            "billing_account_id": "billing_account_id",
            "billing_account_name": "billing_account_name",
            "billing_account_type": "CASE WHEN billing_profile_id IS NOT NULL AND invoice_id IS NOT NULL "
            "THEN 'Billing Profile' ELSE 'Billing Account' END",
            "billing_currency": "upper(currency)",
            "billing_period_start": start,
            "billing_period_end": end,
            "charge_category": category,
            "charge_class": "CASE WHEN x_ct = 'refund' THEN 'Correction' END",
            "charge_description": "COALESCE(meter_name, product_name, charge_type)",
            "charge_frequency": "CASE lower(frequency) WHEN 'onetime' THEN 'One-Time' WHEN 'recurring' THEN 'Recurring' "
            f"WHEN 'usagebased' THEN 'Usage-Based' ELSE CASE WHEN {is_usage} THEN 'Usage-Based' ELSE 'One-Time' END END",
            "charge_period_start": "x_charge_day",
            "charge_period_end": "x_charge_day + INTERVAL 1 DAY",
            "invoice_id": f"COALESCE(invoice_id, billing_account_id || '-' || strftime({start}, '%Y%m'))",
            "invoice_issuer_name": "'Microsoft'",
            "provider_name": "'Microsoft'",
            "publisher_name": "COALESCE(publisher_name, 'Microsoft')",
            "service_name": "COALESCE(meter_category, consumed_service, 'Unknown')",
            "service_category": f"CASE meter_category {svc_map} ELSE 'Other' END",
            "service_subcategory": f"CASE meter_category {sub_map} ELSE 'Other (Other)' END",
            "sub_account_id": "subscription_id",
            "sub_account_name": "subscription_name",
            "sub_account_type": "CASE WHEN subscription_id IS NOT NULL THEN 'Subscription' END",
            "pricing_quantity": pqty,
            "pricing_unit": focus_unit,
            "consumed_quantity": f"CASE WHEN x_ct = 'usage' THEN {pqty} END",
            "consumed_unit": f"CASE WHEN x_ct = 'usage' THEN {focus_unit} END",
            "list_unit_price": "CAST(payg_price AS DECIMAL(38,12))",
            "contracted_unit_price": "CAST(unit_price AS DECIMAL(38,12))",
            "pricing_category": "CASE WHEN x_ct NOT IN ('usage', 'unusedreservation', 'unusedsavingsplan', 'purchase') "
            "THEN NULL WHEN x_pm IN ('reservation', 'savingsplan') THEN 'Committed' WHEN x_pm = 'spot' THEN 'Dynamic' "
            "ELSE 'Standard' END",
            "pricing_currency": "pricing_currency",
            "commitment_discount_id": "x_commit_id",
            "commitment_discount_name": "x_commit_name",
            "commitment_discount_category": "CASE WHEN x_commit_id IS NULL THEN NULL "
            "WHEN x_pm = 'savingsplan' OR x_ct = 'unusedsavingsplan' THEN 'Spend' ELSE 'Usage' END",
            "commitment_discount_type": "CASE WHEN x_commit_id IS NULL THEN NULL "
            "WHEN x_pm = 'savingsplan' OR x_ct = 'unusedsavingsplan' THEN 'Savings Plan' ELSE 'Reservation' END",
            "commitment_discount_status": "CASE WHEN x_ct IN ('unusedreservation', 'unusedsavingsplan') THEN 'Unused' "
            "WHEN x_ct = 'usage' AND x_commit_id IS NOT NULL THEN 'Used' END",
            "region_id": "lower(replace(COALESCE(resource_location, meter_region), ' ', ''))",
            "region_name": "COALESCE(resource_location, meter_region)",
            "availability_zone": "availability_zone",
            "resource_id": "lower(resource_id)",
            "resource_name": "COALESCE(resource_name, regexp_extract(resource_id, '[^/]+$'))",
            "resource_type": r"lower(regexp_extract(resource_id, '/providers/([^/]+/[^/]+)/', 1))",
            "sku_id": "COALESCE(product_id, part_number, meter_id)",
            "sku_meter": "meter_name",
            "sku_price_id": "meter_id",
            "tags": "x_tags",
            "x_charge_type": "charge_type",
            "x_usage_type": "meter_subcategory",
            "x_operation": "consumed_service",
            "x_instance_type": "CASE WHEN json_valid(additional_info) THEN "
            "json_extract_string(additional_info, '$.ServiceType') END",
        }


ACTUAL = AzureCostConverter("actual")
AMORTIZED = AzureCostConverter("amortized")

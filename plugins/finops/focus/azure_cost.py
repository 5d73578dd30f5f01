"""Azure Cost Management cost-details exports (actual / amortised cost) -> FOCUS 1.2.

Every schema Microsoft has shipped for the cost-details file loads as it is (column lists
from Microsoft's "dataset schema" reference, one page per version):
- EA, current (2021-10-01 and later): `CostInBillingCurrency`, `BillingCurrencyCode`, ...
- EA with the `Cost` column (`Cost`, `BillingCurrency`, `Product`; the Cost Management
  exports of EA enrolments still deliver it);
- EA 2019-10-01 and pay-as-you-go 2019-11-01, the oldest: `PreTaxCost`, `UsageDateTime`,
  `UsageQuantity`, `InstanceId`, `SubscriptionGuid`, `ResourceRate`; no ChargeType (every row
  is usage), no billing-account column, and EA 2019-10-01 no currency column at all;
- MCA (`costInBillingCurrency`, `billingCurrency`, `invoiceId`, camelCase), pay-as-you-go
  on the MCA schema.
`normalize_sql` maps whichever header arrived (case-insensitive, through ALIASES) to one
internal set of names, typed NULL when a layout lacks a field; only a file without a date or
a cost column is refused, with a message naming both.

The agreement: the source's configured `agreement` (ea / mca) decides what the billing account
and invoice are; `auto` detects it from the columns (an `invoiceId` column: MCA; otherwise
EA, or pay-as-you-go when no billing-account column exists). FOCUS (and Microsoft's own FOCUS
export) puts the MCA *billing profile* in BillingAccountId: that is what an MCA invoice is
issued to. EA files carry no invoice id: a provisional `<account>-<YYYYMM>` stands in.

Values are read as text (`all_varchar`) and cast once to DECIMAL, so money never passes
through a float. Dates: `MM/DD/YYYY` (classic exports) or ISO `YYYY-MM-DD[THH:MM:SS[Z]]`
(newer exports); anything else, or a date outside the billing period (the symptom of a
day/month mix-up), stops the batch with an error naming the value: it is quarantined.
Tags: MCA writes a JSON object, EA writes the members without the outer braces
(`"team": "ml","env": "prod"`): braces are added when missing; text that is still not
valid JSON stops the batch (quarantine), nothing is silently dropped.

Units: UnitOfMeasure blocks ("10K", "100 Hours", "1/Day", "10 GB/Month") go through
`finops.focus.units.UnitScaler`: FOCUS unit, PricingQuantity x block, unit prices / block.

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

from collections.abc import Mapping, Sequence

from finops.focus.projection import (
    files_list,
    lineage,
    lit,
    other_subcategory_sql,
    period_bounds_sql,
    raw_totals_by_currency,
    select_list,
)
from finops.focus.schema import SERVICE_SUBCATEGORIES as FOCUS_SUBCATEGORIES
from finops.focus.units import UnitScaler

MONEY = "DECIMAL(38,10)"
AGREEMENTS = ("ea", "mca", "auto")

# internal name -> header spellings seen in EA / MCA / pay-as-you-go exports (compared lower-case)
ALIASES: dict[str, tuple[str, ...]] = {
    "billing_account_id": ("billingaccountid",),
    "billing_account_name": ("billingaccountname",),
    "billing_profile_id": ("billingprofileid",),
    "billing_profile_name": ("billingprofilename",),
    "account_owner_id": ("accountownerid",),
    "invoice_id": ("invoiceid",),
    "subscription_id": ("subscriptionid", "subscriptionguid"),
    "subscription_name": ("subscriptionname",),
    "resource_group": ("resourcegroup", "resourcegroupname"),
    "resource_location": ("resourcelocation",),
    "location": ("location",),
    "date": ("date", "usagedatetime", "usagedate"),
    "product_name": ("productname", "product"),
    "product_id": ("productid",),
    "part_number": ("partnumber",),
    "meter_category": ("metercategory",),
    "meter_subcategory": ("metersubcategory",),
    "meter_id": ("meterid",),
    "meter_name": ("metername",),
    "meter_region": ("meterregion",),
    "unit_of_measure": ("unitofmeasure",),
    "quantity": ("quantity", "usagequantity"),
    "effective_price": ("effectiveprice", "resourcerate"),
    "unit_price": ("unitprice",),
    "payg_price": ("paygprice",),
    "cost": ("costinbillingcurrency", "cost", "pretaxcost"),
    "payg_cost": ("paygcostinbillingcurrency",),
    "currency": ("billingcurrencycode", "billingcurrency", "currency"),
    "pricing_currency": ("pricingcurrency", "pricingcurrencycode"),
    "consumed_service": ("consumedservice",),
    "resource_id": ("resourceid", "instanceid"),
    "resource_name": ("resourcename",),
    "resource_type": ("resourcetype",),
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
    # Microsoft Partner Agreement (CSP) exports: the customer the partner bills
    "partner_name": ("partnername",),
    "customer_tenant_id": ("customertenantid",),
    "customer_name": ("customername",),
}
ESSENTIAL = ("date", "cost")

# MeterCategory -> (FOCUS 1.2 ServiceCategory, ServiceSubcategory): one row per service, so a
# service's category and subcategory can never disagree. Anything else: Other / Other (Other).
SERVICES: dict[str, tuple[str, str]] = {
    "Virtual Machines": ("Compute", "Virtual Machines"),
    "Virtual Machines Licenses": ("Compute", "Virtual Machines"),
    "Azure Kubernetes Service": ("Compute", "Containers"),
    "Container Instances": ("Compute", "Containers"),
    "Functions": ("Compute", "Serverless Compute"),
    "Azure App Service": ("Compute", "Other (Compute)"),
    "Storage": ("Storage", "Block Storage"),
    "Backup": ("Storage", "Backup Storage"),
    "Bandwidth": ("Networking", "Network Connectivity"),
    "Virtual Network": ("Networking", "Network Infrastructure"),
    "Load Balancer": ("Networking", "Application Networking"),
    "Azure DNS": ("Networking", "Network Routing"),
    "SQL Database": ("Databases", "Relational Databases"),
    "SQL Managed Instance": ("Databases", "Relational Databases"),
    "Azure Cosmos DB": ("Databases", "NoSQL Databases"),
    "Azure Database for PostgreSQL": ("Databases", "Relational Databases"),
    "Azure Database for MySQL": ("Databases", "Relational Databases"),
    "Cognitive Services": ("AI and Machine Learning", "AI Platforms"),
    "Azure OpenAI": ("AI and Machine Learning", "Generative AI"),
    "Machine Learning": ("AI and Machine Learning", "Machine Learning"),
    "Azure Monitor": ("Management and Governance", "Observability"),
    "Log Analytics": ("Management and Governance", "Observability"),
    "Key Vault": ("Security", "Secret Management"),
    "Advanced Threat Protection": ("Security", "Threat Detection and Response"),
    "Advanced Data Security": ("Security", "Threat Detection and Response"),
    "Microsoft Defender for Cloud": ("Security", "Threat Detection and Response"),
    "Azure Synapse Analytics": ("Analytics", "Analytics Platforms"),
    "Azure Data Factory v2": ("Analytics", "Data Processing"),
}
SERVICE_CATEGORIES: dict[str, str] = {k: v[0] for k, v in SERVICES.items()}
SERVICE_SUBCATEGORIES: dict[str, str] = {k: v[1] for k, v in SERVICES.items()}
assert all(FOCUS_SUBCATEGORIES.get(sub) == cat for cat, sub in SERVICES.values()), (
    "subcategory parent mismatch"
)


def _pick(columns: Sequence[str]) -> dict[str, str]:
    """internal name -> the export's own header, for the aliases present."""
    by_lower = {c.lower().lstrip("\ufeff"): c for c in columns}
    picked: dict[str, str] = {}
    for name, spellings in ALIASES.items():
        src = next((by_lower[s] for s in spellings if s in by_lower), None)
        if src is not None:
            picked[name] = src
    return picked


def detect_agreement(columns: Sequence[str]) -> str:
    """'mca' (invoiceId column), 'ea' (a billing-account or account-owner column), 'csp' (a
    Microsoft Partner Agreement export at subscription scope: partner and customer columns, no
    billing account) or 'payg'. A partner export at billing scope is the MCA schema plus partner
    columns, and bills like MCA."""
    picked = _pick(columns)
    if "invoice_id" in picked:
        return "mca"
    if "billing_account_id" in picked or "account_owner_id" in picked:
        return "ea"
    if "customer_tenant_id" in picked or "partner_name" in picked:
        return "csp"
    return "payg"


def case_sql(expr: str, mapping: Mapping[str, str], default: str) -> str:
    """`CASE expr WHEN key THEN value ... ELSE default END` over one of our own tables."""
    whens = " ".join(f"WHEN {lit(k)} THEN {lit(v)}" for k, v in mapping.items())
    return f"CASE {expr} {whens} ELSE {default} END"


class AzureCostConverter:
    """One instance per source: export kind ('actual' / 'amortized'), the configured agreement,
    and a currency for the one schema (EA 2019-10-01) that has no currency column."""

    provider = "azure"

    def __init__(self, kind: str = "amortized", agreement: str = "auto", currency: str | None = None) -> None:
        if kind not in ("actual", "amortized"):
            raise ValueError(f"Azure cost export kind must be actual or amortized, got {kind!r}")
        if agreement not in AGREEMENTS:
            raise ValueError(f"Azure agreement must be one of {AGREEMENTS}, got {agreement!r}")
        if currency is not None and not (len(currency) == 3 and currency.isalpha()):
            raise ValueError(f"Azure source currency must be an ISO 4217 code such as USD, got {currency!r}")
        self.kind = kind
        self.agreement = agreement
        self.currency = currency.upper() if currency else None
        self.name = f"azure_{kind}"

    # -- variant ---------------------------------------------------------------------------
    def agreement_for(self, columns: Sequence[str]) -> str:
        return detect_agreement(columns) if self.agreement == "auto" else self.agreement

    def variant(self, columns: Sequence[str]) -> str:
        """Human name of the export variant these columns are, e.g. 'Azure EA actual, Cost column'."""
        picked = _pick(columns)
        detected = detect_agreement(columns)
        label = {
            "mca": "MCA",
            "ea": "EA",
            "csp": "CSP (partner agreement, subscription scope)",
            "payg": "pay-as-you-go",
        }[detected]
        if detected == "mca" and "partner_name" in picked:
            label = "MPA (partner agreement, billing scope)"
        cost = picked.get("cost", "no cost column")
        if cost.lower() == "pretaxcost":
            schema = "2019 schema (PreTaxCost, UsageDateTime)"
        elif cost.lower() == "cost":
            schema = "Cost column (BillingCurrency)"
        else:
            schema = f"current schema ({cost})"
        name = f"Azure {label} {self.kind}, {schema}"
        if self.agreement != "auto" and self.agreement != detected:
            name += f"; configured agreement {self.agreement}"
        return name

    # -- the Converter protocol ----------------------------------------------------------
    def reader_sql(self, files: list[str]) -> str:
        flist = files_list(files)
        if all(str(f).endswith(".parquet") for f in files):
            return f"SELECT * FROM read_parquet({flist}, union_by_name = true)"
        return (
            f"SELECT * FROM read_csv({flist}, header = true, all_varchar = true, union_by_name = true, "
            "quote = '\"', escape = '\"', strict_mode = true)"
        )

    def normalize_sql(self, raw: str, columns: Mapping[str, str]) -> str:
        picked = _pick(list(columns))
        missing = [n for n in ESSENTIAL if n not in picked]
        if missing:
            want = ", ".join(f"{n} ({'/'.join(ALIASES[n])})" for n in missing)
            raise ValueError(
                f"not an Azure cost-details export: missing column(s) {want}; got {sorted(columns)[:12]}... "
                "(a FOCUS export needs format: focus on the source)"
            )
        if "currency" not in picked and self.currency is None:
            raise ValueError(
                f"{self.variant(list(columns))}: the export has no currency column "
                f"({'/'.join(ALIASES['currency'])}); set `currency:` (e.g. USD) on the Azure source"
            )
        cols = []
        for name in ALIASES:
            src = picked.get(name)
            if src is None and name == "currency":
                expr = lit(self.currency)
            elif src is None:
                expr = "NULL"
            else:
                expr = 'NULLIF(trim(CAST("' + src.replace('"', '""') + "\" AS VARCHAR)), '')"
            cols.append(f"{expr} AS {name}")
        cols.append(f"{lit(self.agreement_for(list(columns)))} AS x_agreement")
        return f"SELECT {', '.join(cols)} FROM {raw}"

    def raw_billed_totals_sql(self, raw: str) -> str:
        return raw_totals_by_currency(
            raw, "upper(currency)", self._billed(f"CAST(cost AS {MONEY})", "charge_type")
        )

    def focus_sql(self, raw: str, ctx: object) -> str:
        start, end = period_bounds_sql(ctx.billing_period)  # type: ignore[attr-defined]
        cols = {**self._columns(start), **lineage(ctx, self.provider)}
        return f"WITH a AS ({self._prepared(raw, start, end)})\nSELECT {select_list(cols)} FROM a"

    def derived_counts_sql(self, raw: str) -> str:
        """(column, rows) for each FOCUS column filled by a fallback because the export lacks it."""
        sub_fallback = (
            f"meter_category IS NULL OR meter_category NOT IN ({', '.join(lit(k) for k in SERVICES)})"
        )
        checks = {
            "ServiceSubcategory": sub_fallback,
            "ChargeDescription": "meter_name IS NULL",
            "ChargeCategory": "charge_type IS NULL",
            "BillingAccountId": "(CASE WHEN x_agreement = 'mca' THEN COALESCE(billing_profile_id, billing_account_id) "
            "ELSE billing_account_id END) IS NULL",
            "InvoiceId": "invoice_id IS NULL",
            "PricingUnit": "unit_of_measure IS NULL",
        }
        return derived_counts_query(raw, checks)

    # -- internals -------------------------------------------------------------------------
    def _billed(self, cost: str, charge_type: str = "charge_type") -> str:
        """BilledCost from the export's cost column (see the module docstring)."""
        if self.kind == "actual":
            return cost
        ct = f"lower(COALESCE({charge_type}, 'usage'))"
        covered = (
            f"(lower(replace(pricing_model, ' ', '')) IN ('reservation', 'savingsplan') AND {ct} = 'usage')"
            f" OR {ct} IN ('unusedreservation', 'unusedsavingsplan')"
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
        tags = (
            "CASE WHEN tags IS NULL OR tags IN ('{}', '') THEN NULL WHEN left(tags, 1) = '{' THEN tags "
            "ELSE '{' || tags || '}' END"
        )
        # MCA: the billing profile is FOCUS's billing account (what the invoice is issued to)
        account = "CASE WHEN x_agreement = 'mca' THEN COALESCE(billing_profile_id, billing_account_id) ELSE billing_account_id END"
        account_name = (
            "CASE WHEN x_agreement = 'mca' THEN COALESCE(billing_profile_name, billing_account_name) "
            "ELSE billing_account_name END"
        )
        units = UnitScaler("unit_of_measure")
        inner = f"(SELECT *, CAST({parsed} AS TIMESTAMP) AS x_day, {tags} AS x_tags_raw FROM {raw})"
        return f"""SELECT *,
  CASE WHEN x_day IS NULL THEN error('Azure export: unparseable Date ' || {d})
       WHEN x_day < {start} OR x_day >= {end}
         THEN error('Azure export: Date ' || {d} || ' lies outside billing period ' || strftime({start}, '%Y-%m')
                    || ' (day/month order mixed up?)')
       ELSE x_day END AS x_charge_day,
  CASE WHEN x_tags_raw IS NULL THEN NULL WHEN json_valid(x_tags_raw) THEN CAST(json(x_tags_raw) AS VARCHAR)
       ELSE error('Azure export: Tags is not valid JSON: ' || left(tags, 200)) END AS x_tags,
  CAST(cost AS {MONEY}) AS x_cost,
  lower(COALESCE(charge_type, 'Usage')) AS x_ct,
  lower(replace(COALESCE(pricing_model, 'OnDemand'), ' ', '')) AS x_pm,
  COALESCE(benefit_id, reservation_id) AS x_commit_id,
  COALESCE(benefit_name, reservation_name) AS x_commit_name,
  COALESCE({account}, account_owner_id, customer_tenant_id, subscription_id) AS x_account,
  CASE WHEN {account} IS NULL AND account_owner_id IS NULL AND customer_tenant_id IS NOT NULL
       THEN COALESCE(customer_name, customer_tenant_id)
       ELSE COALESCE({account_name}, billing_account_name) END AS x_account_name,
  {units.quantity("quantity")} AS x_pqty,
  {units.unit} AS x_punit,
  {units.price("payg_price")} AS x_list_price,
  {units.price("unit_price")} AS x_contract_price
FROM ({units.relation(inner)})"""

    def _columns(self, start: str) -> dict[str, str]:
        billed = self._billed("x_cost", "x_ct")
        # FOCUS: a commitment purchase (or its refund) has EffectiveCost 0 -- its value shows up
        # amortised on the usage it covers (amortized export; the actual export cannot show it).
        effective = (
            "CASE WHEN x_ct IN ('purchase', 'refund') AND x_commit_id IS NOT NULL THEN 0 ELSE x_cost END"
        )
        qty = "CAST(quantity AS DECIMAL(38,12))"
        is_usage = "x_ct IN ('usage', 'unusedreservation', 'unusedsavingsplan')"
        category = (
            "CASE WHEN x_ct IN ('usage', 'unusedreservation', 'unusedsavingsplan') THEN 'Usage' "
            "WHEN x_ct IN ('purchase', 'refund') THEN 'Purchase' WHEN x_ct = 'tax' THEN 'Tax' "
            "WHEN x_ct = 'credit' THEN 'Credit' ELSE 'Adjustment' END"
        )
        svc_category = case_sql("meter_category", SERVICE_CATEGORIES, "'Other'")
        sub = case_sql("meter_category", SERVICE_SUBCATEGORIES, other_subcategory_sql(svc_category))
        # PricingUnit must not be null when PricingQuantity is not (FOCUS): 'Units' when the file has no unit
        punit = "CASE WHEN x_pqty IS NOT NULL THEN COALESCE(x_punit, 'Units') END"
        return {
            "billed_cost": billed,
            "effective_cost": effective,
            "list_cost": f"COALESCE(CAST(payg_cost AS {MONEY}), CAST(payg_price AS DECIMAL(38,12)) * {qty}, x_cost)",
            "contracted_cost": f"COALESCE(CAST(unit_price AS DECIMAL(38,12)) * {qty}, x_cost)",
            "billing_account_id": "x_account",
            "billing_account_name": "x_account_name",
            "billing_account_type": "CASE WHEN x_agreement = 'mca' AND billing_profile_id IS NOT NULL "
            "THEN 'Billing Profile' WHEN billing_account_id IS NOT NULL THEN 'Billing Account' "
            "WHEN account_owner_id IS NOT NULL THEN 'Enrollment Account' "
            # a CSP subscription-scope export: the partner invoices the customer (its tenant)
            "WHEN customer_tenant_id IS NOT NULL THEN 'Customer' ELSE 'Subscription' END",
            "billing_currency": "upper(currency)",
            "billing_period_start": start,
            "billing_period_end": f"({start} + INTERVAL 1 MONTH)",
            "charge_category": category,
            "charge_class": "CASE WHEN x_ct = 'refund' THEN 'Correction' END",
            "charge_description": "COALESCE(meter_name, product_name, charge_type, meter_category)",
            "charge_frequency": "CASE lower(frequency) WHEN 'onetime' THEN 'One-Time' WHEN 'recurring' THEN 'Recurring' "
            f"WHEN 'usagebased' THEN 'Usage-Based' ELSE CASE WHEN {is_usage} THEN 'Usage-Based' ELSE 'One-Time' END END",
            "charge_period_start": "x_charge_day",
            "charge_period_end": "x_charge_day + INTERVAL 1 DAY",
            "invoice_id": f"COALESCE(invoice_id, x_account || '-' || strftime({start}, '%Y%m'))",
            "invoice_issuer_name": "'Microsoft'",
            "provider_name": "'Microsoft'",
            "publisher_name": "COALESCE(publisher_name, 'Microsoft')",
            "service_name": "COALESCE(meter_category, consumed_service, 'Unknown')",
            "service_category": svc_category,
            "service_subcategory": sub,
            "sub_account_id": "subscription_id",
            "sub_account_name": "subscription_name",
            "sub_account_type": "CASE WHEN subscription_id IS NOT NULL THEN 'Subscription' END",
            "pricing_quantity": "x_pqty",
            "pricing_unit": punit,
            "consumed_quantity": "CASE WHEN x_ct = 'usage' THEN x_pqty END",
            "consumed_unit": f"CASE WHEN x_ct = 'usage' THEN {punit} END",
            "list_unit_price": "x_list_price",
            "contracted_unit_price": "x_contract_price",
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
            "resource_name": "COALESCE(resource_name, NULLIF(regexp_extract(resource_id, '[^/]+$'), ''))",
            "resource_type": r"COALESCE(lower(NULLIF(regexp_extract(resource_id, '/providers/([^/]+/[^/]+)/', 1), '')), "
            "lower(resource_type))",
            "sku_id": "COALESCE(product_id, part_number, meter_id)",
            "sku_meter": "meter_name",
            "sku_price_id": "meter_id",
            "tags": "x_tags",
            "x_charge_type": "COALESCE(charge_type, 'Usage')",
            "x_usage_type": "meter_subcategory",
            "x_operation": "consumed_service",
            "x_instance_type": "CASE WHEN json_valid(additional_info) THEN "
            "json_extract_string(additional_info, '$.ServiceType') END",
        }


def derived_counts_query(raw: str, checks: Mapping[str, str]) -> str:
    """One scan of `raw`: (column, rows) for every check that matched at least one row."""
    names = ", ".join(lit(n) for n in checks)
    counts = ", ".join(f"count(*) FILTER (WHERE {cond})" for cond in checks.values())
    return (
        f'SELECT "column", "rows" FROM (SELECT unnest([{names}]) AS "column", '
        f'unnest([{counts}]) AS "rows" FROM {raw}) WHERE "rows" > 0'
    )


ACTUAL = AzureCostConverter("actual")
AMORTIZED = AzureCostConverter("amortized")

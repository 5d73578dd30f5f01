"""Azure cost-details schema variants: each loads as it is through the real spine, is named by
`variant`, and reports what had to be derived.

Headers of the oldest schemas are Microsoft's column lists in their order (MicrosoftDocs/azure-docs
articles/cost-management-billing/dataset-schema/usage-details-ea-2019-10-01.md and
usage-details-pay-as-you-go-2019-11-01.md); their rows restate rows of Microsoft's published EA
sample (tests/data/azure/ea-actual-small.csv): no published file of these schemas is small enough."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from finops.demo import azure_generator as gen
from finops.focus.azure_cost import AzureCostConverter
from finops.ingest import RawBatch, load_batch

DATA = Path(__file__).resolve().parents[1] / "data" / "azure"

EA_2019 = (
    "DepartmentName,AccountName,AccountOwnerId,SubscriptionGuid,SubscriptionName,ResourceGroup,ResourceLocation,"
    "UsageDateTime,ProductName,MeterCategory,MeterSubcategory,MeterId,MeterName,MeterRegion,UnitOfMeasure,"
    "UsageQuantity,ResourceRate,PreTaxCost,CostCenter,ConsumedService,ResourceType,InstanceId,Tags,OfferId,"
    "AdditionalInfo,ServiceInfo1,ServiceInfo2"
)
PAYG_2019 = (
    "SubscriptionGuid,ResourceGroup,ResourceLocation,UsageDateTime,MeterCategory,MeterSubCategory,MeterId,MeterName,"
    "MeterRegion,UsageQuantity,ResourceRate,PreTaxCost,ConsumedService,ResourceType,InstanceId,Tags,OfferId,"
    "AdditionalInfo,ServiceInfo1,ServiceInfo2,ServiceName,ServiceTier,Currency,UnitOfMeasure"
)
# three rows of the published sample: a '10K' storage meter, a VM ('1 Hour'), a disk ('1/Month')
ROWS = [
    {
        "MeterCategory": "Storage",
        "MeterSubcategory": "Tiered Block Blob",
        "MeterName": "GRS List and Create Container Operations",
        "UnitOfMeasure": "10K",
        "UsageQuantity": "0.0004",
        "ResourceRate": "0.1",
        "PreTaxCost": "0.00004",
        "UsageDateTime": "2023-09-04T00:00:00",
        "ResourceLocation": "EastUS2",
        "ConsumedService": "Microsoft.Storage",
        "InstanceId": "/subscriptions/ed570627-0265-4620-bb42-bae06bcfa914/resourceGroups/databricks-rg-PeskyData-s6taefbli5c5e"
        "/providers/Microsoft.Storage/storageAccounts/dbstoragewp6hglwvvrad2",
        "SubscriptionGuid": "ed570627-0265-4620-bb42-bae06bcfa914",
        "Tags": '"env": "prod","org": "trey"',
    },
    {
        "MeterCategory": "Virtual Machines",
        "MeterSubcategory": "Dv3/DSv3 Series",
        "MeterName": "D2 v3/D2s v3",
        "UnitOfMeasure": "1 Hour",
        "UsageQuantity": "24",
        "ResourceRate": "0.11",
        "PreTaxCost": "2.64",
        "UsageDateTime": "2023-09-04T00:00:00",
        "ResourceLocation": "SouthCentralUS",
        "ConsumedService": "Microsoft.Compute",
        "InstanceId": "/subscriptions/1caaa5a3-2b66-438e-8ab4-bce37d518c5d/resourceGroups/CapRes_Test/providers"
        "/Microsoft.Compute/capacityReservationGroups/OnDemadCapRes_Test_USSouthCentralZonal",
        "SubscriptionGuid": "1caaa5a3-2b66-438e-8ab4-bce37d518c5d",
        "Tags": "",
    },
    {
        "MeterCategory": "Storage",
        "MeterSubcategory": "Premium SSD Managed Disks",
        "MeterName": "P4 LRS Disk",
        "UnitOfMeasure": "1/Month",
        "UsageQuantity": "0.033336",
        "ResourceRate": "6.38",
        "PreTaxCost": "0.21268368",
        "UsageDateTime": "2023-09-05T00:00:00",
        "ResourceLocation": "ukwest",
        "ConsumedService": "Microsoft.Compute",
        "InstanceId": "/subscriptions/1caaa5a3-2b66-438e-8ab4-bce37d518c5d/resourceGroups/COSTMANAGEMENT-REST-RG"
        "/providers/Microsoft.Compute/disks/MarketplaceBYOLTest2_OsDisk_1",
        "SubscriptionGuid": "1caaa5a3-2b66-438e-8ab4-bce37d518c5d",
        "Tags": '"CostCenter": "SubACM"',
    },
]
COST = sum(Decimal(r["PreTaxCost"]) for r in ROWS)


def _write(path: Path, header: str, extra: dict[str, str]) -> Path:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=header.split(","), extrasaction="ignore", lineterminator="\r\n")
    w.writeheader()
    for r in ROWS:
        w.writerow({**extra, **r, "MeterSubCategory": r["MeterSubcategory"]})
    path.write_text(out.getvalue())
    return path


def _load(wh, path: Path, conv: AzureCostConverter):
    batch = RawBatch(
        source="az-old", provider="azure", billing_period="2023-09", files=[path], fingerprint="v1"
    )
    return load_batch(wh, batch, conv)


def _derived(conv: AzureCostConverter, path: Path) -> tuple[dict[str, int], str]:
    con = duckdb.connect()
    con.execute(f"CREATE VIEW src AS {conv.reader_sql([str(path)])}")
    cols = {r[0]: r[1] for r in con.execute("DESCRIBE src").fetchall()}
    con.execute(f"CREATE VIEW raw AS {conv.normalize_sql('src', cols)}")
    return dict(con.execute(conv.derived_counts_sql("raw")).fetchall()), conv.variant(list(cols))


def test_ea_2019_schema_needs_a_configured_currency(tmp_path, duckdb_wh):
    path = _write(
        tmp_path / "ea2019.csv",
        EA_2019,
        {"AccountOwnerId": "acm@testea.onmicrosoft.com", "AccountName": "ACM Team", "DepartmentName": "ACM"},
    )
    entry = _load(duckdb_wh, path, AzureCostConverter("actual"))
    assert entry.status == "quarantined"
    assert "2019 schema" in entry.message and "set `currency:`" in entry.message


def test_ea_2019_schema_loads_with_currency(tmp_path, duckdb_wh):
    path = _write(
        tmp_path / "ea2019.csv",
        EA_2019,
        {"AccountOwnerId": "acm@testea.onmicrosoft.com", "AccountName": "ACM Team", "DepartmentName": "ACM"},
    )
    conv = AzureCostConverter("actual", agreement="ea", currency="usd")
    entry = _load(duckdb_wh, path, conv)
    assert entry.status == "loaded", entry.message
    rows = duckdb_wh.query(
        "SELECT billing_account_id, billing_account_type, billing_currency, charge_category, "
        "pricing_quantity, pricing_unit, list_unit_price, sum(billed_cost) OVER () FROM focus_costs "
        "ORDER BY pricing_quantity"
    )
    assert {r[:4] for r in rows} == {("acm@testea.onmicrosoft.com", "Enrollment Account", "USD", "Usage")}
    assert (Decimal(rows[0][4]), rows[0][5]) == (Decimal("0.033336"), "Units/Month")
    assert (Decimal(rows[-1][4]), rows[-1][5]) == (Decimal(24), "Hours")
    assert Decimal(rows[0][7]) == COST
    derived, variant = _derived(conv, path)
    assert variant == "Azure EA actual, 2019 schema (PreTaxCost, UsageDateTime)"
    assert derived == {"ChargeCategory": 3, "BillingAccountId": 3, "InvoiceId": 3}


def test_payg_2019_schema_loads(tmp_path, duckdb_wh):
    path = _write(tmp_path / "payg2019.csv", PAYG_2019, {"Currency": "EUR", "OfferId": "MS-AZR-0003P"})
    conv = AzureCostConverter("actual")
    assert _load(duckdb_wh, path, conv).status == "loaded"
    got = duckdb_wh.query(
        "SELECT DISTINCT billing_account_id, billing_account_type, billing_currency, invoice_id "
        "FROM focus_costs ORDER BY 1"
    )
    assert got == [
        (
            "1caaa5a3-2b66-438e-8ab4-bce37d518c5d",
            "Subscription",
            "EUR",
            "1caaa5a3-2b66-438e-8ab4-bce37d518c5d-202309",
        ),
        (
            "ed570627-0265-4620-bb42-bae06bcfa914",
            "Subscription",
            "EUR",
            "ed570627-0265-4620-bb42-bae06bcfa914-202309",
        ),
    ]
    total = duckdb_wh.query("SELECT sum(billed_cost) FROM focus_costs")[0][0]
    assert Decimal(total) == COST
    assert _derived(conv, path)[1] == "Azure pay-as-you-go actual, 2019 schema (PreTaxCost, UsageDateTime)"


@pytest.mark.parametrize(
    ("layout", "agreement", "want"),
    [
        ("ea", "auto", "Azure EA amortized, current schema (CostInBillingCurrency)"),
        ("mca", "auto", "Azure MCA amortized, current schema (costInBillingCurrency)"),
        ("mca", "ea", "Azure MCA amortized, current schema (costInBillingCurrency); configured agreement ea"),
    ],
)
def test_current_schemas_are_named(tmp_path, layout, agreement, want):
    path = gen.generate(layout=layout, kind="amortized", days=1).write_csv(tmp_path / "part_0_0001.csv")
    assert _derived(AzureCostConverter("amortized", agreement=agreement), path)[1] == want


def test_published_sample_variant_and_derived_counts():
    conv = AzureCostConverter("actual")
    derived, variant = _derived(conv, DATA / "ea-actual-small.csv")
    assert variant == "Azure EA actual, Cost column (BillingCurrency)"
    assert derived == {"InvoiceId": 11}  # every meter category is mapped; EA files carry no invoice id


def test_bad_configuration_is_refused():
    with pytest.raises(ValueError, match="agreement"):
        AzureCostConverter("actual", agreement="csp")
    with pytest.raises(ValueError, match="ISO 4217"):
        AzureCostConverter("actual", currency="dollars")


def test_unmapped_meter_category_loads_as_other(tmp_path, duckdb_wh):
    """A meter category outside our table is Other / Other (Other), a valid pair: counted, never quarantined."""
    text = (DATA / "ea-actual-small.csv").read_text(encoding="utf-8-sig")
    path = tmp_path / "part_0_0001.csv"
    path.write_text(text.replace(",Advanced Threat Protection,", ",Azure Quantum,"))
    conv = AzureCostConverter("actual")
    entry = _load(duckdb_wh, path, conv)
    assert entry.status == "loaded", entry.message
    got = duckdb_wh.query(
        "SELECT service_name, service_category, service_subcategory FROM focus_costs "
        "WHERE service_name = 'Azure Quantum'"
    )
    assert got == [("Azure Quantum", "Other", "Other (Other)")]
    assert _derived(conv, path)[0] == {"ServiceSubcategory": 1, "InvoiceId": 11}


# Microsoft Partner Agreement (CSP) exports, from Microsoft's "cost and usage details file schema"
# pages (dataset-schema/cost-usage-details-mca-partner and -mca-partner-subscription, version
# 2023-12-01-preview). The pages' column lists name the head of each file; from `date`
# (billing scope) and `SubscriptionId` (subscription scope) on, the columns are the MCA
# schema's, in its order.
MPA_HEAD = (
    "invoiceId,previousInvoiceId,billingAccountId,billingAccountName,billingProfileId,billingProfileName,"
    "invoiceSectionId,invoiceSectionName,partnerTenantId,partnerName,resellerName,resellerMpnId,"
    "customerTenantId,customerName,costCenter,billingPeriodEndDate,billingPeriodStartDate,"
    "servicePeriodEndDate,servicePeriodStartDate"
).split(",")
CSP_SUBSCRIPTION_HEAD = (
    "billingAccountName,partnerName,resellerName,resellerMpnId,customerTenantId,customerName,costCenter,"
    "billingPeriodEndDate,billingPeriodStartDate,servicePeriodEndDate,servicePeriodStartDate,date,serviceFamily,"
    "productOrderId,productOrderName,consumedService,meterId,meterName,meterCategory,meterSubCategory,meterRegion,"
    "ProductId,ProductName,SubscriptionId"
).split(",")
PARTNER = {
    "partnerTenantId": "0f5e7a4e-0000-4000-8000-00000000c5p0",
    "partnerName": "Contoso CSP",
    "customerTenantId": "6b1f0b2c-0000-4000-8000-0000000000c1",
    "customerName": "Fabrikam, Inc.",
}


def _partner_export(tmp_path: Path, head: list[str], tail_from: str) -> tuple[Path, Decimal]:
    """The demo generator's MCA rows of 2026-10 rewritten in a partner layout; their total."""
    src = gen.generate(layout="mca", kind="actual", days=2).write_csv(tmp_path / "mca.csv")
    rows = list(csv.DictReader(src.open(encoding="utf-8-sig")))
    header = head + gen.MCA_HEADER[gen.MCA_HEADER.index(tail_from) + (0 if tail_from == "date" else 1) :]
    out = tmp_path / "part_0_0001.csv"
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, header, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({**r, **PARTNER})
    return out, sum((Decimal(r["costInBillingCurrency"]) for r in rows), Decimal(0))


def test_csp_subscription_scope_export_loads(tmp_path, duckdb_wh):
    """No billing account, profile or invoice column: the customer the partner bills is the
    billing account, so rows without a subscription (purchases) still have one."""
    path, total = _partner_export(tmp_path, CSP_SUBSCRIPTION_HEAD, "SubscriptionId")
    conv = AzureCostConverter("actual")
    assert conv.variant(next(csv.reader(path.open()))) == (
        "Azure CSP (partner agreement, subscription scope) actual, current schema (costInBillingCurrency)"
    )
    batch = RawBatch(source="csp", provider="azure", billing_period="2026-10", files=[path], fingerprint="v1")
    entry = load_batch(duckdb_wh, batch, conv)
    assert entry.status == "loaded", entry.message
    got = duckdb_wh.query(
        "SELECT DISTINCT billing_account_id, billing_account_name, billing_account_type, invoice_id FROM focus_costs"
    )
    assert got == [
        (PARTNER["customerTenantId"], "Fabrikam, Inc.", "Customer", f"{PARTNER['customerTenantId']}-202610")
    ]
    assert Decimal(duckdb_wh.query("SELECT sum(billed_cost) FROM focus_costs")[0][0]) == total
    assert load_batch(duckdb_wh, batch, conv).status == "unchanged"
    assert Decimal(duckdb_wh.query("SELECT sum(billed_cost) FROM focus_costs")[0][0]) == total


def test_mpa_billing_scope_export_bills_like_mca(tmp_path, duckdb_wh):
    path, total = _partner_export(tmp_path, MPA_HEAD, "date")
    conv = AzureCostConverter("actual")
    assert conv.variant(next(csv.reader(path.open()))).startswith(
        "Azure MPA (partner agreement, billing scope) actual"
    )
    batch = RawBatch(source="mpa", provider="azure", billing_period="2026-10", files=[path], fingerprint="v1")
    entry = load_batch(duckdb_wh, batch, conv)
    assert entry.status == "loaded", entry.message
    (acct_type,) = {r[0] for r in duckdb_wh.query("SELECT billing_account_type FROM focus_costs")}
    assert acct_type == "Billing Profile"
    assert Decimal(duckdb_wh.query("SELECT sum(billed_cost) FROM focus_costs")[0][0]) == total

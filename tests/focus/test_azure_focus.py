"""Azure Cost Management FOCUS exports 1.0 / 1.0r2 / 1.2-preview (tests/data/azure, SOURCES.md):
totals exact, ServiceSubcategory filled consistently with the export's own ServiceCategory, the
invoice id from the invoice field (never the billing-account path), variant and derived counts."""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from finops.focus.azure_focus import AzureFocusConverter
from finops.focus.schema import SERVICE_SUBCATEGORIES
from finops.ingest import RawBatch, load_batch
from tests.fixtures.focus_convert import convert

CENT = Decimal("0.01")
DATA = Path(__file__).resolve().parents[1] / "data" / "azure"
FILES = {
    "1.0": ("focus-1.0-constructed.csv", "Azure Cost Management FOCUS 1.0 / 1.0r2 export"),
    "1.0r2": ("focus-1.0r2-constructed.csv", "Azure Cost Management FOCUS 1.0 / 1.0r2 export"),
    "1.2-preview": ("focus-1.2-preview-constructed.csv", "Azure Cost Management FOCUS 1.2-preview export"),
}


def _sums(path: Path) -> tuple[Decimal, Decimal, int]:
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return (
        sum(Decimal(r["BilledCost"]) for r in rows),
        sum(Decimal(r["EffectiveCost"]) for r in rows),
        len(rows),
    )


def _derived(conv: AzureFocusConverter, path: Path) -> tuple[dict[str, int], str]:
    con = duckdb.connect()
    con.execute(f"CREATE VIEW raw AS {conv.reader_sql([str(path)])}")
    cols = [r[0] for r in con.execute("DESCRIBE raw").fetchall()]
    return dict(con.execute(conv.derived_counts_sql("raw")).fetchall()), conv.variant(cols)


@pytest.mark.parametrize("version", list(FILES))
def test_focus_versions_convert_exactly(tmp_path, finops_home, version):
    name, variant = FILES[version]
    conv = AzureFocusConverter(agreement="ea")
    res, rows = convert(conv, [DATA / name], provider="azure", period="2023-09", tmp=tmp_path)
    billed, effective, n = _sums(DATA / name)
    assert res.row_count == n and res.raw_billed_total == res.focus_billed_total
    for got, want in ((res.focus_billed_total, billed), (res.focus_effective_total, effective)):
        # to the cent; each row rounds once, at the warehouse's DECIMAL(38,10)
        assert got.quantize(CENT) == want.quantize(CENT) and abs(got - want) < n * Decimal("1e-10")
    for r in rows:  # the pair always agrees, whatever version filled it
        assert SERVICE_SUBCATEGORIES[r["service_subcategory"]] == r["service_category"], r["service_name"]
        assert r["invoice_id"] == "8611537-202309"  # provisional, from the account id, not its resource path
        assert r["sku_meter"] and r["pricing_currency"] == "USD"
    by_meter = {r["sku_meter"]: r for r in rows}
    assert by_meter["Pay-as-you-go Data Retention"]["service_subcategory"] == "Observability"
    assert by_meter["Pay-as-you-go Data Retention"]["pricing_unit"] == "GB-Months"  # 'GB/Month'
    assert {str(r["charge_period_start"]) for r in rows} >= {"2023-09-22 00:00:00", "2023-09-03 00:00:00"}
    derived, found = _derived(AzureFocusConverter(agreement="ea"), DATA / name)
    assert found == variant + ", agreement ea"
    if version == "1.2-preview":
        assert derived == {"InvoiceId": n}
    else:  # FOCUS 1.0 has no ServiceSubcategory, and names SkuMeter / PricingCurrency x_...
        assert derived == {"ServiceSubcategory": n, "InvoiceId": n, "SkuMeter": n, "PricingCurrency": n}


def _edited(tmp_path: Path, name: str, edit) -> Path:
    with open(DATA / name, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        edit(r)
    out = tmp_path / name
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return out


def test_unmapped_meter_category_falls_back_and_loads(duckdb_wh, tmp_path):
    """A meter category we do not map, or one whose mapping disagrees with the export's own
    ServiceCategory, becomes Other (<ServiceCategory>): our validation accepts it, never 'Other (Other)'
    beside a real category."""

    def edit(r):
        if r["x_SkuMeterCategory"] == "Log Analytics":
            r["x_SkuMeterCategory"] = "Azure Managed Grafana"  # not in our table
        elif r["x_SkuMeterCategory"] == "Storage":
            r["ServiceCategory"] = "Compute"  # our table says Storage: the export's category wins

    path = _edited(tmp_path, "focus-1.0-constructed.csv", edit)
    batch = RawBatch(
        source="az-focus", provider="azure", billing_period="2023-09", files=[path], fingerprint="v1"
    )
    entry = load_batch(duckdb_wh, batch, AzureFocusConverter())
    assert entry.status == "loaded", entry.message
    pairs = set(duckdb_wh.query("SELECT service_category, service_subcategory FROM focus_costs"))
    assert ("Management and Governance", "Other (Management and Governance)") in pairs
    assert ("Compute", "Other (Compute)") in pairs
    assert ("Compute", "Virtual Machines") in pairs and ("Other", "Other (Other)") not in pairs


def test_invoice_field_wins_over_provisional_id(tmp_path, finops_home):
    def edit(r):
        r["x_InvoiceId"] = "E0123456789"

    path = _edited(tmp_path, "focus-1.0r2-constructed.csv", edit)
    _, rows = convert(AzureFocusConverter(), [path], provider="azure", period="2023-09", tmp=tmp_path)
    assert {r["invoice_id"] for r in rows} == {"E0123456789"}


def test_block_pricing_unit_is_scaled(tmp_path, finops_home):
    """An export whose PricingUnit is a block ('10K') gets quantity x 10000 and price / 10000."""

    def edit(r):
        if r["x_PricingUnitDescription"] == "10K":
            r["PricingUnit"], r["PricingQuantity"], r["ListUnitPrice"] = "10K", "0.1351", "0.0005"

    path = _edited(tmp_path, "focus-1.2-preview-constructed.csv", edit)
    _, rows = convert(AzureFocusConverter(), [path], provider="azure", period="2023-09", tmp=tmp_path)
    row = next(r for r in rows if r["sku_meter"] == "Disk Operations")
    assert (row["pricing_quantity"], row["pricing_unit"], row["list_unit_price"]) == (
        Decimal("1351"),
        "Units",
        Decimal("0.00000005"),
    )

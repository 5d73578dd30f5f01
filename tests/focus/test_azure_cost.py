"""Azure cost exports -> FOCUS: EA and MCA layouts, actual vs amortised, tags quirk, bad input."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from finops.demo import azure_generator as gen
from finops.focus.azure_cost import ACTUAL, AMORTIZED, AzureCostConverter
from finops.focus.azure_focus import CONVERTER as FOCUS
from finops.ingest import ConversionError
from tests.fixtures.focus_convert import convert

CASES = [
    ("ea", "actual", "USD"),
    ("ea", "amortized", "USD"),
    ("mca", "actual", "EUR"),
    ("mca", "amortized", "EUR"),
]


@pytest.fixture(scope="module", params=CASES, ids=["-".join(c) for c in CASES])
def converted(request, tmp_path_factory):
    layout, kind, cur = request.param
    tmp = tmp_path_factory.mktemp(f"az_{layout}_{kind}")
    sample = gen.generate(layout=layout, kind=kind, currency=cur, days=2)
    path = sample.write_csv(tmp / "part_1.csv.gz", gz=True)
    conv = ACTUAL if kind == "actual" else AMORTIZED
    res, rows = convert(conv, [path], provider="azure", period="2026-10", tmp=tmp)
    return sample, res, rows


def test_totals_reconcile_to_the_cent(converted):
    sample, res, rows = converted
    assert res.focus_billed_total == res.raw_billed_total
    assert res.focus_billed_total.quantize(Decimal("0.01")) == sample.billed_total.quantize(Decimal("0.01"))
    assert res.focus_effective_total.quantize(Decimal("0.01")) == sample.effective_total.quantize(
        Decimal("0.01")
    )
    assert res.currencies == [sample.currency]
    assert len(rows) == len(sample.rows)


def test_reservation_purchase_vs_amortised_usage(converted):
    sample, _, rows = converted
    purchase = next(r for r in rows if r["x_charge_type"] == "Purchase")
    assert purchase["charge_category"] == "Purchase" and purchase["commitment_discount_type"] == "Reservation"
    assert purchase["billed_cost"] > 0
    covered = [r for r in rows if r["commitment_discount_status"] == "Used"]
    assert covered and all(r["billed_cost"] == 0 for r in covered)
    assert all(
        r["pricing_category"] == "Committed" and r["commitment_discount_category"] == "Usage" for r in covered
    )
    refund = next(r for r in rows if r["x_charge_type"] == "Refund")
    assert (refund["charge_category"], refund["charge_class"]) == ("Purchase", "Correction")
    if sample.kind == "amortized":
        assert purchase["effective_cost"] == 0 and refund["effective_cost"] == 0
        assert all(r["effective_cost"] > 0 for r in covered)
        unused = [r for r in rows if r["commitment_discount_status"] == "Unused"]
        assert unused and all(r["billed_cost"] == 0 and r["effective_cost"] > 0 for r in unused)
    else:
        assert purchase["effective_cost"] == 0  # FOCUS: commitment purchases carry no EffectiveCost


def test_dimensions(converted):
    sample, _, rows = converted
    spot = [r for r in rows if r["pricing_category"] == "Dynamic"]
    assert spot and {r["x_instance_type"] for r in spot} == {"Standard_NV36ads_A10_v5"}
    vm = next(r for r in rows if r["sku_meter"] == "D8s v5" and r["charge_category"] == "Usage")
    assert json.loads(vm["tags"]) == {"team": "web", "env": "prod"}  # EA braces added; MCA as-is
    assert vm["resource_type"] == "microsoft.compute/virtualmachines" and vm["resource_name"] == "vm-web-0"
    assert vm["region_id"] == "eastus" and vm["service_category"] == "Compute"
    assert vm["sub_account_type"] == "Subscription" and vm["pricing_category"] == "Standard"
    assert vm["list_cost"] == vm["contracted_cost"]
    assert abs(vm["list_cost"] - vm["billed_cost"]) < Decimal("0.000001")
    disk = next(r for r in rows if r["service_name"] == "Storage")
    assert disk["tags"] is None
    assert vm["invoice_id"] == (
        "G012345678" if sample.layout == "mca" else "8611537-202610"
    )  # EA: provisional id


def _bad_csv(tmp_path, layout, mutate):
    sample = gen.generate(layout=layout, kind="actual", days=1)
    text = sample.csv_bytes().decode("utf-8-sig")
    path = tmp_path / "bad.csv"
    path.write_text(mutate(text))
    return path


def test_broken_tag_json_is_an_error_naming_the_value(tmp_path, finops_home):
    path = _bad_csv(tmp_path, "mca", lambda t: t.replace('""env"": ""prod""}"', '""env"": ""prod"""', 1))
    with pytest.raises(ConversionError, match="Tags is not valid JSON"):
        convert(ACTUAL, [path], provider="azure", period="2026-10", tmp=tmp_path)


def test_mixed_date_formats_caught(tmp_path, finops_home):
    # one row written day-first: 10/01/2026 -> 01/10/2026 (January): outside the period
    path = _bad_csv(tmp_path, "ea", lambda t: t.replace("10/01/2026", "01/10/2026", 2))
    with pytest.raises(ConversionError, match="outside billing period"):
        convert(ACTUAL, [path], provider="azure", period="2026-10", tmp=tmp_path)
    path = _bad_csv(tmp_path, "ea", lambda t: t.replace("10/01/2026", "2026.10.01", 1))
    with pytest.raises(ConversionError, match="unparseable Date"):
        convert(ACTUAL, [path], provider="azure", period="2026-10", tmp=tmp_path)


@pytest.mark.parametrize(
    "iso",
    ["2026-10-01", "2026-10-01T00:00:00.0000000Z", "2026-10-01 00:00:00"],
    ids=["date", "dotnet-7-digit", "space-separated"],
)
def test_iso_dates_accepted(tmp_path, finops_home, iso):
    """ISO days in every spelling Azure tools write: plain, .NET round-trip ("o": 7 fraction
    digits), and a typed timestamp's text (what a parquet TIMESTAMP column reads as)."""
    text = gen.generate(layout="mca", kind="actual", days=1).csv_bytes().decode("utf-8-sig")
    (tmp_path / "us.csv").write_text(text)
    (tmp_path / "iso.csv").write_text(text.replace("10/01/2026", iso))
    want, want_rows = convert(
        ACTUAL, [tmp_path / "us.csv"], provider="azure", period="2026-10", tmp=tmp_path / "us"
    )
    res, rows = convert(
        ACTUAL, [tmp_path / "iso.csv"], provider="azure", period="2026-10", tmp=tmp_path / "iso"
    )
    assert res.row_count == len(rows) > 0
    assert (res.row_count, res.focus_billed_total) == (want.row_count, want.focus_billed_total)
    day = sorted((str(r["charge_period_start"]), str(r["billed_cost"])) for r in rows)
    assert day == sorted((str(r["charge_period_start"]), str(r["billed_cost"])) for r in want_rows)


def test_parquet_export_with_a_typed_date_column(tmp_path, finops_home):
    """A parquet export whose Date is a TIMESTAMP (not text) converts, to the same totals as its csv."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    sample = gen.generate(layout="mca", kind="actual", days=2)
    csv_path = sample.write_csv(tmp_path / "a.csv")
    table = pacsv.read_csv(
        csv_path,
        convert_options=pacsv.ConvertOptions(
            column_types={"date": pa.timestamp("us")},
            timestamp_parsers=["%m/%d/%Y"],
            strings_can_be_null=False,
        ),
    )
    date_col = next(f for f in table.schema if f.name.lower().lstrip("\ufeff") == "date")
    assert pa.types.is_timestamp(date_col.type)
    pq.write_table(table, tmp_path / "a.parquet")
    want, _ = convert(ACTUAL, [csv_path], provider="azure", period="2026-10", tmp=tmp_path / "csv")
    got, rows = convert(
        ACTUAL, [tmp_path / "a.parquet"], provider="azure", period="2026-10", tmp=tmp_path / "pq"
    )
    assert (got.row_count, got.focus_billed_total) == (want.row_count, want.focus_billed_total)


def test_wrong_headers_named(tmp_path, finops_home):
    path = tmp_path / "x.csv"
    path.write_text("Foo,Bar,Cost\n1,2,3\n")
    with pytest.raises(ConversionError, match="missing column.*date"):
        convert(AMORTIZED, [path], provider="azure", period="2026-10", tmp=tmp_path)


def test_bad_kind_refused():
    with pytest.raises(ValueError):
        AzureCostConverter("daily")


def test_focus_export_reconciles(tmp_path, finops_home):
    sample = gen.generate(layout="mca", kind="amortized", days=2)
    path = tmp_path / "part_0_0001.csv"
    path.write_bytes(gen.focus_csv_bytes(sample))
    res, rows = convert(FOCUS, [path], provider="azure", period="2026-10", tmp=tmp_path)
    assert res.focus_billed_total == res.raw_billed_total
    assert res.focus_billed_total.quantize(Decimal("0.01")) == sample.billed_total.quantize(Decimal("0.01"))
    assert res.focus_effective_total.quantize(Decimal("0.01")) == sample.effective_total.quantize(
        Decimal("0.01")
    )
    assert {r["charge_category"] for r in rows} == {"Usage", "Purchase"}
    assert next(r for r in rows if r["charge_class"] == "Correction")["x_provider"] == "azure"

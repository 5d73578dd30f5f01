"""GCP detailed export -> FOCUS: hand-checked rows, then a realistic month reconciled to the cent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finops.demo import gcp_generator as gen
from finops.focus.gcp_billing import CONVERTER
from finops.focus.schema import COLUMNS
from tests.fixtures.focus_convert import convert

T0 = datetime(2026, 10, 3, 10, tzinfo=UTC)


def _write(rows, tmp_path):
    path = tmp_path / "raw.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=gen.arrow_schema()), path)
    return path


def _usage(sku_id, sku_desc, cost, credits=(), **kw):
    return gen._row(
        service={"id": "6F81-5844-456A", "description": "Compute Engine"},
        sku={"id": sku_id, "description": sku_desc},
        usage_start_time=T0,
        usage_end_time=T0 + timedelta(hours=1),
        project={
            "id": "ml-training-prod",
            "number": "1",
            "name": "ML Training",
            "labels": [{"key": "team", "value": "ml"}, {"key": "env", "value": "prod"}],
            "ancestry_numbers": "/1/",
        },
        labels=[{"key": "team", "value": "research"}],
        system_labels=[{"key": "compute.googleapis.com/machine_spec", "value": "a2-highgpu-1g"}],
        location={
            "location": "us-central1",
            "country": "US",
            "region": "us-central1",
            "zone": "us-central1-a",
        },
        resource={
            "name": "trainer-0",
            "global_name": "//compute.googleapis.com/projects/ml-training-prod/zones/us-central1-a/instances/trainer-0",
        },
        export_time=T0 + timedelta(hours=5),
        cost=cost,
        cost_at_list=kw.pop("cost_at_list", cost),
        usage={"amount": 3600.0, "unit": "seconds", "amount_in_pricing_units": 1.0, "pricing_unit": "hour"},
        credits=list(credits),
        invoice={"month": "202610", "publisher_type": "GOOGLE"},
        price={
            "effective_price": Decimal("2.5"),
            "tier_start_amount": Decimal(0),
            "unit": "hour",
            "pricing_unit_quantity": Decimal(1),
        },
        **kw,
    )


def _credit(kind, amount, cid="c1"):
    return {"name": kind.title(), "amount": amount, "full_name": f"{kind} full", "id": cid, "type": kind}


@pytest.fixture(scope="module")
def hand_rows(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("gcp_hand")
    rows = [
        # 1: A100 hour, list 3.00, cost 2.50, SUD -0.50 and promo -1.00
        _usage(
            "A100",
            "Nvidia Tesla A100 GPU running in Americas",
            2.5,
            cost_at_list=3.0,
            credits=[_credit("SUSTAINED_USAGE_DISCOUNT", -0.5), _credit("PROMOTION", -1.0, "promo-1")],
        ),
        # 2: CUD-covered hour, fully offset
        _usage(
            "A100",
            "Nvidia Tesla A100 GPU running in Americas",
            2.5,
            credits=[_credit("COMMITTED_USAGE_DISCOUNT", -2.5, "CommittedUsageDiscount:abc")],
        ),
        # 3: spot
        _usage("L4SPOT", "Spot Preemptible Nvidia L4 GPU running in Americas", 0.22),
        # 4: tax (no project), 5: adjustment, 6: commitment fee
        gen._row(
            service={"id": "X", "description": "Invoice"},
            sku={"id": "TAX", "description": "Tax"},
            usage_start_time=T0,
            usage_end_time=T0 + timedelta(days=1),
            project=None,
            export_time=T0,
            cost=0.42,
            cost_type="tax",
            usage={"amount": 0.0, "unit": None, "amount_in_pricing_units": 0.0, "pricing_unit": None},
            invoice={"month": "202610", "publisher_type": "GOOGLE"},
        ),
        _usage(
            "A100",
            "Nvidia Tesla A100 GPU running in Americas",
            -1.25,
            cost_type="adjustment",
            adjustment_info={
                "id": "adj-1",
                "description": "Goodwill credit",
                "mode": "MANUAL_ADJUSTMENT",
                "type": "GENERAL_ADJUSTMENT",
            },
        ),
        _usage("CUDFEE", "Commitment v1: A100 GPU in Americas for 1 Year", 100.0),
    ]
    res, out = convert(CONVERTER, [_write(rows, tmp_path)], provider="gcp", period="2026-10", tmp=tmp_path)
    return res, out


def test_every_focus_column_present(hand_rows):
    _, out = hand_rows
    assert list(out[0]) == [c.snake for c in COLUMNS]


def test_discount_credits_net_into_the_row_promotions_become_credit_rows(hand_rows):
    _, out = hand_rows
    a100 = [r for r in out if r["sku_id"] == "A100" and r["charge_category"] == "Usage"]
    sud = next(r for r in a100 if r["commitment_discount_id"] is None)
    assert sud["billed_cost"] == Decimal("2.0")  # 2.50 - 0.50 SUD; the promo is NOT netted
    assert sud["effective_cost"] == Decimal("2.0")
    assert sud["list_cost"] == Decimal("3.0")
    assert sud["contracted_cost"] == Decimal("2.0")  # SUD is a non-commitment discount
    assert sud["pricing_category"] == "Standard"
    promo = [r for r in out if r["charge_category"] == "Credit"]
    assert len(promo) == 1
    p = promo[0]
    assert p["billed_cost"] == Decimal("-1.0") and p["list_cost"] == 0
    assert p["charge_description"] == "PROMOTION full"
    assert p["sub_account_id"] == "ml-training-prod" and p["service_name"] == "Compute Engine"
    assert p["x_charge_type"] == "credit:PROMOTION"
    assert p["consumed_quantity"] is None


def test_cud_usage(hand_rows):
    _, out = hand_rows
    cud = next(r for r in out if r["commitment_discount_id"] == "CommittedUsageDiscount:abc")
    assert cud["billed_cost"] == 0
    assert cud["contracted_cost"] == Decimal("2.5")  # commitment credits excluded from contracted cost
    assert cud["pricing_category"] == "Committed"
    assert cud["commitment_discount_category"] == "Usage"
    assert cud["commitment_discount_status"] == "Used"
    fee = next(r for r in out if r["sku_id"] == "CUDFEE")
    assert (fee["charge_category"], fee["charge_frequency"], fee["pricing_category"]) == (
        "Usage",
        "Recurring",
        "Committed",
    )


def test_spot_tax_adjustment(hand_rows):
    _, out = hand_rows
    spot = next(r for r in out if r["sku_id"] == "L4SPOT")
    assert spot["pricing_category"] == "Dynamic"
    tax = next(r for r in out if r["charge_category"] == "Tax")
    assert tax["billed_cost"] == Decimal("0.42") and tax["sub_account_id"] is None
    assert tax["consumed_quantity"] is None and tax["pricing_quantity"] is None
    assert tax["charge_frequency"] == "One-Time" and tax["service_category"] == "Other"
    adj = next(r for r in out if r["charge_category"] == "Adjustment")
    assert adj["charge_class"] == "Correction" and adj["billed_cost"] == Decimal("-1.25")
    assert adj["charge_description"] == "Goodwill credit"


def test_dimensions_tags_location_resource(hand_rows):
    import json

    _, out = hand_rows
    r = next(r for r in out if r["sku_id"] == "L4SPOT")
    # resource label 'team' overrides the project label; system label kept
    assert json.loads(r["tags"]) == {
        "team": "research",
        "env": "prod",
        "compute.googleapis.com/machine_spec": "a2-highgpu-1g",
    }
    assert r["region_id"] == "us-central1" and r["region_name"] == "Iowa"
    assert r["availability_zone"] == "us-central1-a"
    assert r["resource_type"] == "instances" and r["resource_name"] == "trainer-0"
    assert r["x_instance_type"] == "a2-highgpu-1g"
    assert r["provider_name"] == r["invoice_issuer_name"] == "Google Cloud"
    assert r["invoice_id"] == "01A2B3-C4D5E6-F7G8H9-202610" and r["service_subcategory"] == "Virtual Machines"
    # invoice.month is a Pacific month: Pacific midnights (PDT) as naive UTC
    assert r["billing_period_start"] == datetime(2026, 10, 1, 7) and r["billing_period_end"] == datetime(
        2026, 11, 1, 7
    )
    assert r["charge_period_start"] == datetime(2026, 10, 3, 10)
    assert r["consumed_quantity"] == 3600 and r["consumed_unit"] == "Seconds"
    assert r["pricing_quantity"] == 1 and r["pricing_unit"] == "Hours"
    assert (r["x_source"], r["x_billing_period"], r["x_provider"]) == ("src", "2026-10", "gcp")


def test_hand_rows_reconcile(hand_rows):
    res, _ = hand_rows
    # costs 2.5 + 2.5 + 0.22 + 0.42 - 1.25 + 100 ; credits -0.5 -1.0 -2.5
    assert res.raw_billed_total == Decimal("100.39") == res.focus_billed_total


@pytest.mark.parametrize("currency", ["USD", "EUR"])
def test_generated_month_reconciles_to_the_cent(tmp_path, finops_home, currency):
    sample = gen.generate(period="2026-10", days=2, currency=currency)
    path = sample.write_parquet(tmp_path / "raw.parquet")
    res, out = convert(CONVERTER, [path], provider="gcp", period="2026-10", tmp=tmp_path)
    assert res.raw_billed_total.quantize(Decimal("0.01")) == sample.billed_total.quantize(Decimal("0.01"))
    assert res.focus_billed_total == res.raw_billed_total
    assert res.currencies == [currency]
    assert sum(1 for r in out if r["charge_category"] == "Credit") == sample.promotion_credit_rows
    assert len(out) == len(sample.rows) + sample.promotion_credit_rows


def test_missing_columns_are_a_clear_error(tmp_path, finops_home):
    from finops.ingest import ConversionError

    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"cost": [1.0], "currency": ["USD"]}), path)
    with pytest.raises(ConversionError) as e:
        convert(CONVERTER, [path], provider="gcp", period="2026-10", tmp=tmp_path)
    assert "credits" in str(e.value)


@pytest.mark.parametrize(
    ("period", "first", "last"),
    [
        # Oct 1 00:00 PDT .. Oct 31 23:00 PDT = Nov 1 06:00 UTC (its invoice month is still October)
        ("2026-10", datetime(2026, 10, 1, 7, tzinfo=UTC), datetime(2026, 11, 1, 6, tzinfo=UTC)),
        # March starts in PST (08:00 UTC) and ends in PDT (07:00 UTC): a 743-hour month
        ("2026-03", datetime(2026, 3, 1, 8, tzinfo=UTC), datetime(2026, 4, 1, 6, tzinfo=UTC)),
    ],
)
def test_pacific_invoice_month_edges_validate(tmp_path, finops_home, period, first, last):
    """A month's first and last Pacific hours are in UTC outside the UTC month; they are still on
    this invoice and must load, not quarantine the whole month as 'ends after its billing period'."""
    from finops.quality.validate import validate_staging

    rows = []
    for t in (first, last):
        r = _usage("A100", "Nvidia Tesla A100 GPU running in Americas", 2.5)
        r.update(
            usage_start_time=t,
            usage_end_time=t + timedelta(hours=1),
            invoice={"month": period.replace("-", ""), "publisher_type": "GOOGLE"},
        )
        rows.append(r)
    res, _ = convert(CONVERTER, [_write(rows, tmp_path)], provider="gcp", period=period, tmp=tmp_path)
    report = validate_staging(
        [res.staging_file], source="src", billing_period=period, raw_billed_total=res.raw_billed_total
    )
    assert report.failures == [] and report.success


def test_credits_of_an_early_schema_without_type_are_netted(tmp_path, finops_home):
    """Credits recorded as {name, amount} only (the first export schema; a copied table keeps it):
    an untyped credit is a discount on its row, never dropped from BilledCost while the raw total
    counts it (that would quarantine the month)."""
    import duckdb

    rows = [_usage("A100", "Nvidia Tesla A100 GPU running in Americas", 2.5)]
    path = _write(rows, tmp_path)
    old = tmp_path / "old.parquet"
    duckdb.sql(
        f"COPY (SELECT * REPLACE ([{{'name': 'Sustained use discount', 'amount': -0.75}}] AS credits) "
        f"FROM read_parquet('{path}')) TO '{old}' (FORMAT parquet)"
    )
    res, out = convert(CONVERTER, [old], provider="gcp", period="2026-10", tmp=tmp_path)
    assert res.raw_billed_total == res.focus_billed_total == Decimal("1.75")
    assert [r["billed_cost"] for r in out] == [Decimal("1.75")]

"""Google Cloud data in FOCUS form, as it is shipped: Google's own FOCUS export
(gcp_billing_export_focus_*, its live 55-column schema) through the BigQuery emulator and the
extractor, and the FinOps Foundation-style FOCUS 1.2 sample for Google Cloud (CSV, Tags as JSON
text). Each loads to the cent, reloads unchanged, names its variant, counts what it derived,
and its FOCUS export passes focus-validator with nothing but InvoiceId-C-004-C."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from finops.config import GcpSource
from finops.demo import gcp_generator as gen
from finops.export import export_focus
from finops.focus.gcp_focus import CONVERTER
from finops.focus_validator import DEFAULT_VENV, run_focus_validator
from finops.ingest import RawBatch, load_batch
from finops.sources import gcp_bigquery

DATA = Path(__file__).resolve().parents[1] / "data" / "gcp"
SAMPLE = DATA / "focus_1.2_sample_gcp_excerpt.csv"
needs_validator = pytest.mark.skipif(
    not (DEFAULT_VENV / "bin" / "focus-validator").exists(),
    reason="focus-validator venv missing: run `make focus-validator`",
)


def _kv(items):
    return [{"Key": x["key"], "Value": x["value"]} for x in items or []]


def _native_rows(sample):
    """The generator's month as Google's FOCUS export holds it: the view's money (net of credits,
    x_Credits itemised), no Tags / ServiceCategory / ChargeFrequency / CommitmentDiscount* columns,
    labels and tags in their own x_ arrays, the project in x_Project, title-case enums."""
    out = []
    for r, v in zip(sample.rows, gen.focus_view_rows(sample), strict=True):
        proj = r["project"] or {}
        row = {
            k: val
            for k, val in v.items()
            if k not in ("Tags", "ServiceCategory", "CommitmentDiscountCategory", "CommitmentDiscountName")
        }
        row["ChargeCategory"] = row["ChargeCategory"].title()
        row["ChargeClass"] = row["ChargeClass"] and row["ChargeClass"].title()
        row["PricingCategory"] = row["PricingCategory"] and row["PricingCategory"].title()
        row["BillingPeriodEnd"] = datetime(2026, 6, 1, 7, tzinfo=UTC)  # Pacific midnight, end exclusive
        row["SubAccountId"], row["SubAccountName"] = proj.get("id"), proj.get("name")
        row["x_Project"] = proj and {
            "Id": proj["id"],
            "Number": proj["number"],
            "Name": proj["name"],
            "AncestryNumbers": proj["ancestry_numbers"],
            "Ancestors": [{"ResourceName": "organizations/5678", "DisplayName": "example.com"}],
        }
        row["x_Labels"], row["x_SystemLabels"] = _kv(r["labels"]), _kv(r["system_labels"])
        row["x_ProjectLabels"] = _kv(proj.get("labels"))
        row["x_Tags"] = (
            [{"Key": "cost-center", "Value": "cc-42", "x_Inherited": True, "x_Namespace": "5678"}]
            if proj
            else []
        )
        row["x_ExportTime"], row["x_Location"] = r["export_time"], r["location"]["location"]
        row["x_CurrencyConversionRate"] = r["currency_conversion_rate"]
        row["BillingAccountType"] = "Billing Account"
        out.append(row)
    return out


def _schema_fields(fields):
    from google.cloud import bigquery

    return [
        bigquery.SchemaField(f["name"], f["type"], mode=f["mode"], fields=_schema_fields(f.get("fields", [])))
        for f in fields
    ]


def _validator_failures(wh, period, out):
    assert export_focus(wh, period, out) > 0
    res = run_focus_validator(out)
    fails = [line for line in res.output.splitlines() if "FAIL" in line]
    status = {m.group(1): m.group(2) for m in re.finditer(r"(InvoiceId-C-\d{3}-\w): (PASS|FAIL)", res.output)}
    return res, fails, status


@pytest.fixture(scope="module")
def native_month():
    sample = gen.generate(period="2026-05", days=1, seed=5)
    rows = gen.GcpSample(_native_rows(sample), sample.invoice_month, Decimal(0), Decimal(0)).json_rows()
    return sample, rows


def _load_google_export(gcp_bq_client, gcp_conn, duckdb_wh, native_month):
    from google.cloud import bigquery

    sample, rows = native_month
    schema = json.loads((DATA / "gcp_billing_export_focus.schema.json").read_text())
    rows = [{k: v for k, v in r.items() if k in {f["name"] for f in schema}} for r in rows]
    gcp_bq_client.create_dataset("gcp_billing_immutable_demo_us", exists_ok=True)
    name = f"gcp_billing_export_focus_{uuid.uuid4().hex[:8]}"
    table = bigquery.Table(
        f"billing-proj.gcp_billing_immutable_demo_us.{name}", schema=_schema_fields(schema)
    )
    gcp_bq_client.create_table(table)
    assert gcp_bq_client.insert_rows_json(table, rows) == []

    src = GcpSource(
        name="gcp-focus-export",
        conn_id=gcp_conn,
        project="billing-proj",
        dataset="gcp_billing_immutable_demo_us",
        table=name,
        format="focus",
    )
    batch = gcp_bigquery.plan_batches(src, "2026-05")[0]
    raw_cols = [
        r[0] for r in duckdb.sql(f"DESCRIBE SELECT * FROM read_parquet('{batch.files[0]}')").fetchall()
    ]
    assert "Tags" not in raw_cols and "x_Labels" in raw_cols
    assert CONVERTER.variant(raw_cols) == "GCP FOCUS export (gcp_billing_export_focus_*)"
    entry = load_batch(duckdb_wh, batch, CONVERTER)
    assert entry.status == "loaded", entry.message
    total, n = duckdb_wh.query(
        "SELECT sum(billed_cost), count(*) FROM focus_costs WHERE x_source = ?", [src.name]
    )[0]
    assert total.quantize(Decimal("0.01")) == sample.billed_total.quantize(Decimal("0.01"))
    assert entry.raw_billed_total == entry.focus_billed_total == total
    assert n == len(rows) + sample.promotion_credit_rows
    assert load_batch(duckdb_wh, batch, CONVERTER).status == "unchanged"

    src_row = next(
        r
        for r in sample.rows
        if r["labels"]
        and r["project"]
        and r["service"]["description"] == "Compute Engine"
        and r["cost_type"] == "regular"
        and any(c["type"] == "COMMITTED_USAGE_DISCOUNT" for c in r["credits"])
    )
    got = duckdb_wh.query(
        "SELECT sub_account_id, sub_account_name, tags, service_category, service_subcategory, charge_frequency, "
        "pricing_unit, commitment_discount_category, commitment_discount_status FROM focus_costs "
        "WHERE x_source = ? AND charge_period_start = ? AND sku_id = ? AND charge_category = 'Usage' "
        "AND sub_account_id = ?",
        [
            src.name,
            src_row["usage_start_time"].replace(tzinfo=None),
            src_row["sku"]["id"],
            src_row["project"]["id"],
        ],
    )
    assert len(got) == 1  # the project, not the billing account the view calls SubAccountId
    _, name, tags, *rest = got[0]
    assert name == src_row["project"]["name"]
    want = {x["key"]: x["value"] for x in src_row["project"]["labels"]} | {"cost-center": "cc-42"}
    want |= {x["key"]: x["value"] for x in src_row["system_labels"] + src_row["labels"]}  # labels win
    assert json.loads(tags) == want
    assert tuple(rest) == ("Compute", "Virtual Machines", "Usage-Based", "Hours", "Usage", "Used")

    con = duckdb.connect()
    con.execute(f"CREATE VIEW raw AS {CONVERTER.reader_sql([str(batch.files[0])])}")
    counts = dict(con.execute(CONVERTER.derived_counts_sql("raw")).fetchall())
    for col in ("ServiceCategory", "ServiceSubcategory", "ChargeFrequency", "InvoiceId", "InvoiceIssuerName"):
        assert counts[col] == len(rows), col  # the export has none of these columns


def _load_focus_sample(duckdb_wh):
    """tests/data/gcp/focus_1.2_sample_gcp_excerpt.csv (see SOURCES.md) as published."""
    raw = duckdb.sql(
        f"SELECT CAST(BilledCost AS DECIMAL(38,10)) AS b FROM read_csv('{SAMPLE}', header = true, "
        "all_varchar = true)"
    ).fetchall()
    expected = sum((r[0] for r in raw), Decimal(0))
    batch = RawBatch(
        source="focus-sample-gcp",
        provider="gcp",
        billing_period="2026-05",
        files=[SAMPLE],
        fingerprint="sample-v1",
    )
    cols = [
        r[0] for r in duckdb.sql(f"DESCRIBE SELECT * FROM read_csv('{SAMPLE}', header = true)").fetchall()
    ]
    assert CONVERTER.variant(cols) == "FOCUS file (Google Cloud)"
    entry = load_batch(duckdb_wh, batch, CONVERTER)
    assert entry.status == "loaded", entry.message
    assert entry.raw_billed_total == entry.focus_billed_total == expected == Decimal("2470.579689")
    assert load_batch(duckdb_wh, batch, CONVERTER, force=True).status == "loaded"
    rows = duckdb_wh.query(
        "SELECT count(*), sum(billed_cost), sum(effective_cost), min(billing_period_start) "
        "FROM focus_costs WHERE x_source = 'focus-sample-gcp'"
    )[0]
    assert rows == (
        len(raw),
        expected,
        Decimal("670.4908370000"),
        datetime(2026, 5, 1),
    )  # replaced, not added
    tags = duckdb_wh.query("SELECT tags FROM focus_costs WHERE x_source = 'focus-sample-gcp' LIMIT 1")[0][0]
    assert set(json.loads(tags)) == {"environment", "cost-center", "owner"}


@pytest.mark.slow
@needs_validator
def test_google_focus_shapes_load_and_validate(gcp_bq_client, gcp_conn, duckdb_wh, native_month, tmp_path):
    """Both shapes in one May 2026 warehouse; one focus-validator run over its FOCUS export."""
    _load_google_export(gcp_bq_client, gcp_conn, duckdb_wh, native_month)
    _load_focus_sample(duckdb_wh)
    assert {r[0] for r in duckdb_wh.query("SELECT DISTINCT x_source FROM focus_costs")} == {
        "gcp-focus-export",
        "focus-sample-gcp",
    }
    res, fails, status = _validator_failures(duckdb_wh, "2026-05", tmp_path / "focus.parquet")
    assert res.failed == 1 and "InvoiceId-C-004-C" in fails[0], "\n".join(fails)
    assert status["InvoiceId-C-003-C"] == status["InvoiceId-C-005-C"] == "PASS"

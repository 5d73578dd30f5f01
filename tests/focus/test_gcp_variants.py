"""Every GCP usage cost table as Google ships it, through the BigQuery emulator, the extractor and
the spine: the standard table (gcp_billing_export_v1_*), the detailed table of today
(gcp_billing_export_resource_v1_*: resource, price.*, subscription, consumption_model), and a
detailed table of an older schema version (no tags, project.ancestors, price.list_price ...).

Schemas: tests/data/gcp/*.schema.json, transcribed from Google's schema reference and a live
table's schema (tests/data/gcp/SOURCES.md). Rows: the demo generator's month, projected onto
each schema, with the nested / repeated shapes the real tables carry (tags with inheritance,
project ancestors) and every credit type Google documents. Each loads to the cent, reloads
unchanged, and names its variant and its derived columns."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from finops.config import GcpSource
from finops.demo import gcp_generator as gen
from finops.export import export_focus
from finops.focus_validator import DEFAULT_VENV, run_focus_validator
from finops.ingest import RawBatch, load_batch
from finops.sources import gcp_bigquery

DATA = Path(__file__).resolve().parents[1] / "data" / "gcp"
CREDIT_TYPES = (
    "SUSTAINED_USAGE_DISCOUNT",
    "COMMITTED_USAGE_DISCOUNT",
    "COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE",
    "FREE_TIER",
    "PROMOTION",
    "DISCOUNT",
    "RESELLER_MARGIN",
    "SUBSCRIPTION_BENEFIT",
)


def _schema_fields(fields):
    from google.cloud import bigquery

    return [
        bigquery.SchemaField(
            f["name"], f["type"], mode=f.get("mode", "NULLABLE"), fields=_schema_fields(f.get("fields", []))
        )
        for f in fields
    ]


def _project(value, fields):
    """A row (or nested value) reduced to the fields a schema has: what that table would hold."""
    if value is None:
        return None
    out = {}
    for f in fields:
        v = value.get(f["name"])
        if f["type"] == "RECORD" and v is not None:
            v = (
                [_project(x, f["fields"]) for x in v]
                if f.get("mode") == "REPEATED"
                else _project(v, f["fields"])
            )
        if v is not None:
            out[f["name"]] = v
    return out


def _decorate(rows):
    """Shapes the generator does not make: tags (one inherited from a folder), project ancestors,
    and the credit types beyond SUD / CUD / free tier / promotion, on a few rows each."""
    extra = ["COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE", "DISCOUNT", "RESELLER_MARGIN", "SUBSCRIPTION_BENEFIT"]
    usage = [r for r in rows if r["cost_type"] == "regular" and r["cost"] > 0.01]
    for i, r in enumerate(usage[: 4 * len(extra)]):
        kind = extra[i % len(extra)]
        r["credits"] = [
            *r["credits"],
            {
                "name": kind.title(),
                "amount": -round(r["cost"] * 0.05, 6),
                "full_name": f"{kind.title()} (test)",
                "id": f"{kind}:{i}",
                "type": kind,
            },
        ]
    for i, r in enumerate(rows):
        if r.get("project"):
            r["project"] = {
                **r["project"],
                "ancestors": [
                    {
                        "resource_name": f"projects/{r['project']['number']}",
                        "display_name": r["project"]["id"],
                    },
                    {"resource_name": "folders/1234", "display_name": "ml"},
                    {"resource_name": "organizations/5678", "display_name": "example.com"},
                ],
            }
            if i % 3 == 0:
                r["tags"] = [
                    {"key": "env", "value": "prod", "inherited": True, "namespace": "5678"},
                    {"key": "cost-center", "value": "cc-42", "inherited": False, "namespace": "5678"},
                ]
    return rows


def _expected(rows) -> tuple[Decimal, int]:
    billed = sum(
        (
            Decimal(repr(r["cost"]))
            + sum((Decimal(repr(c["amount"])) for c in r.get("credits") or []), Decimal(0))
            for r in rows
        ),
        Decimal(0),
    )
    promos = sum(1 for r in rows for c in r.get("credits") or [] if c.get("type") == "PROMOTION")
    return billed, promos


@pytest.fixture(scope="module")
def month():
    sample = gen.generate(period="2026-10", days=1, seed=3)
    rows = _decorate(sample.rows)
    return gen.GcpSample(rows, sample.invoice_month, Decimal(0), Decimal(0)).json_rows()


VARIANTS = [
    # (schema file, table prefix, source format, variant name the converter reports)
    (
        "gcp_billing_export_v1.schema.json",
        "gcp_billing_export_v1",
        "standard",
        "GCP standard usage cost export",
    ),
    (
        "gcp_billing_export_resource_v1.schema.json",
        "gcp_billing_export_resource_v1",
        "detailed",
        "GCP detailed usage cost export",
    ),
    (
        None,
        "gcp_billing_export_resource_v1",
        "detailed",
        "GCP detailed usage cost export",
    ),  # older schema version
]


@pytest.mark.parametrize(
    ("schema_file", "prefix", "fmt", "variant"),
    VARIANTS,
    ids=["standard", "detailed", "detailed-older-schema"],
)
def test_variant_loads_to_the_cent(
    gcp_bq_client, gcp_conn, duckdb_wh, month, schema_file, prefix, fmt, variant
):
    from google.cloud import bigquery

    schema = json.loads((DATA / schema_file).read_text()) if schema_file else gen.BQ_SCHEMA
    rows = [_project(r, schema) for r in month]
    gcp_bq_client.create_dataset("billing", exists_ok=True)
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    table = bigquery.Table(f"billing-proj.billing.{name}", schema=_schema_fields(schema))
    gcp_bq_client.create_table(table)
    assert gcp_bq_client.insert_rows_json(table, rows) == []

    src = GcpSource(
        name=f"gcp-{fmt}", conn_id=gcp_conn, project="billing-proj", dataset="billing", table=name, format=fmt
    )
    batch = gcp_bigquery.plan_batches(src, "2026-10")[0]
    conv = gcp_bigquery.converter_for(src)
    raw_cols = [r[0] for r in duckdb.sql(f"DESCRIBE {conv.reader_sql([str(batch.files[0])])}").fetchall()]
    assert conv.variant(raw_cols) == variant
    assert ("resource" in raw_cols) is (fmt == "detailed")  # the standard table has no resource columns

    entry = load_batch(duckdb_wh, batch, conv)
    assert entry.status == "loaded", entry.message
    billed, promos = _expected(rows)
    total, n = duckdb_wh.query(
        "SELECT sum(billed_cost), count(*) FROM focus_costs WHERE x_source = ?", [src.name]
    )[0]
    assert total.quantize(Decimal("0.01")) == billed.quantize(Decimal("0.01"))
    assert entry.raw_billed_total == entry.focus_billed_total == total
    assert n == len(rows) + promos
    # every credit type arrived and is netted (promotions as their own rows)
    types = {c["type"] for r in rows for c in r.get("credits") or []}
    assert types == set(CREDIT_TYPES)
    assert load_batch(duckdb_wh, batch, conv).status == "unchanged"
    assert duckdb_wh.query(
        "SELECT sum(billed_cost), count(*) FROM focus_costs WHERE x_source = ?", [src.name]
    )[0] == (total, n)

    # tags with their shapes: inherited organisation tags merge with labels
    tagged = duckdb_wh.query(
        "SELECT tags FROM focus_costs WHERE x_source = ? AND tags LIKE '%cost-center%'", [src.name]
    )
    assert tagged if schema_file else not tagged  # the older schema has no tags column
    if tagged:
        assert json.loads(tagged[0][0])["cost-center"] == "cc-42"
    # what was derived, counted per FOCUS column
    con = duckdb.connect()
    con.execute(f"CREATE VIEW raw_src AS {conv.reader_sql([str(batch.files[0])])}")
    cols = {r[0]: r[1] for r in con.execute("DESCRIBE raw_src").fetchall()}
    con.execute(f"CREATE VIEW raw AS {conv.normalize_sql('raw_src', cols)}")
    counts = dict(con.execute(conv.derived_counts_sql("raw")).fetchall())
    assert counts == {
        c: len(rows) for c in ("ChargeDescription", "ChargeFrequency", "InvoiceId", "ServiceSubcategory")
    }


def _arrow_schema(fields):
    import pyarrow as pa

    def conv(f):
        if f["type"] == "RECORD":
            typ = pa.struct([conv(c) for c in f["fields"]])
        else:
            typ = {
                "STRING": pa.string(),
                "FLOAT": pa.float64(),
                "TIMESTAMP": pa.timestamp("us", tz="UTC"),
                "NUMERIC": pa.decimal128(38, 9),
                "BOOLEAN": pa.bool_(),
            }[f["type"]]
        return pa.field(f["name"], pa.list_(typ) if f.get("mode") == "REPEATED" else typ)

    return pa.schema([conv(f) for f in fields])


@pytest.mark.slow
@pytest.mark.skipif(
    not (DEFAULT_VENV / "bin" / "focus-validator").exists(),
    reason="focus-validator venv missing: run `make focus-validator`",
)
def test_standard_and_detailed_pass_focus_validator(duckdb_wh, tmp_path):
    """The standard and the detailed table of one month, loaded as two sources and exported
    together: focus-validator finds nothing but the InvoiceId OR branch."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sample = gen.generate(period="2026-10", days=1, seed=4)
    rows = _decorate(sample.rows)
    for fmt, name in (("standard", "gcp_billing_export_v1"), ("detailed", "gcp_billing_export_resource_v1")):
        schema = json.loads((DATA / f"{name}.schema.json").read_text())
        path = tmp_path / f"{fmt}.parquet"
        table = pa.Table.from_pylist([_project(r, schema) for r in rows], schema=_arrow_schema(schema))
        pq.write_table(table, path)
        src = GcpSource(name=f"gcp-{fmt}", project="p", dataset="d", table=name, format=fmt)
        batch = RawBatch(
            source=src.name, provider="gcp", billing_period="2026-10", files=[path], fingerprint=fmt
        )
        entry = load_batch(duckdb_wh, batch, gcp_bigquery.converter_for(src))
        assert entry.status == "loaded", entry.message
        assert entry.raw_billed_total.quantize(Decimal("0.01")) == _expected(rows)[0].quantize(
            Decimal("0.01")
        )
    out = tmp_path / "focus.parquet"
    assert export_focus(duckdb_wh, "2026-10", out) > 0
    res = run_focus_validator(out)
    fails = [line for line in res.output.splitlines() if "FAIL" in line]
    assert res.failed == 1 and "InvoiceId-C-004-C" in fails[0], "\n".join(fails)
    units = {
        r[0]
        for r in duckdb_wh.query(
            "SELECT DISTINCT pricing_unit FROM focus_costs WHERE pricing_unit IS NOT NULL"
        )
    }
    assert units <= {"Hours", "GiB-Months", "TiB"}, units

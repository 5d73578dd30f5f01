"""validate_staging on hand-made FOCUS staging parquet: real GX (SQL engine) over DuckDB.

GX is slow to import and each validation builds a context, so the broken cases share one
batch (module-scoped) in which every row breaks exactly one rule: the report must then list
exactly one failure per rule, naming its column, with a count of 1 row.
"""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finops.focus.schema import arrow_schema
from finops.quality import ValidationReport, validate_staging
from tests.fixtures.quality import PERIOD, q_rows, q_write

HOSTILE = [
    "'; drop table x;--",
    "quote \" and ' both",
    "new\nline\r\n",
    "x" * 10_000,
    "emoji 🚀💸",
    "=cmd|' /C calc'!A0",
    "{batch} :param %s $1",
]


def _validate(path, total, **kw):
    kw.setdefault("source", "main-payer")
    kw.setdefault("billing_period", PERIOD)
    return validate_staging([path] if not isinstance(path, list) else path, raw_billed_total=total, **kw)


def test_valid_batch_passes(q_staging):
    path, total = q_staging()
    rep = _validate(path, total)
    assert rep.failures == []
    assert rep.success is True
    assert rep.stats["row_count"] == 6
    assert rep.stats["focus_billed_total"] == total == Decimal("135.0000000014")
    assert isinstance(rep.stats["focus_effective_total"], Decimal)
    assert rep.stats["currencies"] == {"USD": 6}
    assert rep.stats["rules_checked"] > 30
    gx = rep.gx_result
    assert gx["success"] is True and len(gx["results"]) == rep.stats["rules_checked"]
    types = {r["expectation_config"]["type"] for r in gx["results"]}
    assert {
        "expect_column_values_to_not_be_null",
        "expect_column_values_to_be_in_set",
        "unexpected_rows_expectation",
    } <= types
    json.dumps(rep.to_json_dict())  # JSON-serialisable, Decimals as strings
    assert rep.to_json_dict()["stats"]["focus_billed_total"] == "135.0000000014"


def _break(rows):
    """Row i breaks rule i only. Returns the exact failure list expected."""
    b = [
        ("charge_category", "Bogus", "charge_category: values outside allowed set: ['Bogus'] (1 row)"),
        ("billing_currency", "XYZ", "billing_currency: not an ISO 4217 currency code: ['XYZ'] (1 row)"),
        ("pricing_currency", "usd", "pricing_currency: not an ISO 4217 currency code: ['usd'] (1 row)"),
        ("billed_cost", None, "billed_cost: null values in a not-null column (1 row)"),
        ("effective_cost", None, "effective_cost: null values in a not-null column (1 row)"),
        ("tags", '["not", "an object"]', "tags: not a valid JSON object (1 row)"),
        ("sku_price_details", '{"cut": ', "sku_price_details: not a valid JSON object (1 row)"),
        ("x_source", "other-source", "x_source: rows of another source: ['other-source'] (1 row)"),
        (
            "charge_frequency",
            "Sometimes",
            "charge_frequency: values outside allowed set: ['Sometimes'] (1 row)",
        ),
        (
            "x_billing_period",
            "2026-02",
            "x_billing_period: rows of another billing period: ['2026-02'] (1 row)",
        ),
        (
            "commitment_discount_status",
            "Partially",
            "commitment_discount_status: values outside allowed set: ['Partially'] (1 row)",
        ),
        (
            "service_category",
            "Storage",
            "service_subcategory: subcategory does not belong to service_category: [('Virtual Machines', 'Storage')] (1 row)",
        ),
        (
            "billing_period_start",
            datetime(2026, 2, 1),
            "billing_period_start: billing period start not in batch period 2026-03: ['2026-02-01T00:00:00'] (1 row)",
        ),
    ]
    for i, (col, value, _) in enumerate(b):
        rows[i][col] = value
    expected = [m for *_, m in b]
    i = len(b)
    rows[i]["charge_period_start"], rows[i]["charge_period_end"] = (
        datetime(2026, 2, 28, 23),
        datetime(2026, 3, 1),
    )
    expected.append(
        "charge_period_start: charge period starts before its billing period: "
        "[('2026-02-28T23:00:00', '2026-03-01T00:00:00')] (1 row)"
    )
    rows[i + 1]["charge_period_start"], rows[i + 1]["charge_period_end"] = (
        datetime(2026, 3, 31, 23),
        datetime(2026, 4, 1, 1),
    )
    expected.append(  # built-in pair expectations show (column_A, column_B)
        "charge_period_end: charge period ends after its billing period: "
        "[('2026-04-01T00:00:00', '2026-04-01T01:00:00')] (1 row)"
    )
    rows[i + 2]["charge_period_end"] = rows[i + 2]["charge_period_start"]
    rows[i + 3]["billing_period_end"] = rows[i + 3]["billing_period_start"]
    expected.append(
        "billing_period_end: billing period end not after its start: "
        "[('2026-03-01T00:00:00', '2026-03-01T00:00:00')] (1 row)"
    )
    # an empty billing period has no room for a charge period: this row also breaks start < end
    rows[i + 3]["charge_period_start"], rows[i + 3]["charge_period_end"] = (
        datetime(2026, 3, 1),
        datetime(2026, 3, 1),
    )
    expected.append(
        "charge_period_start: charge period start not before its end: "
        "[('2026-03-16T00:00:00', '2026-03-16T00:00:00'), ('2026-03-01T00:00:00', '2026-03-01T00:00:00')] (2 rows)"
    )
    return expected


@pytest.fixture(scope="module")
def q_broken(tmp_path_factory):
    rows = q_rows(20)
    expected = _break(rows)
    path = tmp_path_factory.mktemp("broken") / "staging.parquet"
    total = q_write(path, rows, strict=False)
    rep = _validate(path, total + Decimal("0.01"))  # and one cent off the raw export
    expected.append("billed_cost: reconciliation failed")
    return rep, expected, path


def test_each_rule_fails_on_its_own_broken_case(q_broken):
    rep, expected, _ = q_broken
    assert rep.success is False
    recon = [f for f in rep.failures if f.startswith("billed_cost: reconciliation failed")]
    assert len(recon) == 1 and "(difference -0.01)" in recon[0]
    got = sorted(f for f in rep.failures if f not in recon)
    want = sorted(e for e in expected if not e.startswith("billed_cost: reconciliation failed"))
    assert got == want


def test_gx_result_names_the_failed_expectations(q_broken):
    rep, _, _ = q_broken
    gx = rep.gx_result
    assert gx["success"] is False
    failed = {r["expectation_config"]["meta"]["rule"] for r in gx["results"] if not r["success"]}
    assert {
        "charge_category:allowed_values",
        "billed_cost:not_null",
        "tags:json_object",
        "billing_currency:iso_4217",
    } <= failed
    cc = next(
        r
        for r in gx["results"]
        if r["expectation_config"]["meta"]["rule"] == "charge_category:allowed_values"
    )
    assert cc["result"]["unexpected_count"] == 1 and cc["result"]["partial_unexpected_list"] == ["Bogus"]
    json.dumps(gx)


def test_exactly_equal_total_passes_and_cent_off_fails(q_staging):
    path, total = q_staging()
    assert _validate(path, total + Decimal("0.004")).success  # same cent after rounding
    rep = _validate(path, total - Decimal("0.01"))
    assert rep.failures == [
        f"billed_cost: reconciliation failed: FOCUS total {total.quantize(Decimal('0.01'))} != raw export total "
        f"{(total - Decimal('0.01')).quantize(Decimal('0.01'))} (difference 0.01)"
    ]
    with pytest.raises(TypeError):
        _validate(path, float(total))


def test_non_usd_currency_over_two_files_passes(q_staging):
    a, b = q_rows(3), q_rows(4)
    for r in a + b:
        r["billing_currency"] = r["pricing_currency"] = "EUR"
    (p1, t1), (p2, t2) = q_staging(a, "part-0.parquet"), q_staging(b, "part-1.parquet")
    rep = _validate([p1, p2], t1 + t2)
    assert rep.failures == [] and rep.success
    assert rep.stats["currencies"] == {"EUR": 7} and rep.stats["row_count"] == 7


def test_hostile_strings_are_inert(q_staging):
    rows = q_rows(len(HOSTILE))
    for r, h in zip(rows, HOSTILE, strict=True):
        r["tags"] = json.dumps({h: h, "team": h})
        r["resource_name"] = r["resource_id"] = r["charge_description"] = h
        r["x_source"] = HOSTILE[0]
    rows[1]["charge_category"] = HOSTILE[2]  # invalid value: quoted, not interpreted
    rows[2]["billing_currency"] = HOSTILE[3]
    path, total = q_staging(rows)
    before = path.read_bytes()
    rep = _validate(path, total, source=HOSTILE[0])
    assert len(rep.failures) == 2
    cat = next(f for f in rep.failures if f.startswith("charge_category:"))
    assert cat == "charge_category: values outside allowed set: ['new\\nline\\r\\n'] (1 row)"
    cur = next(f for f in rep.failures if f.startswith("billing_currency:"))
    assert "\n" not in cur and len(cur) < 300 and cur.endswith("(1 row)")
    assert path.read_bytes() == before
    json.dumps(rep.to_json_dict())


def test_schema_problems_name_the_column(q_staging, tmp_path):
    schema = arrow_schema()
    i = schema.get_field_index("billed_cost")
    schema = schema.set(i, pa.field("billed_cost", pa.float64()))
    schema = schema.remove(schema.get_field_index("effective_cost")).append(pa.field("surprise", pa.string()))
    rows = q_rows()
    for r in rows:
        r["billed_cost"] = 1.5
        r.pop("effective_cost")
        r["surprise"] = "x"
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    rep = _validate(path, Decimal("9"))
    assert not rep.success
    assert "effective_cost: column missing from bad.parquet" in rep.failures
    assert "billed_cost: expected money type, got double in bad.parquet" in rep.failures
    assert "'surprise': unexpected column in bad.parquet" in rep.failures
    assert "billed_cost: reconciliation skipped: money / period columns unusable" in rep.failures
    assert rep.gx_result["success"] is True  # GX still checked every other column: all fine


def test_unreadable_staging_fails_without_raising(tmp_path):
    bad = tmp_path / "truncated.parquet"
    bad.write_bytes(b"PAR1 not really")
    rep = _validate(bad, Decimal("0"))
    assert rep.success is False and rep.failures[0].startswith("staging: cannot read truncated.parquet")
    assert _validate([], Decimal("0")).failures == ["staging: no staging files"]
    assert isinstance(rep, ValidationReport)


def test_failed_batch_quarantines_with_its_gx_result(q_broken, finops_home):
    from finops.quality import quarantine_batch

    rep, _, path = q_broken
    folder = quarantine_batch(
        source="main-payer", billing_period=PERIOD, load_id="L9", raw_files=[path], report=rep
    )
    assert (folder / "staging.parquet").read_bytes() == path.read_bytes()
    stored = json.loads((folder / "report.json").read_text())
    assert stored["validation"]["failures"] == rep.failures
    gx = json.loads((folder / "gx_result.json").read_text())
    assert gx["success"] is False and len(gx["results"]) == len(rep.gx_result["results"])


def test_money_moved_between_currencies_fails_though_the_sum_matches(q_staging):
    rows = q_rows(4)
    for r in rows[:2]:
        r["billing_currency"] = r["pricing_currency"] = "EUR"
    path, total = q_staging(rows)
    rep = _validate(path, total)
    by = rep.stats["billed_by_currency"]
    assert set(by) == {"EUR", "USD"} and sum(by.values()) == total
    assert _validate(path, total, raw_by_currency=dict(by)).failures == []
    one = Decimal("1")
    shifted = {"EUR": by["EUR"] - one, "USD": by["USD"] + one}  # the export's view: same sum
    failures = _validate(path, total, raw_by_currency=shifted).failures
    assert [f.split(":")[1].strip() for f in failures] == [
        "reconciliation failed in 'EUR'",
        "reconciliation failed in 'USD'",
    ]

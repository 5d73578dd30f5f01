"""Values survive the warehouse round trip exactly, on both engines: money to the last decimal,
hostile strings byte-identical, NULL vs '' kept apart, timestamps to the microsecond, JSON tags queryable."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal, localcontext

import pyarrow as pa
import pytest

from finops.warehouse.dialect import json_get, json_has_key
from tests.fixtures.focus_rows import focus_row, write_focus

PART = {"x_source": "s", "x_billing_period": "2024-05"}

HOSTILE = [
    'O\'Brien "quoted"',
    "'; drop table focus_costs;--",
    "Robert'); DROP TABLE load_log; --",
    "line1\nline2\r\nline3\r",
    "tab\there\tand\\backslash\\\\double",
    "\\.",
    "x\n\\.\ny",
    "\\N",
    "NULL",
    "=cmd|' /C calc'!A0",
    "+SUM(A1:A2)",
    "@import",
    "emoji 🚀🔥 and 中文 and é́",
    "%s %(x)s ? $1 {0}",
    ",;|",
    " leading and trailing ",
    "k" * 10_000,
]


def _load(wh, tmp_path, rows):
    f = write_focus(tmp_path / "rt.parquet", rows)
    return wh.replace_partition("focus_costs", PART, [f])


def test_decimal_totals_are_exact(any_wh, tmp_path):
    amounts = [
        Decimal("0.1"),
        Decimal("0.2"),
        Decimal("0.0000000001"),
        Decimal("-0.3"),
        Decimal("1234567.8912345678"),
        Decimal("0.0000000009"),
        Decimal("99999999999999999999.9999999999"),
        Decimal("-0.0000000010"),
    ]
    amounts += [Decimal("0.0133333333")] * 3000  # 10-decimal CUR-style amounts
    rows = [
        focus_row("s", "2024-05", i, billed_cost=a, effective_cost=a.copy_negate())
        for i, a in enumerate(amounts)
    ]
    assert _load(any_wh, tmp_path, rows) == len(rows)
    with localcontext() as ctx:
        ctx.prec = 80  # the default 28 digits would round the reference total itself
        want = sum(amounts, Decimal(0))
    total, neg, n = any_wh.query("SELECT sum(billed_cost), sum(effective_cost), count(*) FROM focus_costs")[0]
    assert Decimal(total) == want and Decimal(neg) == want.copy_negate() and n == len(rows)
    # Cent rounding happens on the exact total, never on floats.
    assert round(Decimal(total), 2) == round(want, 2)
    t = any_wh.query_arrow("SELECT billed_cost, sum(billed_cost) OVER () AS total FROM focus_costs")
    assert t.schema.field("billed_cost").type == pa.decimal128(38, 10)
    assert pa.types.is_decimal(t.schema.field("total").type)
    assert t.column("total")[0].as_py() == want
    assert sorted(t.column("billed_cost").to_pylist()) == sorted(amounts)


def test_hostile_strings_round_trip_byte_identical(any_wh, tmp_path):
    rows = [
        focus_row(
            "s",
            "2024-05",
            i,
            charge_description=s,
            resource_id=f"r{i}",
            resource_name=s,
            tags=json.dumps({"team": s, s[:200]: "key-is-hostile"}),
        )
        for i, s in enumerate(HOSTILE)
    ]
    _load(any_wh, tmp_path, rows)
    got = dict(any_wh.query("SELECT resource_id, charge_description FROM focus_costs"))
    for i, s in enumerate(HOSTILE):
        assert got[f"r{i}"] == s, f"string {i} changed"
        assert got[f"r{i}"].encode() == s.encode()
    t = any_wh.query_arrow("SELECT resource_id, resource_name FROM focus_costs ORDER BY resource_id")
    assert dict(zip(t.column(0).to_pylist(), t.column(1).to_pylist(), strict=True)) == {
        f"r{i}": s for i, s in enumerate(HOSTILE)
    }
    # JSON values and keys are readable through the dialect helper, key bound as a parameter.
    team_sql, team_p = json_get(any_wh.dialect, "tags", "team")
    got_tags = dict(any_wh.query(f"SELECT resource_id, {team_sql} FROM focus_costs", team_p))
    assert got_tags == {f"r{i}": s for i, s in enumerate(HOSTILE)}
    for i, s in enumerate(HOSTILE):
        key_sql, key_p = json_get(any_wh.dialect, "tags", s[:200])
        assert any_wh.query(
            f"SELECT {key_sql} FROM focus_costs WHERE resource_id = ?", [*key_p, f"r{i}"]
        ) == [("key-is-hostile",)]


def test_null_and_empty_string_stay_distinct(any_wh, tmp_path):
    rows = [
        focus_row("s", "2024-05", 0, resource_id="null", charge_description=None, tags=None),
        focus_row("s", "2024-05", 1, resource_id="empty", charge_description="", tags="{}"),
    ]
    _load(any_wh, tmp_path, rows)
    got = {r[0]: r[1:] for r in any_wh.query("SELECT resource_id, charge_description, tags FROM focus_costs")}
    assert got["null"] == (None, None)
    assert got["empty"][0] == ""
    assert json.loads(got["empty"][1]) == {}


def test_json_tags_queryable_and_grouped(any_wh, tmp_path):
    rows = [
        focus_row(
            "s",
            "2024-05",
            i,
            billed_cost=Decimal("0.1"),
            tags=json.dumps({"team": ["ml", "web"][i % 2], "env": "prod"} if i < 9 else {}),
        )
        for i in range(10)
    ]
    _load(any_wh, tmp_path, rows)
    team_sql, team_p = json_get(any_wh.dialect, "tags", "team")
    res = any_wh.query(
        f"SELECT {team_sql} AS team, sum(billed_cost) FROM focus_costs GROUP BY 1 ORDER BY 1 NULLS LAST",
        team_p,
    )
    assert [(r[0], Decimal(r[1])) for r in res] == [
        ("ml", Decimal("0.5")),
        ("web", Decimal("0.4")),
        (None, Decimal("0.1")),
    ]
    has_sql, has_p = json_has_key(any_wh.dialect, "tags", "env")
    assert any_wh.query(f"SELECT count(*) FROM focus_costs WHERE {has_sql}", has_p) == [(9,)]
    # Stored JSON reads back as JSON text on both engines.
    (txt,) = any_wh.query("SELECT tags FROM focus_costs WHERE resource_id = ?", ["i-00000000"])[0]
    assert json.loads(txt) == {"team": "ml", "env": "prod"}


def test_timestamps_keep_microseconds_and_utc(any_wh):
    any_wh.execute("CREATE TABLE ts_probe (k VARCHAR, seen TIMESTAMP)")
    aware = pa.array([datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)], pa.timestamp("us", tz="UTC"))
    naive = pa.array([datetime(2024, 12, 31, 23, 59, 59, 999999)], pa.timestamp("us"))
    any_wh.insert_arrow("ts_probe", pa.table({"k": ["aware"], "seen": aware}))
    any_wh.insert_arrow("ts_probe", pa.table({"k": ["naive"], "seen": naive}))
    got = dict(any_wh.query("SELECT k, seen FROM ts_probe"))
    assert got == {
        "aware": datetime(2024, 5, 1, 12, 0, 0, 123456),
        "naive": datetime(2024, 12, 31, 23, 59, 59, 999999),
    }
    t = any_wh.query_arrow("SELECT seen FROM ts_probe ORDER BY k")
    assert t.schema.field("seen").type == pa.timestamp("us")


@pytest.mark.parametrize("value", ["plain", "it's", "50%", "?", "%s"])
def test_bound_parameters_with_percent_and_qmarks(any_wh, value):
    assert any_wh.query("SELECT ?, '%?%', 7 % 3", [value]) == [(value, "%?%", 1)]

"""The binary COPY path stores exactly what the CSV COPY path stores: same rows, same decimals to
the last digit (and the same scale), same NULLs, strings byte-identical, same timestamps, same
JSON; and it refuses what the CSV path refuses."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finops.focus.schema import arrow_schema
from finops.warehouse import pg_binary
from finops.warehouse.base import DataRefused
from finops.warehouse.postgres_wh import PostgresWarehouse
from tests.fixtures.focus_rows import focus_row, write_focus
from tests.fixtures.postgres import _drop_schema, new_schema_name

PART = {"x_source": "s", "x_billing_period": "2024-05"}

MONEY = [
    Decimal("0"),
    Decimal("0.0000000001"),
    Decimal("-0.0000000001"),
    Decimal("0.01"),
    Decimal("-0.01"),
    Decimal("1234567.8912345678"),
    Decimal("-987654321.0000000009"),
    Decimal("18446744073.7095516159"),  # unscaled 2**64 - 1: the widest value of the 64-bit path
    Decimal("18446744073.7095516160"),  # unscaled 2**64: the first of the 128-bit path
    Decimal("12345678901234567890.1234567890"),
    Decimal("9999999999999999999999999999.9999999999"),  # NUMERIC(38,10)'s largest
    Decimal("-9999999999999999999999999999.9999999999"),
    Decimal("100000000"),
    Decimal("-10000.0000100000"),
]
QUANTITY = [
    Decimal("1.000000000001"),
    Decimal("-0.000000000001"),
    Decimal("99999999999999999999999999.999999999999"),
    Decimal("-12345678901234567890.123456789012"),
    Decimal("0.5"),
]
HOSTILE = [
    'O\'Brien "quoted"',
    "'; drop table focus_costs;--",
    "line1\nline2\r\nline3\r",
    "tab\there\\backslash\\\\",
    "\\.",
    "x\n\\.\ny",
    "\\N",
    "NULL",
    "",
    "=cmd|' /C calc'!A0",
    "emoji 🚀🔥 中文 é́ עברית",
    "%s %(x)s ? $1 {0}",
    ",;|",
    "k" * 5000,
]
STAMPS = [
    datetime(2024, 5, 1),
    datetime(1999, 12, 31, 23, 59, 59, 999999),  # before PostgreSQL's 2000-01-01 epoch
    datetime(1970, 1, 1),
    datetime(1900, 2, 28, 12, 0, 0, 1),
    datetime(9999, 12, 31, 23, 59, 59, 999999),
]


def _rows(money: list[Decimal] = MONEY, quantity: list[Decimal] = QUANTITY, first: int = 0) -> list[dict]:
    rows = []
    n = max(len(money), len(quantity), len(HOSTILE), len(STAMPS)) * 2
    for i in range(first, first + n):
        s = HOSTILE[i % len(HOSTILE)]
        rows.append(
            focus_row(
                "s",
                "2024-05",
                i,
                billed_cost=money[i % len(money)],
                effective_cost=money[(i + 3) % len(money)],
                list_unit_price=quantity[(i + 2) % len(quantity)] if i % 4 else None,
                pricing_currency_effective_cost=None if i % 2 else money[-1 - i % len(money)],
                pricing_quantity=None if i % 7 == 6 else quantity[i % len(quantity)],
                consumed_quantity=None if i % 3 else quantity[-1 - i % len(quantity)],
                charge_description=s,
                resource_name=None if i % 5 == 0 else s,
                charge_period_start=STAMPS[i % len(STAMPS)],
                charge_period_end=STAMPS[-1 - i % len(STAMPS)],
                tags=None if i % 6 == 5 else json.dumps({"team": s, s[:100]: "hostile key", "n": i}),
            )
        )
    return rows


@pytest.fixture
def both(pg_dsn):
    """(csv warehouse, binary warehouse), each migrated in its own throw-away schema."""
    made = []
    try:
        for fmt in ("csv", "binary"):
            schema = new_schema_name(f"bin_{fmt}")
            wh = PostgresWarehouse.from_dsn(pg_dsn, schema=schema, copy_format=fmt)
            made.append((wh, schema))
            wh.migrate()
        yield made[0][0], made[1][0]
    finally:
        for wh, schema in made:
            wh.close()
            _drop_schema(pg_dsn, schema)


def _dump(wh: PostgresWarehouse, table: str, order: str) -> list[tuple]:
    """Every column as PostgreSQL's own text (so a decimal's scale counts too), in a fixed order."""
    cols = [c for c in wh.table_columns(table)]
    sel = ", ".join(f'"{c}"::text' for c in cols)
    return wh.query(f"SELECT {sel} FROM {table} ORDER BY {order}")


def test_replace_partition_binary_equals_csv(both, tmp_path):
    csv_wh, bin_wh = both
    # one file whose decimals all fit 64 bits unscaled (the encoder's fast path), one with wider ones
    small = [m for m in MONEY if abs(m.scaleb(10)) < 2**64]
    rows = _rows(small, QUANTITY[:2] + QUANTITY[-1:]) + _rows(first=100)
    files = [
        write_focus(tmp_path / "small.parquet", rows[: len(rows) - len(_rows())]),
        write_focus(tmp_path / "wide.parquet", _rows(first=100)),
    ]
    assert csv_wh.replace_partition("focus_costs", PART, files) == bin_wh.replace_partition(
        "focus_costs", PART, files
    )
    want = _dump(csv_wh, "focus_costs", "charge_description, billed_cost, resource_id")
    got = _dump(bin_wh, "focus_costs", "charge_description, billed_cost, resource_id")
    assert got == want and len(got) == len(rows)
    # the binary path really ran (not a silent CSV fallback), and its values are the inputs
    assert pg_binary.plan(arrow_schema(), bin_wh._column_types("focus_costs")) is not None
    costs = {Decimal(r[0]) for r in bin_wh.query("SELECT billed_cost FROM focus_costs")}
    assert costs == set(MONEY)
    total = bin_wh.query("SELECT sum(billed_cost), sum(pricing_quantity) FROM focus_costs")[0]
    assert total == csv_wh.query("SELECT sum(billed_cost), sum(pricing_quantity) FROM focus_costs")[0]
    assert {r[0] for r in bin_wh.query("SELECT charge_period_start FROM focus_costs")} == set(STAMPS)
    names = {r[0] for r in bin_wh.query("SELECT resource_name FROM focus_costs")}
    assert None in names and "" in names and set(HOSTILE) <= names


GENERIC_DDL = (
    "CREATE TABLE gen (id int8, small int2, mid int4, ratio float8, ok bool, day date, at timestamptz, "
    "naive timestamp, amount numeric, money12 numeric(20,2), label varchar(40), code bpchar(3), doc jsonb, raw json)"
)


def _generic() -> pa.Table:
    plus2 = timezone(timedelta(hours=2))
    return pa.table(
        {
            "id": pa.array([1, 2, 3, 4, 5], pa.int64()),
            "small": pa.array([-32768, 32767, None, 0, 7], pa.int16()),
            "mid": pa.array([2**31 - 1, None, -(2**31), 0, 1], pa.int32()),
            "ratio": pa.array([0.1, -1.5e300, None, float("inf"), 2.0 / 3.0], pa.float64()),
            "ok": pa.array([True, False, None, True, False]),
            "day": pa.array([date(2000, 1, 1), date(1999, 12, 31), None, date(2024, 2, 29), date(1, 1, 1)]),
            "at": pa.array(
                [
                    datetime(2024, 5, 1, 12, tzinfo=plus2),
                    None,
                    datetime(1999, 1, 1, tzinfo=UTC),
                    datetime(2030, 1, 1, 0, 0, 0, 5, tzinfo=plus2),
                    datetime(2000, 1, 1, tzinfo=UTC),
                ],
                pa.timestamp("us", tz="Europe/Paris"),
            ),
            "naive": pa.array(
                [
                    datetime(2024, 5, 1, 12, 30, 1),
                    None,
                    datetime(2000, 1, 1),
                    datetime(1960, 6, 6),
                    datetime(2100, 1, 1),
                ],
                pa.timestamp("ms"),
            ),
            "amount": pa.array(
                [Decimal("1.5"), Decimal("-2.25"), None, Decimal("0.001"), Decimal("123456789012")],
                pa.decimal128(20, 3),
            ),
            "money12": pa.array(
                [Decimal("0.005"), Decimal("-0.005"), Decimal("1.004"), None, Decimal("-99.995")],
                pa.decimal128(10, 3),
            ),  # more scale than the column: both paths round alike
            "label": pa.array(["a", None, "é🚀", "", "x" * 40], pa.large_string()),
            "code": pa.array(["ab", "abc", None, "", "z"]).dictionary_encode(),
            "doc": pa.array(['{"a": 1}', None, '{"k": "v\\"q", "u": "🚀"}', "[]", '"s"']),
            "raw": pa.array(['{"b":  2}', "null", None, '{"a": 1, "a": 2}', "3"]),
        }
    )


def test_insert_and_upsert_binary_equal_csv_for_other_column_types(both):
    csv_wh, bin_wh = both
    data = _generic()
    for wh in (csv_wh, bin_wh):
        wh.execute(GENERIC_DDL)
        assert wh.insert_arrow("gen", data.slice(1)) == 4  # a slice: arrow offsets are not zero
        assert wh.insert_arrow("gen", data.slice(0, 1), dedup_keys=["id"]) == 1  # via the temp staging table
        assert wh.upsert_arrow("gen", data.slice(2, 2), keys=["id"]) == 2
    assert pg_binary.plan(data.schema, bin_wh._column_types("gen")) is not None
    assert _dump(bin_wh, "gen", "id") == _dump(csv_wh, "gen", "id")
    assert bin_wh.query("SELECT money12 FROM gen WHERE id = 2")[0][0] == Decimal("-0.01")


def test_batches_too_big_for_one_binary_array_are_split(both, monkeypatch):
    csv_wh, bin_wh = both
    data = _generic()
    for wh in (csv_wh, bin_wh):
        wh.execute(GENERIC_DDL)
    types = bin_wh._column_types("gen")
    plan = pg_binary.plan(data.schema, types)
    assert plan is not None
    (batch,) = data.to_batches()
    assert len(list(plan.chunks([batch]))) == 3  # signature, one payload, trailer
    monkeypatch.setattr(pg_binary, "MAX_BATCH_BYTES", 1)  # every row its own slice
    assert [n for n, _ in plan.chunks([batch])] == [0] + [1] * data.num_rows + [0]
    for wh in (csv_wh, bin_wh):
        assert wh.insert_arrow("gen", data) == data.num_rows
    assert _dump(bin_wh, "gen", "id") == _dump(csv_wh, "gen", "id")


def test_plan_falls_back_to_csv_where_no_exact_encoding(both):
    csv_wh, bin_wh = both
    bin_wh.execute("CREATE TABLE f (x float8, u uuid)")
    csv_wh.execute("CREATE TABLE f (x float8, u uuid)")
    types = bin_wh._column_types("f")
    # float32 -> float8 would differ from the CSV text's value; uuid has no encoder here
    assert pg_binary.plan(pa.schema([("x", pa.float32())]), types) is None
    assert pg_binary.plan(pa.schema([("u", pa.string())]), types) is None
    assert pg_binary.plan(pa.schema([("x", pa.float64())]), types) is not None
    data = pa.table(
        {"x": pa.array([0.1, None], pa.float32()), "u": ["6f1c6f1c-0000-4000-8000-000000000001", None]}
    )
    for wh in (csv_wh, bin_wh):
        assert wh.insert_arrow("f", data) == 2
    assert _dump(bin_wh, "f", "x") == _dump(csv_wh, "f", "x")


@pytest.mark.parametrize(
    "column, value",
    [("charge_description", "nul \x00 inside"), ("tags", '{"a": "\x00"}')],
)
def test_both_paths_refuse_the_same_bad_rows_and_keep_the_old_partition(both, tmp_path, column, value):
    csv_wh, bin_wh = both
    good = write_focus(tmp_path / "good.parquet", [focus_row("s", "2024-05", i) for i in range(3)])
    bad = write_focus(tmp_path / "bad.parquet", [focus_row("s", "2024-05", 9, **{column: value})])
    for wh in (csv_wh, bin_wh):
        wh.replace_partition("focus_costs", PART, [good])
        with pytest.raises(DataRefused):
            wh.replace_partition("focus_costs", PART, [bad])
        assert wh.query("SELECT count(*) FROM focus_costs")[0][0] == 3


def test_decimal_beyond_the_column_precision_is_refused_by_both(both, tmp_path):
    csv_wh, bin_wh = both
    too_big = Decimal("99999999999999999999999999999.000000000")  # 29 integer digits; NUMERIC(38,10) holds 28
    rows = [focus_row("s", "2024-05", 0, billed_cost=too_big)]
    f = tmp_path / "big.parquet"
    schema = pa.schema(
        [fld.with_type(pa.decimal128(38, 9)) if fld.name == "billed_cost" else fld for fld in arrow_schema()]
    )
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), f)
    assert pg_binary.plan(schema, bin_wh._column_types("focus_costs")) is not None
    for wh in (csv_wh, bin_wh):
        with pytest.raises(DataRefused):
            wh.replace_partition("focus_costs", PART, [f])

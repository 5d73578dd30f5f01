"""insert_arrow (plain and de-duplicated) and upsert_arrow on both engines."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

SCHEMA = pa.schema(
    [("k", pa.string()), ("region", pa.string()), ("price", pa.decimal128(38, 10)), ("note", pa.string())]
)


@pytest.fixture
def kv(any_wh):
    any_wh.execute("CREATE TABLE kv (k VARCHAR, region VARCHAR, price DECIMAL(38,10), note VARCHAR)")
    return any_wh


def _t(rows):
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows], schema=SCHEMA)


def _all(wh):
    return sorted(
        wh.query("SELECT k, region, price, note FROM kv"), key=lambda r: (r[0] or "", r[1] or "", r[3] or "")
    )


def test_plain_insert(kv):
    assert (
        kv.insert_arrow("kv", _t([("a", "us", Decimal("0.1"), "x"), ("a", "us", Decimal("0.2"), "dup ok")]))
        == 2
    )
    assert kv.insert_arrow("kv", _t([])) == 0
    assert len(_all(kv)) == 2


def test_insert_with_dedup_keys_skips_existing_and_internal_duplicates(kv):
    first = _t(
        [
            ("a", "us", Decimal("1"), "first"),
            ("b", "eu", Decimal("2"), "first"),
            (None, "us", Decimal("3"), "nullkey"),
        ]
    )
    assert kv.insert_arrow("kv", first, dedup_keys=["k", "region"]) == 3
    again = _t(
        [
            ("a", "us", Decimal("9"), "second"),  # exists -> skipped
            ("a", "eu", Decimal("4"), "new"),  # new key
            ("a", "eu", Decimal("5"), "new-dup"),  # duplicate inside the batch -> one of them
            (None, "us", Decimal("9"), "nullkey-again"),  # NULL key matches NULL (IS NOT DISTINCT FROM)
        ]
    )
    assert kv.insert_arrow("kv", again, dedup_keys=["k", "region"]) == 1
    rows = _all(kv)
    assert len(rows) == 4
    assert ("a", "us", Decimal("1"), "first") in rows
    assert [r for r in rows if r[0] == "a" and r[1] == "eu"][0][3] in {"new", "new-dup"}
    assert [r[3] for r in rows if r[0] is None] == ["nullkey"]
    # Whole batch already present -> nothing inserted.
    assert kv.insert_arrow("kv", first, dedup_keys=["k", "region"]) == 0


def test_upsert_replaces_by_key_and_keeps_others(kv):
    kv.insert_arrow(
        "kv",
        _t(
            [
                ("a", "us", Decimal("1"), "old"),
                ("b", "us", Decimal("2"), "keep"),
                ("c", "us", Decimal("3"), "old"),
            ]
        ),
    )
    n = kv.upsert_arrow(
        "kv",
        _t(
            [
                ("a", "us", Decimal("10"), "new"),
                ("c", "us", Decimal("30"), "new"),
                ("d", "us", Decimal("4"), "ins"),
            ]
        ),
        keys=["k"],
    )
    assert n == 3
    assert _all(kv) == [
        ("a", "us", Decimal("10"), "new"),
        ("b", "us", Decimal("2"), "keep"),
        ("c", "us", Decimal("30"), "new"),
        ("d", "us", Decimal("4"), "ins"),
    ]


def test_failed_upsert_changes_nothing(kv):
    kv.insert_arrow("kv", _t([("a", "us", Decimal("1"), "old")]))
    bad = pa.table({"k": ["a", "b"], "price": ["5", "not-a-number"]})
    with pytest.raises(Exception):  # noqa: B017 - the engines word the cast error differently
        kv.upsert_arrow("kv", bad, keys=["k"])
    assert _all(kv) == [("a", "us", Decimal("1"), "old")]


def test_subset_of_columns_and_hostile_values(kv):
    evil = "'; drop table kv;--\n\t\\ 🚀 =cmd|"
    assert kv.insert_arrow("kv", pa.table({"k": [evil], "note": [""]}), dedup_keys=["k"]) == 1
    assert kv.insert_arrow("kv", pa.table({"k": [evil], "note": ["again"]}), dedup_keys=["k"]) == 0
    assert _all(kv) == [(evil, None, None, "")]

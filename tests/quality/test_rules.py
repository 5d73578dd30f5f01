"""Pure rule generation and reconciliation: no GX, no files."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal

import pytest

from finops.focus.schema import COLUMNS, Kind, not_null_columns
from finops.quality.currencies import ISO_4217, is_currency
from finops.quality.reconciliation import reconcile, to_cents
from finops.quality.rules import _literal, build_rules, check_period


def test_rules_come_from_the_schema():
    rules = build_rules("2026-03", "main-payer")
    keys = {r.key for r in rules}
    assert len(keys) == len(rules), "rule keys are unique"
    for c in not_null_columns():
        assert f"{c.snake}:not_null" in keys
    for c in COLUMNS:
        if c.allowed:
            assert f"{c.snake}:allowed_values" in keys
        if c.kind is Kind.JSON:
            assert f"{c.snake}:json_object" in keys
    for k in (
        "billing_currency:iso_4217",
        "pricing_currency:iso_4217",
        "charge_period_start:inside_billing_period",
        "charge_period_end:inside_billing_period",
        "charge_period_start:after_end",
        "billing_period_start:matches_batch_period",
        "effective_cost:not_null",
        "x_source:matches_batch",
        "x_billing_period:matches_batch",
        "service_subcategory:parent_category",
    ):
        assert k in keys
    # the source name is config text: it only ever travels as a bound value set, never as SQL
    src = next(r for r in rules if r.key == "x_source:matches_batch")
    assert src.kind == "in_set" and src.values == ("main-payer",) and src.where is None
    assert all("main-payer" not in (r.where or "") for r in rules)
    assert "x_source:matches_batch" not in {r.key for r in build_rules("2026-03")}


@pytest.mark.parametrize(
    "bad", ["2026-3", "2026-13", "26-03", "2026-03'; drop table x;--", "", None, "2026-00"]
)
def test_period_must_be_yyyy_mm(bad):
    with pytest.raises(ValueError, match="YYYY-MM"):
        check_period(bad)
    with pytest.raises(ValueError):
        build_rules(bad)


def test_rule_literals_refuse_bind_and_format_syntax():
    assert _literal("Other (Compute)") == "'Other (Compute)'"
    assert _literal("it's") == "'it''s'"
    for bad in ("a:b", "{batch}", "x}", "back\\slash"):
        with pytest.raises(ValueError):
            _literal(bad)


def test_iso_4217_static_list():
    assert {"USD", "EUR", "JPY", "GBP", "INR", "CHF"} <= ISO_4217
    assert len(ISO_4217) > 150
    assert not is_currency("usd") and not is_currency("XYZ") and not is_currency("") and not is_currency(None)


@pytest.mark.parametrize(
    ("focus", "raw", "ok"),
    [
        ("123.45", "123.45", True),
        ("123.4500000001", "123.45", True),  # same cent
        ("123.4549999999", "123.45", True),
        ("123.455", "123.46", True),  # half up
        ("123.46", "123.45", False),  # one cent off
        ("123.44", "123.45", False),
        ("-0.01", "0.00", False),  # credits are negative and count
        ("-1000000000000.01", "-1000000000000.01", True),
        ("0", "0.004", True),
    ],
)
def test_reconcile_to_the_cent(focus, raw, ok):
    msg = reconcile(Decimal(focus), Decimal(raw))
    assert (msg is None) is ok
    if not ok:
        assert msg.startswith("billed_cost: reconciliation failed")
        assert str(to_cents(Decimal(raw))) in msg


@pytest.mark.parametrize("bad", [123.45, "123.45", 12345, Decimal("NaN"), Decimal("Infinity")])
def test_reconcile_rejects_non_decimal_money(bad):
    with pytest.raises((TypeError, ValueError)):
        reconcile(Decimal("1"), bad)


def test_import_is_cheap_and_gx_free():
    code = (
        "import sys, finops.quality as q\n"
        "assert callable(q.validate_staging) and callable(q.quarantine_batch) and callable(q.reconcile)\n"
        "q.ValidationReport, q.build_rules('2026-01')\n"
        "assert 'great_expectations' not in sys.modules, 'GX imported eagerly'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def _offending(rule, typ: str, values: list[tuple]) -> list:
    """The rows a rule's WHERE flags, run in DuckDB exactly as GX sends it (str.format'ed)."""
    import duckdb

    con = duckdb.connect()
    con.execute(f"CREATE TABLE t ({', '.join(f'{c} {typ}' for c in rule.needs)})")
    con.executemany(f"INSERT INTO t VALUES ({', '.join('?' for _ in rule.needs)})", values)
    sql = f"SELECT {', '.join(rule.needs)} FROM {{batch}} WHERE {rule.where}".format(batch="t")
    return sorted(con.execute(sql).fetchall(), key=repr)


@pytest.mark.parametrize("typ", ["VARCHAR", "JSON"])  # staging parquet / the warehouse column
def test_json_object_rule_flags_everything_but_objects(typ):
    rule = next(r for r in build_rules("2026-03") if r.key == "tags:json_object")
    good = ['{"a":1}', '  \t\n{"a": [1]}', "{}"]
    bad = ["[1]", '"x"', "null", "1", "true"] + ([] if typ == "JSON" else ["{bad", "", " ", "not json"])
    got = _offending(rule, typ, [(v,) for v in good + bad + [None]])
    assert got == sorted([(v,) for v in bad], key=repr)


def test_parent_category_rule_flags_wrong_and_unknown_subcategories():
    """A GX built-in (ExpectColumnPairValuesToBeInSet), run through GX on DuckDB."""
    import duckdb

    from finops.quality.gx_run import run_suite

    rule = next(r for r in build_rules("2026-03") if r.key == "service_subcategory:parent_category")
    assert rule.kind == "pair_in_set"
    ok = [("Virtual Machines", "Compute"), (None, "Storage"), ("Virtual Machines", None)]
    bad = [("Virtual Machines", "Storage"), ("No Such Thing", "Compute"), ("virtual machines", "Compute")]
    con = duckdb.connect()
    con.execute("CREATE TABLE t (service_subcategory VARCHAR, service_category VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?)", ok + bad)
    _result, failed, _docs = run_suite(con, "t", [rule])
    ((got_rule, entry),) = failed
    assert got_rule is rule and entry["result"]["unexpected_count"] == len(bad)
    assert sorted(map(tuple, entry["result"]["partial_unexpected_list"]), key=repr) == sorted(bad, key=repr)


def test_each_currency_reconciles_on_its_own():
    from finops.quality.reconciliation import reconcile_by_currency

    raw = {"USD": Decimal("100.00"), "EUR": Decimal("50.00")}
    assert reconcile_by_currency({"USD": Decimal("100.004"), "EUR": Decimal("50")}, raw) == []
    # one euro booked as a dollar: the overall sum (150.00) still matches, each currency does not
    moved = reconcile_by_currency({"USD": Decimal("101.00"), "EUR": Decimal("49.00")}, raw)
    assert moved == [
        "billed_cost: reconciliation failed in 'EUR': FOCUS total 49.00 != raw export total 50.00 (difference -1.00)",
        "billed_cost: reconciliation failed in 'USD': FOCUS total 101.00 != raw export total 100.00 (difference 1.00)",
    ]
    assert reconcile(Decimal("150.00"), Decimal("150.00")) is None
    # a currency the export does not have, and rows with none
    assert (
        len(reconcile_by_currency({"USD": Decimal("100"), None: Decimal("1")}, {"USD": Decimal("101")})) == 2
    )
    # one currency: the overall check says the same, so nothing is repeated
    assert reconcile_by_currency({"USD": Decimal("1")}, {"USD": Decimal("2")}) == []
    hostile = reconcile_by_currency({"=cmd|' /C calc'!A0" * 100: Decimal("1")}, {"USD": Decimal("1")})
    assert all(len(m) < 200 for m in hostile)

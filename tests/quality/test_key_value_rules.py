"""FOCUS KeyValueFormat (Tags, SkuPriceDetails): an ECMA-404 JSON object whose values are
strings, numbers, booleans or null. DuckDB's json_valid accepts NaN / Infinity and trailing
commas, and nothing refused an object or array as a value: such batches validated clean
(issue 23). The conversion stringifies nested values (tests/test_ingest_notes.py); these rules
catch whatever reaches validation anyway."""

from __future__ import annotations

import pytest

from finops.quality import validate_staging
from tests.fixtures.quality import PERIOD, q_rows, q_write


@pytest.mark.parametrize(
    ("column", "value", "rule"),
    [
        ("tags", '{"team": NaN}', "json_object"),
        ("tags", '{"team": Infinity}', "json_object"),
        ("tags", '{"team": "ml",}', "json_object"),
        ("sku_price_details", '{"Term": "a", "Years": 1,}', "json_object"),
        ("tags", '{"team": {"name": "ml"}}', "flat_values"),
        ("tags", '{"team": ["ml", "web"]}', "flat_values"),
        ("sku_price_details", '{"Term": {"Years": 1}}', "flat_values"),
    ],
)
def test_non_standard_or_nested_key_values_fail(tmp_path, column, value, rule):
    rows = q_rows(4)
    rows[1][column] = value
    path = tmp_path / "staging.parquet"
    total = q_write(path, rows)
    rep = validate_staging([path], source="main-payer", billing_period=PERIOD, raw_billed_total=total)
    assert not rep.success
    assert [(p["column"], p["rule"], p["rows"]) for p in rep.problems] == [(column, rule, 1)], rep.failures


def test_flat_values_that_merely_look_odd_pass(tmp_path):
    """Strings holding 'NaN', a comma before a bracket, or JSON text; numbers, booleans, null."""
    rows = q_rows(4)
    rows[0]["tags"] = '{"a": "NaN", "b": "x,]", "c": "{\\"d\\": 1}", "e": 1.5, "f": true, "g": null}'
    rows[1]["tags"] = '{"infra": "Infinity-team"}'
    path = tmp_path / "staging.parquet"
    total = q_write(path, rows)
    rep = validate_staging([path], source="main-payer", billing_period=PERIOD, raw_billed_total=total)
    assert rep.success, rep.failures

"""FOCUS UnitFormat normalisation: Python and SQL agree, and results pass the validator's grammar."""

from __future__ import annotations

import duckdb
import pytest

from finops.focus.units import is_focus_unit, normalize_unit, unit_sql

SAMPLES = {
    "Hrs": "Hours", "GB-Mo": "GB-Months", "GB": "GB", "Requests": "Requests", "Lambda-GB-Second": "GB-Seconds",
    "ReadCapacityUnit-Hrs": "ReadCapacityUnit-Hours", "vCPU-Hours": "vCPU-Hours", "GB-Hrs": "GB-Hours",
    " Hrs ": "Hours", "": None, None: None,
}


@pytest.mark.parametrize(("raw", "want"), list(SAMPLES.items()))
def test_python_and_sql_agree(raw, want):
    assert normalize_unit(raw) == want
    con = duckdb.connect()
    assert con.execute(f"SELECT {unit_sql('u')} FROM (SELECT CAST(? AS VARCHAR) AS u)", [raw]).fetchone()[0] == want
    if want is not None:
        assert is_focus_unit(want)


def test_grammar_rejects_aws_spellings():
    assert not is_focus_unit("GB-Mo") and not is_focus_unit("Lambda-GB-Second")

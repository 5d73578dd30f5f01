from __future__ import annotations

import csv
import io
from decimal import Decimal as D

from finops.alerts.csv_safe import safe_cell, to_csv


def test_formula_cells_are_neutralised_numbers_are_not():
    for s in ["=cmd|' /C calc'!A0", "+1", "-1+1", "@SUM(A1)", "\tx", "\rx", "  =1"]:
        assert safe_cell(s).startswith("'"), s
    assert safe_cell("ml-research") == "ml-research"
    assert safe_cell(D("-12.50")) == D("-12.50") and safe_cell(-3) == -3


def test_csv_round_trip_keeps_text_and_escapes_formulas():
    text = to_csv(["team", "cost"], [['=HYPERLINK("http://x")', D("1.5")], ['a,"b"\nc', D("-2")]])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[1] == ['\'=HYPERLINK("http://x")', "1.5"]
    assert rows[2] == ['a,"b"\nc', "-2"]
    assert not any(cell.startswith(("=", "+", "@")) for row in rows for cell in row)

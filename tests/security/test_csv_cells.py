"""CSV cells a spreadsheet cannot run: one guard for every CSV we write (alert and report
attachments, the policy violations report, `finops export` CSV)."""

from __future__ import annotations

import csv
import io
import unicodedata
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from finops.alerts.csv_safe import guard_arrow_table, is_formula, safe_cell, to_csv
from tests.fixtures.hostile import hostile_text

FORMULAS = [
    "\u00a0=1+1",
    "\u3000=cmd|' /C calc'!A0",
    "\uff1d1+1",
    "\uff0bSUM(A1)",
    "\uff0d1",
    "\uff20SUM(A1)",
    " \u00a0 @x",
    "\u200b=1",
    "\ufeff=1",
    "\t=1",
    "\r=1",
    "\n=1",
    "\x00=1",
    "=1",
    " +1",
    "-1+1",
    "@A1",
    "\u2003\u2028=1",
    "\ufe66HYPERLINK()",
    "\t",
    "\r",
]
PLAIN = ["ml-research", "team 1", "1=1", "a@b.c", "ünï", "", "'=already quoted", "x-", "\u00a0x"]


@pytest.mark.parametrize("text", FORMULAS)
def test_formula_cells_behind_unicode_spaces_and_full_width_signs_are_guarded(text):
    assert safe_cell(text) == "'" + text


@pytest.mark.parametrize("text", PLAIN)
def test_plain_cells_are_unchanged(text):
    assert safe_cell(text) == text


@pytest.mark.parametrize("cell", ["a;=1+1", "a\t=1+1", "x;@SUM(A1)"])
def test_semicolon_and_tab_separated_formulas_are_quoted(cell):
    text = to_csv(["team"], [[cell]])
    assert f'"{cell}"' in text
    for delimiter in (";", "\t", ","):
        for row in csv.reader(io.StringIO(text), delimiter=delimiter):
            assert all(not is_formula(c) for c in row), (delimiter, row)


def test_numbers_stay_numbers_and_unquoted():
    text = to_csv(["cost", "n"], [[Decimal("-12.50"), -3]])
    assert text.splitlines()[1] == "-12.50,-3"


def _spreadsheet_reads_formula(text: str) -> bool:
    """An oracle written apart from the guard: skip every space, control or format character;
    a formula starts with one of = + - @ | % in any width (NFKC folds the full-width forms)."""
    if text[:1] in ("\t", "\r", "\n"):
        return True
    rest = text.lstrip(
        "".join(c for c in set(text) if unicodedata.category(c) in ("Zs", "Zl", "Zp", "Cc", "Cf"))
    )
    return bool(rest) and unicodedata.normalize("NFKC", rest[0])[:1] in "=+-@|%"


_CELL = st.one_of(hostile_text(6), st.text(max_size=8))


@given(text=_CELL)
def test_property_guard_matches_the_oracle(text):
    assert is_formula(text) == _spreadsheet_reads_formula(text)
    assert safe_cell(text) == ("'" + text if is_formula(text) else text)


@given(cells=st.lists(_CELL, min_size=1, max_size=6))
def test_property_arrow_guard_is_the_same_guard(cells):
    table = guard_arrow_table(
        pa.table({"c": pa.array(cells + [None], pa.string()), "n": list(range(len(cells) + 1))})
    )
    assert table.column("c").to_pylist() == [safe_cell(c) for c in cells] + [None]
    assert table.column("n").to_pylist() == list(range(len(cells) + 1))


@given(rows=st.lists(st.lists(_CELL, min_size=1, max_size=3), min_size=1, max_size=4))
def test_property_every_text_cell_is_guarded_and_quoted(rows):
    """Quoted, a `;` or tab inside a cell cannot start a new cell in a reader that splits on it."""
    text = to_csv(["a", "b", "c"], rows)
    assert list(csv.reader(io.StringIO(text)))[1:] == [[safe_cell(c) for c in r] for r in rows]
    quoted = "".join(",".join('"' + safe_cell(c).replace('"', '""') + '"' for c in r) + "\r\n" for r in rows)
    assert text == '"a","b","c"\r\n' + quoted

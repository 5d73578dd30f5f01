"""CSV that spreadsheets cannot execute (OWASP CSV injection), the one guard for every CSV we
write: alert and showback attachments, the policy violations report, `finops export` CSV.

A text cell is a formula to a spreadsheet when, after any run of space, control or format
characters (no-break space, ideographic space, zero-width space, BOM, ...), it starts with
= + - @ | % in any width (full-width ＝ ＋ － ＠, small forms: whatever NFKC folds to them),
or when it starts with a tab or a line break. Such a cell gets a leading apostrophe, so
`=cmd|' /C calc'!A0` stays text. Every text cell is quoted, so a `;` or a tab inside one
cannot split it into a new cell for a spreadsheet that reads `;`- or tab-separated values.
Numbers stay numbers, unquoted.
"""

from __future__ import annotations

import csv
import io
import re
import sys
import unicodedata
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from functools import cache
from typing import IO, Any

import pyarrow as pa


def _char_class(pred: Any, last: int = sys.maxunicode) -> str:
    """A regex character class of every code point `pred` accepts, written so that Python's
    `re` and RE2 (pyarrow.compute) read it the same: \\xHH below U+0100, literal characters
    above, as ranges. Built here so one rule serves both engines."""

    def one(cp: int) -> str:
        return f"\\x{cp:02x}" if cp < 0x100 else chr(cp)

    parts: list[str] = []
    run: tuple[int, int] | None = None  # (first, last) code point of the run being built
    for cp in range(last + 1):
        if 0xD800 <= cp <= 0xDFFF or not pred(chr(cp)):
            continue
        if run is not None and cp == run[1] + 1:
            run = (run[0], cp)
            continue
        if run is not None:
            parts.append(one(run[0]) if run[0] == run[1] else f"{one(run[0])}-{one(run[1])}")
        run = (cp, cp)
    if run is not None:
        parts.append(one(run[0]) if run[0] == run[1] else f"{one(run[0])}-{one(run[1])}")
    return "[" + "".join(parts) + "]"


_IGNORABLE = ("Zs", "Zl", "Zp", "Cc", "Cf")  # spaces, line / paragraph separators, controls, format chars


@cache
def formula_pattern() -> str:
    """The guard's regex (Python `re` and RE2 alike); built once per process (0.2 s of CPU:
    every code point's category)."""
    ignored = _char_class(lambda c: unicodedata.category(c) in _IGNORABLE)
    # every sign NFKC folds to = + - @ | % lies in the BMP (full-width, small, super/subscript forms)
    signs = _char_class(lambda c: unicodedata.normalize("NFKC", c)[:1] in "=+-@|%", last=0xFFFF)
    return f"^(?:[\\x09\\x0a\\x0d]|{ignored}*{signs})"


@cache
def _formula() -> re.Pattern[str]:
    return re.compile(formula_pattern())


def is_formula(text: str) -> bool:
    return _formula().match(text) is not None


def safe_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float, Decimal)):
        return value
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    s = str(value)
    return "'" + s if is_formula(s) else s


def write_csv(f: IO[str], header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Header and rows to an open text file, every cell through safe_cell; text quoted."""
    w = csv.writer(f, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\r\n")
    w.writerow([safe_cell(h) for h in header])
    for r in rows:
        w.writerow([safe_cell(v) for v in r])


def to_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    buf = io.StringIO()
    write_csv(buf, header, rows)
    return buf.getvalue()


def guard_arrow_table(table: pa.Table) -> pa.Table:
    """The same guard on every text column of an Arrow table (vectorised: an export holds
    millions of rows). pyarrow's CSV writer quotes every string itself."""
    import pyarrow.compute as pc

    cols = []
    for col in table.columns:
        if (
            pa.types.is_string(col.type)
            or pa.types.is_large_string(col.type)
            or str(col.type) == "string_view"
        ):
            if str(col.type) == "string_view":
                col = col.cast(pa.large_string())
            hit = pc.match_substring_regex(col, formula_pattern())
            col = pc.if_else(hit, pc.binary_join_element_wise("'", col, ""), col)
        cols.append(col)
    return pa.table(cols, names=table.column_names)

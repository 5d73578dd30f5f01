"""CSV that spreadsheets cannot execute: a text cell starting with = + - @ TAB or CR (after
optional spaces) gets a leading apostrophe, so `=cmd|' /C calc'!A0` stays text (OWASP CSV
injection). Numbers stay numbers."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\n", "|", "%")


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
    if s.lstrip(" ").startswith(_TRIGGERS) or s.startswith(_TRIGGERS):
        return "'" + s
    return s


def to_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n")
    w.writerow([safe_cell(h) for h in header])
    for r in rows:
        w.writerow([safe_cell(v) for v in r])
    return buf.getvalue()

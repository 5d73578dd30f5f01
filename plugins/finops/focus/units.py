"""FOCUS UnitFormat for PricingUnit / ConsumedUnit / CommitmentDiscountUnit.

Providers spell units their own way (AWS: "Hrs", "GB-Mo", "Lambda-GB-Second"); FOCUS 1.2
wants "Hours", "GB-Months", "GB-Seconds" (`<unit>`, `<unit>-<plural time>`, `<unit>/<time>`,
`<n> <units>`). The FinOps Foundation validator checks values against that grammar, so every
converter normalises through one table here. `normalize_unit` (Python) and `unit_sql` (DuckDB
SQL text) apply the same rules: an exact table first, then time-suffix spelling fixes.
"""

from __future__ import annotations

import re

from finops.ingest import sql_literal

# Exact spellings seen in provider exports -> FOCUS UnitFormat.
EXACT: dict[str, str] = {
    "Hrs": "Hours",
    "Hr": "Hours",
    "hrs": "Hours",
    "hour": "Hours",
    "hours": "Hours",
    "GB-Mo": "GB-Months",
    "GB-Month": "GB-Months",
    "GB-month": "GB-Months",
    "GB-Hrs": "GB-Hours",
    "GB-Hr": "GB-Hours",
    "GB-Second": "GB-Seconds",
    "Lambda-GB-Second": "GB-Seconds",
    "Lambda-GB-Second-ARM": "GB-Seconds",
    "GB-Mo-ARM": "GB-Months",
    "IOs": "IOs",
    "Count": "Count",
    "Requests": "Requests",
    "Request": "Requests",
    "Queries": "Queries",
    "Quantity": "Units",
}

# `<unit>-<time>` suffix spellings -> the plural time unit FOCUS requires after a dash.
_SUFFIX: tuple[tuple[str, str], ...] = (
    ("Hrs", "Hours"), ("Hr", "Hours"), ("Hour", "Hours"),
    ("Mo", "Months"), ("Month", "Months"),
    ("Day", "Days"), ("Min", "Minutes"), ("Minute", "Minutes"),
    ("Sec", "Seconds"), ("Second", "Seconds"),
)


def normalize_unit(unit: str | None) -> str | None:
    """Provider unit -> FOCUS UnitFormat; None / '' -> None."""
    if unit is None or not unit.strip():
        return None
    u = unit.strip()
    if u in EXACT:
        return EXACT[u]
    for raw, plural in _SUFFIX:
        if u.endswith(f"-{raw}"):
            return f"{u[: -len(raw)]}{plural}"
    return u


def unit_sql(expr: str) -> str:
    """The same normalisation as `normalize_unit`, as a DuckDB expression over `expr` (SQL text)."""
    u = f"NULLIF(TRIM({expr}), '')"
    whens = " ".join(f"WHEN {sql_literal(k)} THEN {sql_literal(v)}" for k, v in EXACT.items())
    suffix = " ".join(
        f"WHEN {u} LIKE {sql_literal('%-' + raw)} THEN left({u}, length({u}) - {len(raw)}) || {sql_literal(plural)}"
        for raw, plural in _SUFFIX
    )
    return f"CASE {u} {whens} ELSE CASE {suffix} ELSE {u} END END"


# The validator's grammar (focus-validator 2.2.1 FormatUnit), for tests and sanity checks.
_DATA = "b|Kb|Mb|Gb|Tb|Pb|Eb|B|KB|MB|GB|TB|PB|EB|Kib|Mib|Gib|Tib|Pib|Eib|KiB|MiB|GiB|TiB|PiB|EiB"
_TS = "Year|Month|Day|Hour|Minute|Second"
_TP = "Years|Months|Days|Hours|Minutes|Seconds"
_CNT = r"[A-Za-z][A-Za-z0-9]*(?:\s+[A-Za-z][A-Za-z0-9]*)*"
UNIT_FORMAT = re.compile(
    "|".join(
        f"(?:{p})"
        for p in (
            f"^(?:{_DATA}|{_TS}|{_TP}|{_CNT})$",
            f"^(?:{_DATA}|{_CNT})-(?:{_TP})$",
            f"^(?:{_DATA}|{_CNT}|{_TP})/(?:{_TS})$",
            f"^[0-9]+ (?:{_DATA}|{_TS}|{_TP}|{_CNT})$",
            f"^(?:{_DATA}|{_CNT}|{_TP})/[0-9]+ (?:{_TP})$",
        )
    )
)


def is_focus_unit(unit: str) -> bool:
    return bool(UNIT_FORMAT.match(unit))

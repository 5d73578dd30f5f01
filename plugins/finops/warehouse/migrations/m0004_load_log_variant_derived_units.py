"""load_log: what a load detected and filled in, beside its totals.

- variant: the export variant the converter detected (e.g. Azure EA `Cost` schema, CUR 2.0
  without resource ids), so a month's history says which schema each delivery had;
- derived_columns: {FOCUS column: rows} the converter filled because the export lacks it
  (ServiceSubcategory `Other (<category>)`, ChargeDescription from the usage type, ...);
- unknown_units: {FOCUS column: {unit: rows}} unit values outside FOCUS UnitFormat, kept as
  the export sent them (never a reason to quarantine);
- quarantine_summary: for a quarantined delivery, the cause, the failing column / rule and
  what to do, as the report file beside the quarantined files says it."""

from __future__ import annotations

VERSION = 4
DESCRIPTION = "load_log.variant, derived_columns, unknown_units, quarantine_summary"


def statements(dialect: str) -> list[str]:
    js = "JSON" if dialect == "duckdb" else "JSONB"
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    return [
        f"ALTER TABLE load_log ADD COLUMN IF NOT EXISTS variant {text}",
        f"ALTER TABLE load_log ADD COLUMN IF NOT EXISTS derived_columns {js}",
        f"ALTER TABLE load_log ADD COLUMN IF NOT EXISTS unknown_units {js}",
        f"ALTER TABLE load_log ADD COLUMN IF NOT EXISTS quarantine_summary {js}",
    ]

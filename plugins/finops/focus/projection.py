"""Build the canonical FOCUS SELECT list from a converter's per-column expressions.

Every converter maps provider fields to FOCUS with a dict {snake_name: sql_expr}; this
module turns it into `CAST(expr AS type) AS name` for ALL schema.COLUMNS in warehouse
order (missing ones become typed NULLs), so no converter can forget a column or emit
the wrong type. Pure string building: no DuckDB import.
"""

from __future__ import annotations

from finops.exceptions import FinopsError
from finops.focus.schema import BY_SNAKE, COLUMNS, SERVICE_CATEGORIES, Kind
from finops.periods import check_period
from finops.warehouse.sqltypes import sql_type


class ProjectionError(FinopsError, ValueError):
    """A converter named a column that is not in the FOCUS schema."""


def lit(value: str | None) -> str:
    """A SQL string literal for a value that comes from our own code (context, constants).

    Converters are SQL text by contract, so context values must be inlined; quotes are
    doubled so even an odd value cannot break out of the literal."""
    if value is None:
        return "NULL"
    return "'" + str(value).replace("'", "''") + "'"


def period_bounds_sql(period: str, tz: str | None = None) -> tuple[str, str]:
    """(start, end) TIMESTAMP expressions (naive UTC) of a YYYY-MM billing period, end exclusive.
    `tz`: the zone whose midnights bound the provider's month (GCP invoices by Pacific time, so
    its October runs 07:00 UTC Oct 1 -> 07:00 UTC Nov 1); None means UTC midnights."""
    check_period(period)
    start = f"TIMESTAMP '{period}-01 00:00:00'"
    end = f"({start} + INTERVAL 1 MONTH)"
    if tz is None:
        return start, end
    return f"timezone('UTC', timezone({lit(tz)}, {start}))", f"timezone('UTC', timezone({lit(tz)}, {end}))"


def select_list(exprs: dict[str, str], dialect: str = "duckdb") -> str:
    """`CAST(expr AS T) AS col, ...` for every FOCUS column, in schema order."""
    unknown = sorted(set(exprs) - set(BY_SNAKE))
    if unknown:
        raise ProjectionError(f"not FOCUS columns: {', '.join(unknown)}")
    parts = []
    for col in COLUMNS:
        expr = exprs.get(col.snake, "NULL")
        typ = "VARCHAR" if col.kind is Kind.JSON else sql_type(col.kind, dialect)
        parts.append(f"CAST({expr} AS {typ}) AS {col.snake}")
    return ",\n  ".join(parts)


def lineage(ctx: object, provider: str) -> dict[str, str]:
    """The x_ lineage columns every converter writes the same way."""
    return {
        "x_source": lit(ctx.source),  # type: ignore[attr-defined]
        "x_billing_period": lit(check_period(ctx.billing_period)),  # type: ignore[attr-defined]
        "x_provider": lit(provider),
        "x_load_id": lit(ctx.load_id),  # type: ignore[attr-defined]
    }


def files_list(files: list[str]) -> str:
    """A DuckDB list literal of file paths (paths come from our own download code)."""
    if not files:
        raise ValueError("no raw files to read")
    return "[" + ", ".join(lit(str(f)) for f in files) + "]"


def raw_totals_by_currency(raw: str, currency_sql: str, billed_sql: str) -> str:
    """A converter's `raw_billed_totals_sql`: (currency, exact billed total) per currency of the
    raw export. `currency_sql` must be the very expression its focus_sql maps BillingCurrency
    from, so each currency reconciles on its own: a total that adds EUR to USD proves nothing."""
    return (
        f"SELECT {currency_sql} AS currency, COALESCE(SUM({billed_sql}), 0) AS billed FROM {raw} GROUP BY 1"
    )


def other_subcategory_sql(category_sql: str) -> str:
    """FOCUS 1.2's catch-all subcategory of a row's ServiceCategory ('Other (Compute)', ...;
    'Other (Other)' for an unknown category): every category has one, and it keeps the
    subcategory's parent equal to the category. For exports that predate ServiceSubcategory
    (FOCUS 1.0), whose rows would otherwise leave the column null, which the spec forbids."""
    whens = " ".join(f"WHEN {lit(c)} THEN {lit(f'Other ({c})')}" for c in SERVICE_CATEGORIES)
    return f"CASE {category_sql} {whens} ELSE 'Other (Other)' END"


def nested_key_value_sql(expr: str) -> str:
    """TRUE where `expr` (JSON text) is an object holding an object or array as a value.

    FOCUS KeyValueFormat (Tags, SkuPriceDetails) allows string, number, boolean and null values
    only. The cheap text test first ('[' anywhere, or a second '{'), so a flat object, which is
    nearly every row, is never parsed; chr() instead of brace literals keeps the text usable in
    Great Expectations' query templates, where braces are placeholders."""
    open_brace = "chr(123)"
    return (
        f"CASE WHEN {expr} IS NULL OR NOT (contains({expr}, '[') OR strpos(substr({expr}, 2), {open_brace}) > 0) "
        f"THEN false WHEN json_valid({expr}) THEN json_type({expr}) = 'OBJECT' "
        f"AND list_has_any(json_type({expr}, '$.*'), ['OBJECT', 'ARRAY']) ELSE false END"
    )


def flat_key_value_sql(expr: str) -> str:
    """`expr` with every nested object / array value replaced by its JSON text, as a string.

    Why stringify rather than reject: a provider that nests a value in a tag is still a real
    export; the value is kept whole (as JSON text) and the spine counts the rows it rewrote. An
    object it cannot rebuild (duplicate keys) stays as it was and validation names it."""
    entries = f"map_entries(json_transform({expr}, '\"MAP(VARCHAR, JSON)\"'))"
    value = "CASE WHEN json_type(e.value) IN ('OBJECT', 'ARRAY') THEN to_json(CAST(e.value AS VARCHAR)) ELSE e.value END"
    rebuilt = f"CAST(to_json(map_from_entries(list_transform({entries}, lambda e: struct_pack(key := e.key, value := {value})))) AS VARCHAR)"
    return f"CASE WHEN {nested_key_value_sql(expr)} THEN coalesce(try({rebuilt}), {expr}) ELSE {expr} END"

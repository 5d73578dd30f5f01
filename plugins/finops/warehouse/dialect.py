"""Small SQL fragments that differ between DuckDB and PostgreSQL, for modules that write
their own queries against either backend. Keys / values are always bound (`?`), never spliced.

    sql, params = json_get(wh.dialect, "tags", "team")
    wh.query(f"SELECT {sql} AS team, sum(billed_cost) FROM focus_costs GROUP BY 1", params)
"""

from __future__ import annotations

from finops.warehouse.base import WarehouseError


def _column(col: str) -> str:
    if not col.replace("_", "").replace(".", "").isalnum():
        raise WarehouseError(f"refusing odd column reference {col!r}")
    return col


def json_pointer(key: str) -> str:
    """RFC 6901 pointer to a top-level key: any key (dots, slashes, quotes, emoji) is safe."""
    return "/" + key.replace("~", "~0").replace("/", "~1")


def json_get(dialect: str, column: str, key: str) -> tuple[str, list[str]]:
    """(SQL text with one `?`, [param]) reading top-level `key` of a JSON column as text (NULL if absent)."""
    col = _column(column)
    if dialect == "postgres":
        return f"({col}::jsonb ->> CAST(? AS TEXT))", [key]
    if dialect == "duckdb":
        return f"json_extract_string({col}, CAST(? AS VARCHAR))", [json_pointer(key)]
    raise WarehouseError(f"unknown dialect {dialect!r}")


def json_has_key(dialect: str, column: str, key: str) -> tuple[str, list[str]]:
    """(SQL boolean expression, [param]): does the JSON object have top-level `key`?"""
    col = _column(column)
    if dialect == "postgres":
        return f"jsonb_exists({col}::jsonb, CAST(? AS TEXT))", [key]
    if dialect == "duckdb":
        return f"json_exists({col}, CAST(? AS VARCHAR))", [json_pointer(key)]
    raise WarehouseError(f"unknown dialect {dialect!r}")

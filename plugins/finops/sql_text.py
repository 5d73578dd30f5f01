"""Quoting for the few names and constants that must sit in DuckDB SQL text. Shared by the
FOCUS converters, the spine and the migration tooling, so it lives below all of them."""

from __future__ import annotations


def sql_ident(name: str) -> str:
    """Quote an identifier (column names can come from exports, e.g. legacy tag headers)."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: str) -> str:
    """A SQL string literal for DuckDB (no backslash escapes there: doubling quotes is complete).

    Only for values that must sit in SQL text (file paths, constant labels); data values
    from exports never pass through here: they stay columns."""
    if "\x00" in value:
        raise ValueError("NUL byte in SQL literal")
    return "'" + value.replace("'", "''") + "'"

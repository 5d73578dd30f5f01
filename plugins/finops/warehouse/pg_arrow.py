"""PostgreSQL result rows -> pyarrow, with the same logical types DuckDB's arrow export gives:
NUMERIC(p,s) -> decimal128(p,s) (exact, never float), TIMESTAMP -> timestamp[us],
TIMESTAMPTZ -> timestamp[us, UTC], JSON / JSONB -> string (the JSON text)."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa

# PostgreSQL built-in type oids (pg_type.dat); stable across versions.
_FIXED: dict[int, pa.DataType] = {
    16: pa.bool_(),
    20: pa.int64(),
    21: pa.int16(),
    23: pa.int32(),
    26: pa.int64(),
    700: pa.float32(),
    701: pa.float64(),
    25: pa.string(),
    1043: pa.string(),
    1042: pa.string(),
    19: pa.string(),
    114: pa.string(),
    3802: pa.string(),
    1114: pa.timestamp("us"),
    1184: pa.timestamp("us", tz="UTC"),
    1082: pa.date32(),
    1083: pa.time64("us"),
    17: pa.binary(),
    1186: pa.duration("us"),
}
_NUMERIC = 1700
_STRINGISH = {2950}  # uuid -> its text


def arrow_type(type_code: int, precision: int | None, scale: int | None) -> pa.DataType | None:
    """The arrow type for a result column, or None when it must be inferred from the values."""
    if type_code == _NUMERIC:
        if precision is not None and scale is not None and 0 < precision <= 38:
            return pa.decimal128(precision, scale)
        if precision is not None and scale is not None and precision <= 76:
            return pa.decimal256(precision, scale)
        return None
    if type_code in _STRINGISH:
        return pa.string()
    return _FIXED.get(type_code)


def _decimal_type(values: Sequence[Any]) -> pa.DataType:
    """Exact decimal type wide enough for unconstrained NUMERIC values (e.g. SUM())."""
    scale = 0
    int_digits = 1
    for v in values:
        if v is None:
            continue
        if not isinstance(v, Decimal) or not v.is_finite():
            raise ValueError(f"cannot represent {v!r} as an exact decimal")
        _sign, digits, exp = v.as_tuple()
        assert isinstance(exp, int)
        scale = max(scale, -exp)
        int_digits = max(int_digits, len(digits) + exp)
    if int_digits + scale <= 38:
        return pa.decimal128(38, scale)
    if int_digits + scale <= 76:
        return pa.decimal256(76, scale)
    raise ValueError(f"numeric value with {int_digits + scale} digits does not fit an arrow decimal")


def column_array(values: list[Any], typ: pa.DataType | None, type_code: int) -> pa.Array:
    if typ is None and type_code == _NUMERIC:
        typ = _decimal_type(values)
    if typ is not None and pa.types.is_string(typ) and type_code in _STRINGISH:
        values = [None if v is None else str(v) for v in values]
    if typ is None:
        try:
            return pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return pa.array([None if v is None else str(v) for v in values], pa.string())
    return pa.array(values, typ)


def rows_to_table(
    names: list[str], types: list[tuple[int, int | None, int | None]], rows: list[tuple]
) -> pa.Table:
    """Build a table from fetched rows (column-wise, one chunk)."""
    cols = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    arrays = [column_array(list(cols[i]), arrow_type(*types[i]), types[i][0]) for i in range(len(names))]
    return pa.Table.from_arrays(arrays, names=names)


def concat(chunks: list[pa.Table]) -> pa.Table:
    """Concatenate chunks whose inferred decimal types may differ (unify to the widest)."""
    if len(chunks) == 1:
        return chunks[0]
    return pa.concat_tables(chunks, promote_options="permissive")

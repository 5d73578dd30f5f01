"""Arrow record batches -> PostgreSQL binary COPY (`COPY ... FROM STDIN (FORMAT binary)`).

Why: in text/CSV COPY the server parses every value back from text (numeric_in, timestamp_in),
which is most of a bulk load's server time; in binary format it receives the values already
in its wire representation. Each value is encoded column-wise with numpy/pyarrow compute, then
pc.binary_join_element_wise interleaves the columns into rows, so no Python runs per value.

Exactness: a decimal128(p, s) value is sent as PostgreSQL's NUMERIC wire form (base-10000
digits of the exact unscaled integer, dscale = s), so the server stores the same number the
CSV path's exact decimal text gives, to the last digit; the column's typmod rounds and checks
both the same way. Timestamps travel as microseconds since 2000-01-01 (naive = UTC, zoned =
its instant, as the CSV path writes them).

`plan()` returns None for any (arrow type, column type) pair without an exact encoder here
(floats into a different width, nanosecond timestamps, decimal256, uuid...): the caller then
uses the CSV path for that file.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from finops.warehouse.arrow_copy import normalise_batch
from finops.warehouse.base import DataRefused

SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
TRAILER = b"\xff\xff"

MAX_BATCH_BYTES = 256 << 20
_PG_EPOCH_US = 946_684_800_000_000  # 2000-01-01 - 1970-01-01, microseconds
_PG_EPOCH_DAYS = 10_957
_NUMERIC_NEG = 0x4000
_MASK32 = np.uint64(0xFFFFFFFF)

_TEXT = {"text", "varchar", "bpchar"}
_INTS = {"int2": (pa.int16(), ">i2"), "int4": (pa.int32(), ">i4"), "int8": (pa.int64(), ">i8")}
_FLOATS = {"float4": (pa.float32(), ">f4"), "float8": (pa.float64(), ">f8")}

Encoder = Callable[[pa.Array], list[pa.Array]]


def _length_header(lengths: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    """Big-endian int32 field lengths, -1 (0xFFFFFFFF) for NULL."""
    out = lengths.astype(">i4")
    if valid is not None:
        out[~valid] = -1
    return out


def _valid_mask(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _fixed_fields(values: np.ndarray, valid: np.ndarray | None) -> list[pa.Array]:
    """Rows of fixed-width big-endian payloads -> binary fields (length header + payload, or
    just the -1 header for NULL)."""
    n = values.shape[0]
    payload = np.ascontiguousarray(values).view(np.uint8).reshape(n, -1)
    width = payload.shape[1]
    rows = np.empty((n, 4 + width), dtype=np.uint8)
    rows[:, :4] = np.full(n, width, dtype=">i4").view(np.uint8).reshape(n, 4)
    rows[:, 4:] = payload
    if valid is None:
        data = rows.reshape(-1)
        offsets = np.arange(0, (n + 1) * (4 + width), 4 + width, dtype=np.int32)
    else:
        rows[~valid, :4] = 0xFF
        keep = np.ones((n, 4 + width), dtype=bool)
        keep[~valid, 4:] = False
        data = rows[keep]
        sizes = np.where(valid, 4 + width, 4).astype(np.int32)
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(sizes, out=offsets[1:])
    return [pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])]


def _text(arr: pa.Array, prefix: bytes = b"") -> list[pa.Array]:
    """Text-like field: length header, optional prefix byte(s) (jsonb's version), UTF-8 bytes."""
    if pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.string())
    n = len(arr)
    valid = _valid_mask(arr)
    offs = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=arr.offset + n + 1)[arr.offset :]
    lengths = np.diff(offs)
    if valid is not None and lengths[~valid].any():  # arrow lets a NULL slot span bytes: drop them
        arr = arr.fill_null("")
        offs = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=arr.offset + n + 1)[arr.offset :]
        lengths = np.diff(offs)
    header = _length_header(lengths + len(prefix), valid)
    head = pa.Array.from_buffers(
        pa.binary(), n, [None, pa.py_buffer(np.arange(0, 4 * n + 1, 4, dtype=np.int32)), pa.py_buffer(header)]
    )
    parts = [head]
    if prefix:
        pre = pa.scalar(prefix, pa.binary())
        parts.append(pa.repeat(pre, n) if valid is None else pc.if_else(pa.array(valid), pre, b""))
    # a NULL's offsets span no bytes, so the value array needs no filling; only its validity goes
    parts.append(
        pa.Array.from_buffers(pa.binary(), n, [None, arr.buffers()[1], arr.buffers()[2]], offset=arr.offset)
    )
    return parts


def _ints(np_type: str, arrow_type: pa.DataType) -> Encoder:
    def enc(arr: pa.Array) -> list[pa.Array]:
        try:
            arr = arr.cast(arrow_type)  # safe cast: an out-of-range value raises, as the server would
        except pa.ArrowInvalid as e:
            raise DataRefused(str(e)) from e
        vals = arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np_type)
        return _fixed_fields(vals, _valid_mask(arr))

    return enc


def _floats(np_type: str) -> Encoder:
    def enc(arr: pa.Array) -> list[pa.Array]:
        vals = arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np_type)
        return _fixed_fields(vals, _valid_mask(arr))

    return enc


def _bools(arr: pa.Array) -> list[pa.Array]:
    vals = arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint8)
    return _fixed_fields(vals, _valid_mask(arr))


def _timestamps(arr: pa.Array) -> list[pa.Array]:
    if arr.type.unit != "us":
        arr = arr.cast(pa.timestamp("us", tz=arr.type.tz))  # s / ms -> us is exact
    us = arr.cast(pa.int64()).fill_null(_PG_EPOCH_US).to_numpy(zero_copy_only=False)
    return _fixed_fields((us - _PG_EPOCH_US).astype(">i8"), _valid_mask(arr))


def _dates(arr: pa.Array) -> list[pa.Array]:
    days = arr.cast(pa.date32()).cast(pa.int32()).fill_null(_PG_EPOCH_DAYS).to_numpy(zero_copy_only=False)
    return _fixed_fields((days.astype(np.int64) - _PG_EPOCH_DAYS).astype(">i4"), _valid_mask(arr))


def _decimal_limbs(arr: pa.Array, valid: np.ndarray | None) -> tuple[np.ndarray, list[np.ndarray]]:
    """decimal128 array -> (negative?, magnitude as five 32-bit limbs, least significant first);
    NULL slots (whose bytes arrow leaves undefined) read as zero."""
    words = np.frombuffer(arr.buffers()[1], dtype=np.uint64, count=2 * (arr.offset + len(arr)))
    words = words.reshape(-1, 2)[arr.offset :]
    lo = words[:, 0].copy()
    hi = words[:, 1].copy()
    if valid is not None:
        lo[~valid] = 0
        hi[~valid] = 0
    neg = hi >= np.uint64(1 << 63)
    if neg.any():
        # two's complement negation on the 128-bit value: ~x + 1, carrying into hi when lo wraps
        nlo = ~lo[neg] + np.uint64(1)
        nhi = ~hi[neg] + (nlo == 0).astype(np.uint64)
        lo[neg] = nlo
        hi[neg] = nhi
    limbs = [lo & _MASK32, lo >> np.uint64(32), hi & _MASK32, hi >> np.uint64(32), np.zeros_like(lo)]
    return neg, limbs


def _numeric_header(n: int, groups: int, frac_groups: int, neg: np.ndarray, scale: int) -> np.ndarray:
    header = np.empty((n, 4), dtype=">i2")
    header[:, 0] = groups
    header[:, 1] = groups - frac_groups - 1  # weight of the first digit
    header[:, 2] = np.where(neg, _NUMERIC_NEG, 0)
    header[:, 3] = scale
    return header


def _numeric_digits_small(mag: np.ndarray, scale: int, pad: int) -> tuple[np.ndarray, int]:
    """Base-10000 digits of magnitudes below 2**64 (scale <= 15): integer and fraction parts
    split first, so scaling the fraction by 10^pad cannot overflow."""
    ip, fp = np.divmod(mag, np.uint64(10**scale))
    fp *= np.uint64(10**pad)
    frac_groups = (scale + pad) // 4
    int_groups = max(1, -(-len(str(int(ip.max()))) // 4)) if len(ip) else 1
    groups = int_groups + frac_groups
    digits = np.empty((len(mag), groups), dtype=">i2")
    base = np.uint64(10_000)
    for g in range(groups - 1, int_groups - 1, -1):
        fp, d = np.divmod(fp, base)
        digits[:, g] = d
    for g in range(int_groups - 1, -1, -1):
        ip, d = np.divmod(ip, base)
        digits[:, g] = d
    return digits, frac_groups


def _numeric_digits_wide(
    limbs: list[np.ndarray], precision: int, scale: int, pad: int
) -> tuple[np.ndarray, int]:
    """Base-10000 digits of any decimal128 magnitude by long division on 32-bit limbs."""
    n = len(limbs[0])
    if pad:
        mul = np.uint64(10**pad)
        carry = np.zeros(n, dtype=np.uint64)
        for i in range(5):
            t = limbs[i] * mul + carry
            limbs[i] = t & _MASK32
            carry = t >> np.uint64(32)
    frac_groups = (scale + pad) // 4
    groups = max(-(-(precision + pad) // 4), frac_groups + 1)
    base = np.uint64(10_000)
    digits = np.zeros((n, groups), dtype=">i2")
    top = 4
    while top > 0 and not limbs[top].any():
        top -= 1
    for g in range(groups - 1, -1, -1):  # least significant digit first
        rem = np.zeros(n, dtype=np.uint64)
        for i in range(top, -1, -1):
            t = (rem << np.uint64(32)) | limbs[i]
            limbs[i] = t // base
            rem = t % base
        digits[:, g] = rem
        while top > 0 and not limbs[top].any():
            top -= 1
    if limbs[0].any() or top > 0:
        raise DataRefused(f"a decimal value has more than {precision} digits, which its column cannot hold")
    return digits, frac_groups


def _numerics(arr: pa.Array) -> list[pa.Array]:
    """decimal128(p, s) -> NUMERIC wire form: ndigits, weight, sign, dscale, base-10000 digits.

    The decimal point must fall on a base-10000 digit boundary, so the fraction is scaled by
    10^pad; digits come from exact integer division. Leading and trailing zero digits are left
    in: numeric_recv strips them (make_result)."""
    precision, scale = arr.type.precision, arr.type.scale
    valid = _valid_mask(arr)
    neg, limbs = _decimal_limbs(arr, valid)
    pad = (-scale) % 4
    if scale <= 15 and not (limbs[2].any() or limbs[3].any()):
        digits, frac_groups = _numeric_digits_small(limbs[0] | (limbs[1] << np.uint64(32)), scale, pad)
    else:
        digits, frac_groups = _numeric_digits_wide(limbs, precision, scale, pad)
    header = _numeric_header(len(arr), digits.shape[1], frac_groups, neg, scale)
    body = np.concatenate([header.view(np.uint8), digits.view(np.uint8)], axis=1)
    return _fixed_fields(body, valid)


def _numeric_from_int(arr: pa.Array) -> list[pa.Array]:
    return _numerics(arr.cast(pa.decimal128(38, 0)))


def _encoder(arrow_type: pa.DataType, pg_type: str) -> Encoder | None:
    """The exact encoder for an arrow type into a column of `pg_type` (pg_type.typname)."""
    t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    stringy = pa.types.is_string(t) or pa.types.is_large_string(t)
    if pg_type in _TEXT or pg_type == "json":
        return _text if stringy else None
    if pg_type == "jsonb":
        return (lambda a: _text(a, b"\x01")) if stringy else None
    if pg_type == "numeric":
        if pa.types.is_decimal128(t) and t.scale >= 0:
            return _numerics
        return _numeric_from_int if pa.types.is_integer(t) else None
    if pg_type in ("timestamp", "timestamptz"):
        return _timestamps if pa.types.is_timestamp(t) and t.unit in ("s", "ms", "us") else None
    if pg_type == "date":
        return _dates if pa.types.is_date(t) else None
    if pg_type in _INTS:
        at, np_type = _INTS[pg_type]
        return _ints(np_type, at) if pa.types.is_integer(t) else None
    if pg_type in _FLOATS:
        at, np_type = _FLOATS[pg_type]
        return _floats(np_type) if t == at else None  # float32 -> float8 would not match the text path
    if pg_type == "bool":
        return _bools if pa.types.is_boolean(t) else None
    return None


@dataclass(frozen=True)
class BinaryPlan:
    encoders: tuple[Encoder, ...]

    def encode(self, batch: pa.RecordBatch) -> memoryview:
        """One batch as binary COPY rows (no signature / trailer), a view on arrow's buffer."""
        batch = normalise_batch(batch)
        fields = [part for i, enc in enumerate(self.encoders) for part in enc(batch.column(i))]
        count = pa.scalar(struct.pack(">h", len(self.encoders)), pa.binary())
        rows = pc.binary_join_element_wise(count, *fields, b"")
        offsets = np.frombuffer(rows.buffers()[1], dtype=np.int32, count=rows.offset + len(rows) + 1)
        start, end = int(offsets[rows.offset]), int(offsets[-1])
        return memoryview(rows.buffers()[2])[start:end]

    def chunks(self, batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[int, bytes | memoryview]]:
        """(rows, payload): the signature, one payload per batch, then the trailer."""
        yield 0, SIGNATURE
        for b in batches:
            for part in _split(b):
                yield part.num_rows, self.encode(part)
        yield 0, TRAILER


def _split(batch: pa.RecordBatch, max_bytes: int | None = None) -> Iterator[pa.RecordBatch]:
    """The batch in slices small enough that one encoded slice stays far below the 2 GiB
    a binary array's 32-bit offsets can address (only huge text values ever need this)."""
    max_bytes = MAX_BATCH_BYTES if max_bytes is None else max_bytes
    if batch.num_rows == 0:
        return
    if batch.num_rows == 1 or batch.nbytes <= max_bytes:
        yield batch
        return
    half = batch.num_rows // 2
    yield from _split(batch.slice(0, half), max_bytes)
    yield from _split(batch.slice(half), max_bytes)


def plan(schema: pa.Schema, pg_types: dict[str, str]) -> BinaryPlan | None:
    """Encoders for every column of `schema` into columns typed `pg_types` (name -> typname),
    or None when one column has no exact binary encoding (use CSV)."""
    encoders = []
    for field in schema:
        enc = _encoder(field.type, pg_types.get(field.name, ""))
        if enc is None:
            return None
        encoders.append(enc)
    return BinaryPlan(tuple(encoders))

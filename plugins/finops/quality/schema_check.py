"""Column presence and physical types of staging parquet files, read from footers only.

Why before GX: a missing column or money stored as text/float would make every
expectation on it error out; we name the column and the problem instead, and GX then runs
the rules whose columns are sound.
"""

from __future__ import annotations

from pathlib import Path

from finops.focus.schema import COLUMNS, Kind


def _type_ok(kind: Kind, t) -> bool:
    import pyarrow as pa

    if kind in (Kind.MONEY, Kind.QUANTITY):
        return pa.types.is_decimal(t)  # exact: floats would lose cents
    if kind is Kind.TIMESTAMP:
        return pa.types.is_timestamp(t)
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def check_files(files: list[Path]) -> tuple[list[str], set[str]]:
    """(failures, bad_columns): problems per file, and the columns no rule may read."""
    import pyarrow.parquet as pq

    failures: list[str] = []
    bad: set[str] = set()
    for f in files:
        try:
            schema = pq.read_schema(f)
        except Exception as e:  # corrupt / truncated / not parquet: name the file, keep going
            failures.append(f"staging: cannot read {Path(f).name}: {type(e).__name__}: {str(e)[:200]}")
            continue
        names = set(schema.names)
        for c in COLUMNS:
            if c.snake not in names:
                failures.append(f"{c.snake}: column missing from {Path(f).name}")
                bad.add(c.snake)
            elif not _type_ok(c.kind, schema.field(c.snake).type):
                failures.append(
                    f"{c.snake}: expected {c.kind.value} type, got {schema.field(c.snake).type} in {Path(f).name}"
                )
                bad.add(c.snake)
        known = {c.snake for c in COLUMNS}
        for extra in sorted(names - known):
            failures.append(f"{extra[:80]!r}: unexpected column in {Path(f).name}")
    return failures, bad

"""Load a generated batch through the real spine into a warehouse (DuckDB or PostgreSQL)."""

from __future__ import annotations

from decimal import Decimal

from finops.ingest import RawBatch, load_batch


def load_twice(wh, converter, files, *, source: str, provider: str, period: str = "2026-10"):
    """Load, then load the same delivery again; returns (first entry, second entry, (sum, rows))."""
    batch = RawBatch(source=source, provider=provider, billing_period=period, files=list(files), fingerprint="gen-1")
    first = load_batch(wh, batch, converter)
    second = load_batch(wh, batch, converter, force=True)  # forced re-run: rows must be identical, not doubled
    total, n = wh.query("SELECT sum(billed_cost), count(*) FROM focus_costs WHERE x_source = ?", [source])[0]
    return first, second, (Decimal(total), n)

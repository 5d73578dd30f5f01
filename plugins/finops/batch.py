"""The contract between billing extractors, converters and the spine: what an extractor hands
over (`RawBatch`), what a converter is (`Converter`, pure DuckDB SQL text) and what it is told
(`ConvertContext`), and the error a bad delivery raises (`ConversionError`).

Kept below every layer that uses it: `finops.sources` builds RawBatches, `finops.focus` builds
Converters, `finops.ingest` (the spine) takes both; none of them imports another to get these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from finops.exceptions import DataRefused


@dataclass
class RawBatch:
    """What an extractor hands to the spine: one delivery of one (source, billing period)."""

    source: str
    provider: str  # "aws" | "gcp" | "azure" | "lambda"
    billing_period: str  # "YYYY-MM"
    files: list[Path]
    fingerprint: str  # stable id of this delivery (assembly id + etags, export run id ...)
    manifest_key: str | None = None
    assembly_id: str | None = None
    currency_hint: str | None = None


@dataclass
class ConvertContext:
    source: str
    provider: str
    billing_period: str
    load_id: str
    # Filled by the spine after reading the raw schema: column name -> DuckDB type.
    # Converters use it to tolerate optional columns an export left out.
    raw_columns: Mapping[str, str] = field(default_factory=dict)
    # Filled by the spine: the variant the converter detected (Converter.variant), and the
    # converter's SELECT over the raw view (what the spine's own counts re-read when needed).
    variant: str | None = None
    converted_sql: str = ""


@runtime_checkable
class Converter(Protocol):
    """One per provider format; pure (only DuckDB SQL text), lives in finops/focus/.

    Optional extras the spine honours when present (read with getattr: a converter without
    them still works):
    - `required_raw_columns: tuple[str, ...]` checked before conversion (clear error);
    - `normalize_sql(raw, columns) -> str`: a SELECT over `raw` renaming / typing columns
      (legacy CUR -> CUR 2.0 names); its result is what focus_sql and the total see;
    - `variant(columns: Sequence[str]) -> str`: the export variant detected from the column
      names AS DELIVERED (before normalize_sql), e.g. "EA (Cost, BillingCurrency)"; stored in
      load_log.variant, said in the load's log line and in a quarantine report;
    - `derived_counts_sql(raw) -> str`: a DuckDB query over the (normalised) raw view yielding
      rows (column VARCHAR, rows BIGINT): how many rows got a FOCUS column the export lacks
      filled in; stored in load_log.derived_columns and said in the load's warning.
    """

    name: str

    def reader_sql(self, files: list[str]) -> str: ...

    def focus_sql(self, raw: str, ctx: ConvertContext) -> str: ...

    def raw_billed_totals_sql(self, raw: str) -> str:
        """SELECT (currency, exact billed total) per currency of `raw`: see
        finops.focus.projection.raw_totals_by_currency."""
        ...


class ConversionError(DataRefused, ValueError):
    """The raw files cannot be converted (corrupt, truncated, missing columns ...)."""

"""Provider-native FOCUS exports (GCP FOCUS view / export, Azure FOCUS export) -> our table.

The provider already did the mapping; what is left is (1) the spec's PascalCase names to
our snake_case, (2) exact types (every column is read as text first, then cast once, so
money never goes through a float), (3) columns a provider's version lacks become NULL,
(4) the provider's own Tags representation to one JSON object, and (5) our x_ lineage.

Missing columns: the raw rows are UNION ALL BY NAME'd under a zero-row template holding
every FOCUS column as VARCHAR, so an older export version (no ContractedCost, ...) still
binds and yields NULLs instead of failing. Tags and credits arrays are excluded from the
template: their type is provider-specific and handled by the subclass.
"""

from __future__ import annotations

from finops.focus.projection import files_list, lineage, lit, raw_totals_by_currency, select_list
from finops.focus.schema import FOCUS_COLUMNS, Kind

MONEY = "DECIMAL(38,10)"
_KEEP_NATIVE = {"Tags"}


def utc_ts(expr: str) -> str:
    """Any timestamp text / TIMESTAMPTZ (with or without offset, 'Z') -> naive UTC TIMESTAMP."""
    return f"timezone('UTC', CAST({expr} AS TIMESTAMPTZ))"


def template_sql(extra: dict[str, str] | None = None) -> str:
    """Zero-row relation with every FOCUS column (PascalCase) as VARCHAR, plus `extra`."""
    cols = [f'CAST(NULL AS VARCHAR) AS "{c.name}"' for c in FOCUS_COLUMNS if c.name not in _KEEP_NATIVE]
    cols += [f'CAST(NULL AS {typ}) AS "{name}"' for name, typ in (extra or {}).items()]
    return f"SELECT {', '.join(cols)} WHERE false"


class NativeFocusConverter:
    """Base converter for a provider's own FOCUS export; subclasses set the specifics."""

    name = "focus_native"
    provider = "unknown"
    file_format = "parquet"  # "csv", or "auto" (by file extension)
    # Extra raw columns the template guarantees (name -> DuckDB type), e.g. x_ columns.
    extra_columns: dict[str, str] = {}
    # FOCUS snake name -> fallback SQL when the provider leaves a mandatory value empty.
    fallbacks: dict[str, str] = {}

    # -- the Converter protocol ----------------------------------------------------------
    def reader_sql(self, files: list[str]) -> str:
        flist = files_list(files)
        fmt = self.file_format
        if fmt == "auto":
            fmt = "parquet" if all(str(f).endswith(".parquet") for f in files) else "csv"
        if fmt == "csv":
            src = f"read_csv({flist}, header = true, all_varchar = true, union_by_name = true)"
        else:
            src = f"read_parquet({flist}, union_by_name = true)"
        return f"SELECT * FROM ({template_sql(self.extra_columns)}) UNION ALL BY NAME SELECT * FROM {src}"

    def raw_billed_totals_sql(self, raw: str) -> str:
        return raw_totals_by_currency(
            raw, self.columns()["billing_currency"], f'CAST("BilledCost" AS {MONEY})'
        )

    def focus_sql(self, raw: str, ctx: object) -> str:
        return f"SELECT {select_list({**self.columns(), **lineage(ctx, self.provider)})} FROM {raw}"

    # -- mapping -------------------------------------------------------------------------
    def tags_sql(self) -> str:
        """SQL turning the raw Tags column into one JSON object text (or NULL)."""
        return 'CAST("Tags" AS VARCHAR)'

    def columns(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for c in FOCUS_COLUMNS:
            if c.name in _KEEP_NATIVE:
                continue
            ref = f"NULLIF(trim(CAST(\"{c.name}\" AS VARCHAR)), '')"
            expr = utc_ts(ref) if c.kind is Kind.TIMESTAMP else ref
            fallback = self.fallbacks.get(c.snake)
            if c.allowed:  # providers differ in case ('usage' vs 'Usage'): canonicalise
                whens = " ".join(f"WHEN {lit(a.lower())} THEN {lit(a)}" for a in c.allowed)
                expr = f"CASE lower({ref}) {whens} ELSE {fallback or ref} END"
            elif fallback:
                expr = f"COALESCE({expr}, {fallback})"
            out[c.snake] = expr
        out["tags"] = self.tags_sql()
        out.update(self.extensions())
        return out

    def extensions(self) -> dict[str, str]:
        """x_ columns (x_charge_type, x_instance_type, ...) from provider extras."""
        return {}

"""AWS's own FOCUS export (Data Exports "FOCUS 1.0/1.2 with AWS columns") -> our columns.

The export already speaks FOCUS (PascalCase names, Tags as a MAP, AWS extras like
`x_UsageType`, `x_Operation`, `x_ServiceCode`): this is mostly a rename + exact typing.
Pure SQL text, no I/O.

What the spec lets us fill, filled and counted (`derived_counts_sql`): a ServiceSubcategory the
export lacks (1.0 has no such column) or that FOCUS 1.2 does not list under the row's category,
from the CUR mapping's subcategory of the ServiceName, else the category's 'Other (...)'; and a
blank ChargeDescription from the row's service, usage type / SKU meter and operation. Units go
through finops.focus.units like the CUR mapping's. Column lists of both exports:
finops.focus.aws_columns; variants: docs/billing-exports/aws.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from finops.batch import ConvertContext
from finops.focus.aws_columns import focus_variant
from finops.focus.aws_cur_mapping import SERVICE_NAMES
from finops.focus.aws_cur_mapping import SERVICE_SUBCATEGORIES as SERVICE_SUBCATEGORIES_BY_KEY
from finops.focus.projection import other_subcategory_sql, raw_totals_by_currency
from finops.focus.schema import BY_NAME, FOCUS_COLUMNS, SERVICE_SUBCATEGORIES, Kind
from finops.focus.units import unit_sql
from finops.sql_text import sql_ident, sql_literal

DEC = "DECIMAL(38,10)"
QDEC = "DECIMAL(38,12)"
_REQUIRED = ("BilledCost", "BillingPeriodStart", "ChargePeriodStart", "BillingCurrency", "ChargeCategory")
# Recommended columns this converter fills when the export leaves them out or blank; normalize_sql
# guarantees each exists (NULL when absent), so derived_counts_sql can read them.
_ENSURED = ("ChargeDescription", "ServiceSubcategory", "ServiceCategory")
_UNITS = ("pricing_unit", "consumed_unit", "commitment_discount_unit")
_X = {  # our extension column -> AWS FOCUS export column
    "x_usage_type": "x_UsageType",
    "x_operation": "x_Operation",
}


def _find(columns: Mapping[str, str], *names: str) -> str | None:
    lower = {k.lower(): k for k in columns}
    for n in names:
        if n in columns:
            return n
        if n.lower() in lower:
            return lower[n.lower()]
    return None


def _exact(kind: Kind, expr: str) -> str | None:
    """`expr` as its exact FOCUS type when it is money, a quantity or a timestamp (naive UTC);
    None for other kinds. One spelling for normalize_sql (csv text) and focus_sql (any input)."""
    if kind in (Kind.MONEY, Kind.QUANTITY):
        return f"CAST({expr} AS {DEC if kind is Kind.MONEY else QDEC})"
    if kind is Kind.TIMESTAMP:
        return f"CAST(CAST({expr} AS TIMESTAMPTZ) AS TIMESTAMP)"
    return None


class AwsFocusConverter:
    name = "focus"
    required_raw_columns = _REQUIRED

    def reader_sql(self, files: list[str]) -> str:
        lst = ", ".join(sql_literal(f) for f in files)
        if any(".csv" in f.lower() for f in files):
            # Text only, typed by normalize_sql: a sniffed type is guessed from a sample, and a
            # BilledCost column sniffed BIGINT (its first rows all 0) read a later '1.25' as 1.
            return f"SELECT * FROM read_csv([{lst}], header = true, all_varchar = true, union_by_name = true)"
        return f"SELECT * FROM read_parquet([{lst}], union_by_name = true, hive_partitioning = false)"

    def normalize_sql(self, raw: str, columns: Mapping[str, str]) -> str:
        """Text money / quantities / timestamps (csv) typed exactly, once: focus_sql and the raw
        BilledCost total then read the very same values."""
        typed: list[str] = []
        for col in FOCUS_COLUMNS:
            src = _find(columns, col.name, col.snake)
            if src is None or not (columns.get(src) or "").upper().startswith("VARCHAR"):
                continue
            expr = _exact(col.kind, f"NULLIF(TRIM({sql_ident(src)}), '')")
            if expr is not None:
                typed.append(f"{expr} AS {sql_ident(src)}")
        star = f"* REPLACE ({', '.join(typed)})" if typed else "*"
        added: list[str] = []
        for name in _ENSURED:
            if _find(columns, name) is None:  # absent: its snake spelling, else NULL
                snake = _find(columns, BY_NAME[name].snake)
                added.append(f"{sql_ident(snake) if snake else 'CAST(NULL AS VARCHAR)'} AS {sql_ident(name)}")
        return f"SELECT {', '.join([star, *added])} FROM {raw}"

    def focus_sql(self, raw: str, ctx: ConvertContext) -> str:
        cols = ctx.raw_columns
        out: list[str] = []
        for col in FOCUS_COLUMNS:
            if col.snake == "service_subcategory":
                out.append(self._subcategory(cols))
                continue
            if col.snake == "charge_description":
                out.append(f"{_description(cols)} AS charge_description")
                continue
            src = _find(cols, col.name, col.snake)
            target = sql_ident(col.snake)
            if src is None:
                out.append(f"NULL AS {target}")
                continue
            ident = sql_ident(src)
            t = (cols.get(src) or "").upper()
            exact = _exact(col.kind, ident)
            if exact is not None:
                expr = exact
            elif col.kind is Kind.JSON:
                if t.startswith("MAP") or t.startswith("STRUCT"):
                    expr = (
                        f"CASE WHEN {ident} IS NULL OR cardinality({ident}) = 0 THEN NULL ELSE CAST(to_json({ident}) AS VARCHAR) END"
                        if t.startswith("MAP")
                        else f"CAST(to_json({ident}) AS VARCHAR)"
                    )
                else:
                    expr = f"CAST(json(NULLIF(CAST({ident} AS VARCHAR), '')) AS VARCHAR)"
            elif col.snake in _UNITS:  # AWS's CUR spellings ('Hrs', 'GB-Mo') -> FOCUS UnitFormat
                expr = unit_sql(f"CAST({ident} AS VARCHAR)")
            else:
                expr = f"NULLIF(CAST({ident} AS VARCHAR), '')"
            out.append(f"{expr} AS {target}")
        for ours, theirs in _X.items():
            src = _find(cols, theirs, ours)
            out.append(
                f"{'NULLIF(CAST(' + sql_ident(src) + ' AS VARCHAR), ' + chr(39) * 2 + ')' if src else 'NULL'} AS {ours}"
            )
        itype = _find(cols, "x_InstanceType")
        out.append(f"{sql_ident(itype) if itype else 'NULL'} AS x_instance_type")
        out.append(
            f"NULLIF(CAST({sql_ident(_find(cols, 'ChargeCategory') or 'ChargeCategory')} AS VARCHAR), '') AS x_charge_type"
        )
        out += [
            f"{sql_literal(ctx.source)} AS x_source",
            f"{sql_literal(ctx.billing_period)} AS x_billing_period",
            "'aws' AS x_provider",
            f"{sql_literal(ctx.load_id)} AS x_load_id",
        ]
        return f"SELECT {', '.join(out)} FROM {raw}"

    @staticmethod
    def _subcategory(cols: Mapping[str, str]) -> str:
        """The export's ServiceSubcategory when FOCUS 1.2 allows it under the row's category, else
        that category's 'Other (...)': AWS's FOCUS 1.0 export has no such column, and a null or
        unlisted value fails the spec (and focus-validator) and would quarantine the month."""
        sub, cat = _text(cols, "ServiceSubcategory"), _text(cols, "ServiceCategory")
        # a service the CUR mapping knows gets the same subcategory there (one per ServiceName
        # across an account's CUR and FOCUS loads), when it belongs to the row's category
        known = _case(_text(cols, "ServiceName"), _KNOWN_SUBCATEGORY)
        return (
            f"CASE WHEN {_subcategory_ok(sub, cat)} THEN {sub} WHEN {_subcategory_ok(known, cat)} THEN {known} "
            f"ELSE {other_subcategory_sql(cat)} END AS service_subcategory"
        )

    def raw_billed_totals_sql(self, raw: str) -> str:
        # the currency exactly as focus_sql maps BillingCurrency (a plain string column)
        return raw_totals_by_currency(
            raw, "NULLIF(CAST(BillingCurrency AS VARCHAR), '')", f"CAST(BilledCost AS {DEC})"
        )

    def variant(self, columns: Sequence[str]) -> str:
        return focus_variant(columns)

    def derived_counts_sql(self, raw: str) -> str:
        """(column, rows) filled in: a blank ChargeDescription; a ServiceSubcategory blank or not
        allowed under the row's ServiceCategory (normalize_sql guarantees all three columns)."""
        description, sub, cat = (f"NULLIF(TRIM(CAST({sql_ident(c)} AS VARCHAR)), '')" for c in _ENSURED)
        return (
            f'SELECT \'ChargeDescription\' AS "column", count(*) FILTER (WHERE {description} IS NULL) AS "rows" '
            f"FROM {raw} UNION ALL "
            f"SELECT 'ServiceSubcategory', count(*) FILTER (WHERE NOT {_subcategory_ok(sub, cat)}) FROM {raw}"
        )


# ServiceName -> ServiceSubcategory of the CUR mapping (finops.focus.aws_cur_mapping), for unlisted values.
_KNOWN_SUBCATEGORY = {SERVICE_NAMES[k]: SERVICE_SUBCATEGORIES_BY_KEY[k] for k in SERVICE_NAMES}


def _case(expr: str, table: dict[str, str]) -> str:
    whens = " ".join(f"WHEN {sql_literal(k)} THEN {sql_literal(v)}" for k, v in table.items())
    return f"(CASE {expr} {whens} END)"


def _subcategory_ok(sub: str, cat: str) -> str:
    """SQL: `sub` is a FOCUS 1.2 ServiceSubcategory whose parent is `cat` (both SQL text)."""
    pairs = ", ".join(sql_literal(f"{s}|{c}") for s, c in SERVICE_SUBCATEGORIES.items())
    return f"COALESCE(list_contains([{pairs}], {sub} || '|' || {cat}), false)"


def _text(cols: Mapping[str, str], *names: str) -> str:
    src = _find(cols, *names)
    return f"NULLIF(TRIM(CAST({sql_ident(src)} AS VARCHAR)), '')" if src else "CAST(NULL AS VARCHAR)"


def _description(cols: Mapping[str, str]) -> str:
    """The export's ChargeDescription, else what the row says of itself (FOCUS: SHOULD NOT be
    null): 'Amazon Elastic Compute Cloud USE1-BoxUsage:p5.48xlarge (RunInstances)', or for a
    row without usage type 'Tax: Amazon Elastic Compute Cloud'."""
    category = _text(cols, "ChargeCategory")
    derived = (
        f"concat_ws(' ', CASE WHEN {category} <> 'Usage' THEN {category} || ':' END, "
        f"COALESCE({_text(cols, 'ServiceName')}, {_text(cols, 'x_ServiceCode')}, 'AWS'), "
        f"COALESCE({_text(cols, 'x_UsageType')}, {_text(cols, 'SkuMeter')}), '(' || {_text(cols, 'x_Operation')} || ')')"
    )
    return f"COALESCE({_text(cols, 'ChargeDescription', 'charge_description')}, {derived})"

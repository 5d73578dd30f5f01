"""The validation rules for a FOCUS staging batch, derived from `finops.focus.schema` (pure data).

Why a plain rule list before Great Expectations: the rules are what we mean (column, rule,
message); `suite.py` translates them into GX expectations. Keeping them GX-free makes them
cheap to import and test, and lets the failure text name the column and rule exactly.

Every SQL fragment here is built from our own schema identifiers and from the batch's
billing period after it matched `YYYY-MM`; no data or user string is ever spliced in. Values
from config (the source name) travel as expectation value sets, which GX binds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from finops.focus.schema import COLUMNS, SERVICE_SUBCATEGORIES, Kind
from finops.orchestration.periods import check_period
from finops.quality.currencies import ISO_4217

RuleKind = Literal["not_null", "in_set", "rows"]


@dataclass(frozen=True)
class Rule:
    """One check. `column` is the column a failure names; `rule` a short stable id."""

    column: str
    rule: str
    kind: RuleKind
    message: str
    values: tuple = ()  # in_set (and set rules run as rows): the allowed values
    where: str | None = None  # rows: SQL predicate that selects the offending rows
    needs: tuple[str, ...] = field(default=())  # every column the check reads
    show_values: bool = False  # rows: quote the offending values of `column` in the message

    @property
    def key(self) -> str:
        return f"{self.column}:{self.rule}"


# GX substitutes {batch} with str.format, so a literal brace is written doubled.
_WS = "chr(32) || chr(9) || chr(10) || chr(13)"
# Larger allowed sets become a WHERE ... NOT IN filter: DuckDB hashes an IN list in a filter
# (2M rows: 0.03 s) but not inside GX's SUM(CASE WHEN NOT col IN (...)) (4 s for 182 codes).
SMALL_SET = 8


def _json_object(col: str) -> str:
    # valid JSON whose first non-blank character is "{" is an object; json_type() would parse
    # every document again (15x slower on 2M rows).
    return f"{col} IS NOT NULL AND NOT (json_valid({col}) AND starts_with(ltrim({col}, {_WS}), '{{{{'))"


def _literal(value: str) -> str:
    """A SQL string literal of one of OUR schema constants (never data or config)."""
    if any(ch in value for ch in ":{}\\"):  # ':' would read as a bind parameter, braces as format fields
        raise ValueError(f"schema constant {value!r} cannot be written into a rule query")
    return "'" + value.replace("'", "''") + "'"


def _set_rule(col: str, rule: str, message: str, values: tuple[str, ...]) -> Rule:
    if len(values) <= SMALL_SET:
        return Rule(col, rule, "in_set", message, values, needs=(col,))
    allowed = ", ".join(_literal(v) for v in values)
    where = f"{col} IS NOT NULL AND {col} NOT IN ({allowed})"
    return Rule(col, rule, "rows", message, values, where=where, needs=(col,), show_values=True)


def build_rules(billing_period: str, source: str | None = None) -> list[Rule]:
    """All rules for a batch of `source` in `billing_period`, generated from the FOCUS schema."""
    period = check_period(billing_period)
    rules: list[Rule] = []
    for c in COLUMNS:
        s = c.snake
        if not c.nullable:
            rules.append(Rule(s, "not_null", "not_null", "null values in a not-null column", needs=(s,)))
        if c.allowed:
            rules.append(_set_rule(s, "allowed_values", "values outside allowed set", tuple(c.allowed)))
        if c.kind is Kind.JSON:
            rules.append(
                Rule(s, "json_object", "rows", "not a valid JSON object", where=_json_object(s), needs=(s,))
            )
    for s in ("billing_currency", "pricing_currency"):
        rules.append(_set_rule(s, "iso_4217", "not an ISO 4217 currency code", tuple(sorted(ISO_4217))))
    sub, cat = "service_subcategory", "service_category"
    pairs = ", ".join(_literal(f"{k} | {v}") for k, v in SERVICE_SUBCATEGORIES.items())
    rules.append(
        Rule(
            sub,
            "parent_category",
            "rows",
            "subcategory does not belong to service_category",
            where=f"{sub} IS NOT NULL AND {cat} IS NOT NULL AND concat({sub}, ' | ', {cat}) NOT IN ({pairs})",
            needs=(sub, cat),
            show_values=True,
        )
    )
    bps, bpe, cps, cpe = (
        "billing_period_start",
        "billing_period_end",
        "charge_period_start",
        "charge_period_end",
    )
    rules += [
        Rule(
            bps,
            "matches_batch_period",
            "rows",
            f"billing period start not in batch period {period}",
            where=f"strftime({bps}, '%Y-%m') <> '{period}'",
            needs=(bps,),
        ),
        Rule(
            bpe,
            "after_start",
            "rows",
            "billing period end not after its start",
            where=f"{bpe} <= {bps}",
            needs=(bps, bpe),
        ),
        Rule(
            cps,
            "after_end",
            "rows",
            "charge period start not before its end",
            where=f"{cps} >= {cpe}",
            needs=(cps, cpe),
        ),
        Rule(
            cps,
            "inside_billing_period",
            "rows",
            "charge period starts before its billing period",
            where=f"{cps} < {bps}",
            needs=(cps, bps),
        ),
        Rule(
            cpe,
            "inside_billing_period",
            "rows",
            "charge period ends after its billing period",
            where=f"{cpe} > {bpe}",
            needs=(cpe, bpe),
        ),
        Rule(
            "x_billing_period",
            "matches_batch",
            "in_set",
            "rows of another billing period",
            (period,),
            needs=("x_billing_period",),
        ),
    ]
    if source is not None:
        rules.append(
            Rule(
                "x_source",
                "matches_batch",
                "in_set",
                "rows of another source",
                (source,),
                needs=("x_source",),
            )
        )
    return rules

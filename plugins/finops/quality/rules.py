"""The validation rules for a FOCUS staging batch, derived from `finops.focus.schema` (pure data).

Why a plain rule list before Great Expectations: the rules are what we mean (column, rule,
message); `suite.py` translates them into GX expectations, built-in ones wherever GX has one. Keeping them GX-free makes them
cheap to import and test, and lets the failure text name the column and rule exactly.

Every SQL fragment here is built from our own schema identifiers and from the batch's
billing period after it matched `YYYY-MM`; no data or user string is ever spliced in. Values
from config (the source name) travel as expectation value sets, which GX binds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from finops.focus.projection import nested_key_value_sql
from finops.focus.schema import COLUMNS, SERVICE_SUBCATEGORIES, Kind
from finops.periods import check_period
from finops.quality.currencies import ISO_4217

# not_null / in_set / between / pair_greater / pair_in_set run as GX's built-in expectations;
# rows is a custom SQL query (UnexpectedRowsExpectation), for checks GX has no expectation for
# (JSON shape, flat key-value values).
RuleKind = Literal["not_null", "in_set", "between", "pair_greater", "pair_in_set", "rows"]


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
    or_equal: bool = False  # pair_greater: needs[0] >= needs[1] passes too

    @property
    def key(self) -> str:
        return f"{self.column}:{self.rule}"


def _text(value: str) -> str:
    """A SQL string expression for OUR constant `value`, with the characters a rule query may not
    hold literally (see `_literal`) spelled as chr(n)."""
    parts, run = [], ""
    for ch in value:
        if ch in ":{}\\":
            if run:
                parts.append(_literal(run))
                run = ""
            parts.append(f"chr({ord(ch)})")
        else:
            run += ch
    if run:
        parts.append(_literal(run))
    return " || ".join(parts) or "''"


# Non-standard JSON that DuckDB's parser (yyjson in its lenient mode) accepts: NaN / Infinity and
# trailing commas. ECMA-404, which FOCUS KeyValueFormat requires, has none of them, and PostgreSQL's
# jsonb refuses them. The text test first (rare), then the same test with string literals removed,
# so a tag value "NaN" or "a,]" stays valid.
_NON_STANDARD = r"[Nn][Aa][Nn]|[Ii][Nn][Ff]|,\s*[\]}]"  # character classes: faster than (?i) in RE2
_STRING = r'"([^"\\]|\\.)*"'


def _non_standard_json(col: str) -> str:
    bad = _text(_NON_STANDARD)
    return (
        f"CASE WHEN NOT regexp_matches({col}, {bad}) THEN false "
        f"ELSE regexp_matches(regexp_replace({col}, {_text(_STRING)}, '', 'g'), {bad}) END"
    )


def _json_object(col: str) -> str:
    # CASE, so json_type() only sees valid documents (it raises on the others). Measured on 2M
    # rows (bench/validate.py): 0.01 s on the warehouse's JSON column, 0.6 s on staging VARCHAR,
    # where the earlier "first non-blank character is {" test took 1.0-1.3 s: ltrim() with a
    # character set costs more than parsing the document.
    text = f"CAST({col} AS VARCHAR)"
    return (
        f"{col} IS NOT NULL AND (CASE WHEN json_valid({col}) "
        f"THEN json_type({col}) <> 'OBJECT' OR ({_non_standard_json(text)}) ELSE true END)"
    )


def _literal(value: str) -> str:
    """A SQL string literal of one of OUR schema constants (never data or config)."""
    if any(ch in value for ch in ":{}\\"):  # ':' would read as a bind parameter, braces as format fields
        raise ValueError(f"schema constant {value!r} cannot be written into a rule query")
    return "'" + value.replace("'", "''") + "'"


def _set_rule(col: str, rule: str, message: str, values: tuple[str, ...]) -> Rule:
    # GX's ExpectColumnValuesToBeInSet binds the set; with 182 ISO 4217 codes it costs
    # ~0.2 s per column on 1M rows (bench/validate.py), cheap enough to prefer the built-in
    return Rule(col, rule, "in_set", message, values, needs=(col,))


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
            rules.append(
                Rule(
                    s,
                    "flat_values",
                    "rows",
                    "key-value values must be strings, numbers, booleans or null (an object or array inside)",
                    where=nested_key_value_sql(f"CAST({s} AS VARCHAR)"),
                    needs=(s,),
                    show_values=True,
                )
            )
    for s in ("billing_currency", "pricing_currency"):
        rules.append(_set_rule(s, "iso_4217", "not an ISO 4217 currency code", tuple(sorted(ISO_4217))))
    sub, cat = "service_subcategory", "service_category"
    rules.append(
        Rule(
            sub,
            "parent_category",
            "pair_in_set",
            "subcategory does not belong to service_category",
            tuple(SERVICE_SUBCATEGORIES.items()),
            needs=(sub, cat),
        )
    )
    bps, bpe, cps, cpe = (
        "billing_period_start",
        "billing_period_end",
        "charge_period_start",
        "charge_period_end",
    )
    y, m = (int(x) for x in period.split("-"))
    # naive, like the columns: FOCUS timestamps are stored as UTC without a zone
    start = datetime(y, m, 1)  # noqa: DTZ001
    next_start = datetime(y + (m == 12), m % 12 + 1, 1)  # noqa: DTZ001
    rules += [
        Rule(
            bps,
            "matches_batch_period",
            "between",
            f"billing period start not in batch period {period}",
            (start, next_start),  # [start, next month's start)
            needs=(bps,),
        ),
        # pair_greater: needs[0] > needs[1] (or >=); rows missing either value are not judged
        Rule(bpe, "after_start", "pair_greater", "billing period end not after its start", needs=(bpe, bps)),
        Rule(cps, "after_end", "pair_greater", "charge period start not before its end", needs=(cpe, cps)),
        Rule(
            cps,
            "inside_billing_period",
            "pair_greater",
            "charge period starts before its billing period",
            needs=(cps, bps),
            or_equal=True,
        ),
        Rule(
            cpe,
            "inside_billing_period",
            "pair_greater",
            "charge period ends after its billing period",
            needs=(bpe, cpe),
            or_equal=True,
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

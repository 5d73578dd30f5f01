"""Turn `rules.Rule`s into a Great Expectations ExpectationSuite (GX imported lazily).

Each expectation carries `meta.rule = Rule.key`, so a GX result maps back to the column and
rule that the failure message names.
"""

from __future__ import annotations

from typing import Any

from finops.quality.rules import Rule


def to_expectation(rule: Rule) -> Any:
    import great_expectations.expectations as gxe

    meta = {"rule": rule.key, "column": rule.column, "message": rule.message}
    if rule.kind == "not_null":
        return gxe.ExpectColumnValuesToNotBeNull(column=rule.column, meta=meta)
    if rule.kind == "in_set":
        return gxe.ExpectColumnValuesToBeInSet(column=rule.column, value_set=list(rule.values), meta=meta)
    if rule.kind == "between":
        low, high = rule.values
        return gxe.ExpectColumnValuesToBeBetween(
            column=rule.column, min_value=low, max_value=high, strict_max=True, meta=meta
        )
    if rule.kind == "pair_greater":
        a, b = rule.needs
        return gxe.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A=a, column_B=b, or_equal=rule.or_equal, ignore_row_if="either_value_is_missing", meta=meta
        )
    if rule.kind == "pair_in_set":
        a, b = rule.needs
        return gxe.ExpectColumnPairValuesToBeInSet(
            column_A=a,
            column_B=b,
            value_pairs_set=[tuple(p) for p in rule.values],
            ignore_row_if="either_value_is_missing",
            meta=meta,
        )
    if rule.kind == "rows":
        # sampled values are cut to 100 characters: a 10 kB hostile string stays out of reports
        cols = ", ".join(
            f"left({c}, 100) AS {c}" if rule.show_values else c for c in dict.fromkeys(rule.needs)
        )
        return gxe.UnexpectedRowsExpectation(
            unexpected_rows_query=f"SELECT {cols} FROM {{batch}} WHERE {rule.where}",
            description=f"{rule.column}: {rule.message}",
            meta=meta,
        )
    raise ValueError(f"unknown rule kind {rule.kind!r}")


def build_suite(rules: list[Rule], name: str = "focus_staging") -> Any:
    """A GX ExpectationSuite holding one expectation per rule, in rule order."""
    import great_expectations as gx

    # the constructor skips add_expectation's pairwise "already added?" comparison (O(n^2)
    # pydantic dumps: 1.5 s for our ~40 rules); rule keys are unique by construction
    return gx.ExpectationSuite(name=name, expectations=[to_expectation(r) for r in rules])

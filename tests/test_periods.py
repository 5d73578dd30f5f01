from __future__ import annotations

from datetime import date, datetime

import pytest

from finops.periods import (
    PeriodError,
    check_period,
    default_periods,
    parse_period,
    period_bounds,
    resolve_periods,
    shift,
)


def test_default_window_includes_previous_month_early_in_month():
    assert default_periods(date(2026, 11, 3)) == ["2026-10", "2026-11"]
    assert default_periods(date(2026, 11, 14)) == ["2026-10", "2026-11"]
    assert default_periods(date(2026, 11, 15)) == ["2026-11"]
    assert default_periods(date(2027, 1, 2)) == ["2026-12", "2027-01"]


def test_shift_and_bounds_cross_year():
    assert shift("2026-01", -1) == "2025-12"
    assert shift("2026-12", 1) == "2027-01"
    assert period_bounds("2026-12") == (datetime(2026, 12, 1), datetime(2027, 1, 1))


@pytest.mark.parametrize(
    "bad", ["2026-13", "2026-1", "26-01", "2026-00", "'; drop table x;--", "", "0000-01", "9999-12"]
)
def test_bad_period_is_a_clear_error(bad):
    with pytest.raises(PeriodError, match="YYYY-MM"):
        parse_period(bad)


def test_resolve_periods_param_forms():
    today = date(2026, 11, 20)
    assert resolve_periods("", today) == ["2026-11"]
    assert resolve_periods(None, today) == ["2026-11"]
    assert resolve_periods("2026-09", today) == ["2026-09"]
    assert resolve_periods("2026-09,2026-08,2026-09", today) == ["2026-08", "2026-09"]
    assert resolve_periods(["2026-07"], today) == ["2026-07"]


@pytest.mark.parametrize("bad", ["2026-10\n", " 2026-10", "2026-10 ", "0000-01", None, 202610])
def test_check_period_takes_the_exact_string_only(bad):
    """The one check before a period sits in SQL text, an S3 prefix or a path: no whitespace, no
    trailing newline (a `$` regex let '2026-10\\n' through), a year in range, a string."""
    with pytest.raises(PeriodError, match="YYYY-MM"):
        check_period(bad)
    assert check_period("2026-10") == "2026-10"

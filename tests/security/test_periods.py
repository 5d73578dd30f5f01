"""Billing periods: ASCII digits only, before a period becomes SQL, an S3 prefix or a folder."""

from __future__ import annotations

import re
from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from finops.periods import PeriodError, check_period, parse_period, resolve_periods
from finops.quality.quarantine import quarantine_dir
from tests.fixtures.hostile import hostile_text

UNICODE_DIGITS = [
    "\uff12\uff10\uff12\uff16-10",
    "\u0662\u0660\u0662\u0666-10",
    "\u0968\u0966\u0968\u0966-10",
    "2026-\u0661\u0660",
    "\U0001d7d0\U0001d7ce\U0001d7d0\U0001d7d4-10",
]


@pytest.mark.parametrize("text", UNICODE_DIGITS)
def test_unicode_digits_are_not_a_period(text, finops_home):
    for check in (check_period, parse_period, lambda t: resolve_periods(t, date(2026, 11, 1))):
        with pytest.raises(PeriodError):
            check(text)
    with pytest.raises(PeriodError):
        quarantine_dir("aws-main", text, "load-1")
    assert not (finops_home / "quarantine").exists() or not any((finops_home / "quarantine").rglob("*"))


_ASCII_PERIOD = re.compile(r"[0-9]{4}-(0[1-9]|1[0-2])")


@given(text=st.one_of(hostile_text(4), st.from_regex(r"\A\d{4}-\d{2}\Z"), st.just("2026-10")))
def test_property_a_period_is_exactly_ascii_yyyy_mm(text):
    try:
        out = check_period(text)
    except PeriodError:
        assert not _ASCII_PERIOD.fullmatch(text) or not 1970 <= int(text[:4]) <= 9998
        return
    assert out == text and _ASCII_PERIOD.fullmatch(text) and text.isascii()


@given(items=st.lists(st.one_of(hostile_text(3), st.from_regex(r"\A\d{4}-\d{2}\Z")), max_size=4))
def test_property_resolved_periods_are_ascii(items):
    try:
        periods = resolve_periods(",".join(items), date(2026, 11, 20))
    except PeriodError:
        return
    assert all(_ASCII_PERIOD.fullmatch(p) for p in periods)

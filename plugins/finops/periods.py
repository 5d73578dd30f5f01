"""Billing-period arithmetic (pure). A period is 'YYYY-MM' (UTC calendar month)."""

from __future__ import annotations

import re
from datetime import date, datetime

from finops.exceptions import ConfigError

# ASCII digits only: \d and int() also take Arabic-Indic, Devanagari, full-width ... digits, and
# '٢٠٢٦-10' passed as a period (and named a quarantine folder).
_PERIOD = re.compile(r"^([0-9]{4})-(0[1-9]|1[0-2])$")


class PeriodError(ConfigError):
    """A billing period that is not YYYY-MM (a Param or a file name): a retry cannot fix it."""


def parse_period(text: str) -> tuple[int, int]:
    m = _PERIOD.match(text.strip())
    if not m:
        raise PeriodError(f"billing_period must look like YYYY-MM (e.g. 2026-10), got {text!r}")
    year = int(m.group(1))
    if not 1970 <= year <= 9998:  # 0000-01 shifted to '-001-12'; 9999-12 has no end (datetime stops at 9999)
        raise PeriodError(
            f"billing_period must look like YYYY-MM with a year from 1970 to 9998, got {text!r}"
        )
    return year, int(m.group(2))


def check_period(period: object) -> str:
    """`period` itself when it is exactly 'YYYY-MM' (no whitespace, no trailing newline): the one
    check before a period sits in SQL text, an S3 prefix or a file path."""
    if not isinstance(period, str) or _PERIOD.fullmatch(period) is None:
        raise PeriodError(f"billing_period must be YYYY-MM, got {period!r}")
    parse_period(period)  # the year range
    return period


def shift(period: str, months: int) -> str:
    y, m = parse_period(period)
    idx = y * 12 + (m - 1) + months
    return f"{idx // 12:04d}-{idx % 12 + 1:02d}"


def period_of(day: date | datetime) -> str:
    return f"{day.year:04d}-{day.month:02d}"


def period_bounds(period: str) -> tuple[datetime, datetime]:
    """[start, end) of the month as naive UTC datetimes (FOCUS BillingPeriodStart / End)."""
    y, m = parse_period(period)
    ny, nm = (y + 1, 1) if m == 12 else (y, m + 1)
    return datetime(y, m, 1), datetime(ny, nm, 1)  # noqa: DTZ001 - naive UTC by convention


def default_periods(today: date, restatement_days: int = 14) -> list[str]:
    """The current period, plus the previous one during the first `restatement_days` days of a
    month: providers restate (and deliver late rows for) the month just closed."""
    cur = period_of(today)
    return [shift(cur, -1), cur] if today.day <= restatement_days else [cur]


def resolve_periods(param: str | list[str] | None, today: date) -> list[str]:
    """Params value -> sorted unique periods. Accepts '', None, 'YYYY-MM', 'YYYY-MM,YYYY-MM'
    or a list; empty means the default window."""
    if param is None or (isinstance(param, str) and not param.strip()) or param == []:
        return default_periods(today)
    items = param if isinstance(param, list) else param.split(",")
    out = sorted({f"{parse_period(p)[0]:04d}-{parse_period(p)[1]:02d}" for p in items if p.strip()})
    if not out:
        return default_periods(today)
    return out

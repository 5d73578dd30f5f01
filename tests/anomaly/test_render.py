"""Anomaly -> AlertEvent text: an outage reads as a drop, a launch as new spend."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime
from decimal import Decimal

from finops.anomaly.render import alert_event
from finops.anomaly.state import Anomaly


def _anomaly(actual: str, expected: str, pct: float) -> Anomaly:
    day = date(2026, 10, 10)
    delta = Decimal(actual) - Decimal(expected)
    return Anomaly(
        "anm-1",
        "service",
        "Amazon EC2",
        "amortised",
        "USD",
        "open",
        day,
        day,
        day,
        Decimal(actual),
        Decimal(expected),
        delta,
        delta,
        pct,
        9.0,
        "warning",
        datetime(2026, 10, 10),
        datetime(2026, 10, 10),
    )


def test_increase_reads_plus():
    ev = alert_event(_anomaly("900", "300", 2.0))
    assert ev.title == "Cost anomaly: service Amazon EC2 +200%"
    assert ev.facts["Change"] == "+600.00 USD (+200%)"


def test_outage_reads_minus_not_plus_minus():
    ev = alert_event(_anomaly("120", "300", -0.6))
    assert ev.title == "Cost anomaly: service Amazon EC2 -60%"
    assert ev.facts["Change"] == "-180.00 USD (-60%)"
    assert "+-" not in ev.title


def test_launch_reads_new_spend():
    ev = alert_event(replace(_anomaly("500", "0", float("inf"))))
    assert ev.title.endswith("new spend")


def test_large_outage_is_critical_small_dip_warning():
    from finops.anomaly.state import severity

    assert severity(Decimal("-5000"), -0.9, 50.0) == "critical"
    assert severity(Decimal("-120"), -0.6, 50.0) == "warning"
    assert severity(Decimal("600"), 2.0, 50.0) == "critical"

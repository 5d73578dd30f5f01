"""Expiry calendar (pure): days left, warn windows, the daily bill after the end, and the
low-utilisation alert, on hand-checked numbers."""

from __future__ import annotations

from datetime import date
from decimal import Decimal as D

import pytest

from finops.commitments.expiry import Commitment, alerts_due, expiry_calendar
from finops.commitments.usage import CommitmentLine, utilisation

EC2 = "Amazon Elastic Compute Cloud"


def _line(provider: str, cid: str, day: int, status: str, effective: str, list_: str) -> CommitmentLine:
    return CommitmentLine(
        provider=provider, account="a", currency="USD", day=date(2026, 10, day), service_name=EC2,
        instance_type="g5.xlarge", pricing_category="Committed", status=status, commitment_id=cid,
        commitment_type="Savings Plan", unit="USD", effective_cost=D(effective), list_cost=D(list_), quantity=None,
    )  # fmt: skip


LINES = [
    # sp-1: day 1 used 6 (list 10) + unused 2; day 2 used 8 (list 13) + unused 0 -> per day: cost 8,
    # on demand 11.50, utilisation 14/16
    _line("aws", "sp-1", 1, "Used", "6", "10"),
    _line("aws", "sp-1", 1, "Unused", "2", "0"),
    _line("aws", "sp-1", 2, "Used", "8", "13"),
    _line("aws", "sp-1", 2, "Unused", "0", "0"),
    # ri-1: one day, used 1 (list 3) + unused 4 -> utilisation 0.2
    _line("aws", "ri-1", 1, "Used", "1", "3"),
    _line("aws", "ri-1", 1, "Unused", "4", "0"),
    # a GCP CUD: utilisation unknown (no unused rows in GCP's export)
    _line("gcp", "cud-1", 1, "Used", "0", "2.93"),
]
TODAY = date(2026, 10, 3)
COMMITMENTS = [
    Commitment("aws", "sp-1", date(2026, 10, 10), "Compute Savings Plan, 1 year"),  # 7 days: the 7-day window
    Commitment("aws", "ri-1", date(2026, 12, 31), "g5.xlarge us-east-1"),  # 89 days: no window
    Commitment("gcp", "cud-1", date(2026, 11, 2), "a2 us-central1"),  # 30 days: the 30-day window
    Commitment("aws", "gone", date(2026, 10, 1)),  # ended, never seen in usage
]


def test_calendar_daily_bill_after_the_end():
    cal = expiry_calendar(COMMITMENTS, utilisation(LINES, "day"), TODAY)
    assert [e.commitment.commitment_id for e in cal] == ["gone", "sp-1", "cud-1", "ri-1"]
    gone, sp, cud, ri = cal
    assert (gone.days_left, gone.alert, gone.days_observed, gone.daily_increase) == (-2, None, 0, D(0))
    assert (sp.days_left, sp.alert, sp.days_observed) == (7, 7, 2)
    assert (sp.daily_commitment_cost, sp.daily_on_demand_cost, sp.daily_increase) == (
        D(8),
        D("11.5"),
        D("3.5"),
    )
    assert sp.daily_utilisation == D("0.875")
    assert (cud.days_left, cud.alert, cud.daily_on_demand_cost, cud.daily_utilisation) == (
        30,
        30,
        D("2.93"),
        None,
    )
    assert (ri.days_left, ri.alert, ri.daily_utilisation, ri.daily_increase) == (89, None, D("0.2"), D(-2))


def test_alerts_windows_and_utilisation_floor():
    cal = expiry_calendar(COMMITMENTS, utilisation(LINES, "day"), TODAY)
    assert [e.commitment.commitment_id for e in alerts_due(cal)] == ["sp-1", "cud-1"]
    assert [e.commitment.commitment_id for e in alerts_due(cal, D("0.5"))] == ["sp-1", "cud-1", "ri-1"]
    assert [e.commitment.commitment_id for e in alerts_due(cal, {"gcp": D("0.9")})] == ["sp-1", "cud-1"]
    assert [e.commitment.commitment_id for e in alerts_due(cal, {"aws": D("0.9")})] == [
        "sp-1",
        "cud-1",
        "ri-1",
    ]


def test_bad_input_names_what_to_fix():
    with pytest.raises(ValueError, match=r"commitments.expiry.warn_days \[30, -7\]"):
        expiry_calendar(COMMITMENTS, [], TODAY, warn_days=[30, -7])
    with pytest.raises(ValueError, match="day-grain utilisation rows, got period '2026-10'"):
        expiry_calendar(COMMITMENTS, utilisation(LINES, "month"), TODAY)

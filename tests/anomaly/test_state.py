from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal as D

from finops.anomaly.contributors import contributors
from finops.anomaly.state import Event, anomaly_id, reconcile

NOW = datetime(2026, 10, 20, 6)


def ev(start, last, peak=None, actual="300", expected="100", key="aws / EC2"):
    a, e = D(actual), D(expected)
    return Event(
        "service", key, "amortised", "USD", start, last, peak or last, a, e, a - e, float((a - e) / e), 9.0
    )


def test_same_run_seen_twice_is_one_anomaly_updated_not_repeated():
    p1 = reconcile([], [ev(date(2026, 10, 18), date(2026, 10, 18))], date(2026, 10, 18), NOW)
    assert len(p1.new) == 1 and not p1.updated
    a = p1.new[0]
    assert a.anomaly_id == anomaly_id("service", "aws / EC2", "amortised", "USD", date(2026, 10, 18))
    # next day the run continues and grows
    p2 = reconcile(
        p1.new, [ev(date(2026, 10, 18), date(2026, 10, 19), actual="500")], date(2026, 10, 19), NOW
    )
    assert not p2.new and [u.anomaly_id for u in p2.updated] == [a.anomaly_id]
    assert p2.updated[0].delta == D(400) and p2.updated[0].last_day == date(2026, 10, 19)
    # identical re-run: nothing changes
    p3 = reconcile(
        p2.updated, [ev(date(2026, 10, 18), date(2026, 10, 19), actual="500")], date(2026, 10, 19), NOW
    )
    assert not p3.new and not p3.updated and not p3.closed


def test_quiet_monitor_closes_and_a_later_jump_is_new():
    a = reconcile([], [ev(date(2026, 10, 1), date(2026, 10, 2))], date(2026, 10, 2), NOW).new[0]
    p = reconcile([a], [], date(2026, 10, 10), NOW)
    assert [c.status for c in p.closed] == ["closed"]
    p2 = reconcile([a], [ev(date(2026, 10, 15), date(2026, 10, 15))], date(2026, 10, 15), NOW)
    assert len(p2.new) == 1 and p2.new[0].anomaly_id != a.anomaly_id


def test_severity_escalates():
    a = reconcile([], [ev(date(2026, 10, 1), date(2026, 10, 1), actual="160")], date(2026, 10, 1), NOW).new[0]
    assert a.severity == "warning"
    up = reconcile(
        [a], [ev(date(2026, 10, 1), date(2026, 10, 2), actual="5000")], date(2026, 10, 2), NOW
    ).updated[0]
    assert up.severity == "critical"


def test_contributors_rank_rises_with_shares():
    got = contributors(
        {"p5 | i-1": D(900), "EBS | vol-1": D(110), "S3 | -": D(40)},
        {"p5 | i-1": D(100), "EBS | vol-1": D(10), "S3 | -": D(50), "gone | i-2": D(20)},
    )
    assert [c.key for c in got] == ["p5 | i-1", "EBS | vol-1"]
    assert abs(got[0].share - 800 / 900) < 1e-9 and got[0].delta == D(800)
    assert contributors({"a": D(1)}, {"a": D(2)}) == []

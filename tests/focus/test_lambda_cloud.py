"""Lambda Cloud: the lifetime / gap rule by hand, then hourly FOCUS rows reconciled exactly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finops.demo import lambda_generator as gen
from finops.focus.lambda_cloud import CONVERTER, billable_interval, observe
from tests.fixtures.focus_convert import convert

T = datetime(2026, 10, 1, tzinfo=UTC)


def _inst(status="active", iid="i-1", itype="gpu_1x_a10"):
    return gen.instance_json(iid, "nb", itype, "us-west-1", status)


def _fold(polls):
    known = {}
    for t, data in polls:
        known.update(observe(known, data, t))
    return known


def test_seen_twice_is_billed_for_the_whole_gap():
    lt = _fold([(T, [_inst()]), (T + timedelta(hours=5), [_inst()])])["i-1"]
    assert billable_interval(lt) == (T, T + timedelta(hours=5))


def test_after_last_sighting_at_most_one_interval_never_invented():
    # seen at 00:00, then a 6 h polling outage, then gone: bill 1 h, not 6 h
    lt = _fold([(T, [_inst()]), (T + timedelta(hours=6), [])])["i-1"]
    assert billable_interval(lt) == (T, T + timedelta(hours=1))
    # gone at the very next poll 20 min later: bill up to that poll
    lt = _fold([(T, [_inst()]), (T + timedelta(minutes=20), [])])["i-1"]
    assert billable_interval(lt) == (T, T + timedelta(minutes=20))


def test_terminated_status_closes_and_cannot_reopen():
    lt = _fold(
        [
            (T, [_inst()]),
            (T + timedelta(minutes=30), [_inst("terminated")]),
            (T + timedelta(hours=2), [_inst()]),
        ]
    )["i-1"]
    assert billable_interval(lt) == (T, T + timedelta(minutes=30))


def test_missed_by_one_listing_then_seen_again_reopens_the_same_lifetime():
    # listed 00:00-05:00, missing from the 06:00 listing, listed again at 07:00: one lifetime 00:00-07:00
    polls = [(T + timedelta(hours=h), [_inst()]) for h in range(6)]
    lt = _fold([*polls, (T + timedelta(hours=6), []), (T + timedelta(hours=7), [_inst()])])["i-1"]
    assert lt.ended_at is None and lt.status == "active"
    assert billable_interval(lt) == (T, T + timedelta(hours=7))


def test_still_running_bills_to_last_observation_only():
    lt = _fold(
        [
            (T, [_inst("booting")]),
            (T + timedelta(minutes=10), [_inst()]),
            (T + timedelta(minutes=40), [_inst()]),
        ]
    )["i-1"]
    assert lt.ended_at is None
    assert billable_interval(lt) == (T + timedelta(minutes=10), T + timedelta(minutes=40))
    assert lt.price_cents_per_hour == 75 and lt.region == "us-west-1"


def _intervals_file(tmp, rows):
    path = tmp / "lifetimes.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _row(start, end, cents=75, iid="i-1", itype="gpu_1x_a10"):
    return {
        "instance_id": iid,
        "name": "nb",
        "instance_type": itype,
        "region": "us-west-1",
        "price_cents_per_hour": cents,
        "bill_start": start.replace(tzinfo=None),
        "bill_end": end.replace(tzinfo=None),
        "account_name": "lambda-main",
    }


def test_hourly_rows_by_hand(tmp_path, finops_home):
    # 00:50 -> 02:10 at $0.75/h: 10 min + 60 min + 10 min = 80 min = $1.00
    rows = [_row(T + timedelta(minutes=50), T + timedelta(hours=2, minutes=10))]
    res, out = convert(
        CONVERTER, [_intervals_file(tmp_path, rows)], provider="lambda", period="2026-10", tmp=tmp_path
    )
    out.sort(key=lambda r: r["charge_period_start"])
    assert [(r["charge_period_start"].hour, r["billed_cost"]) for r in out] == [
        (0, Decimal("0.125")),
        (1, Decimal("0.75")),
        (2, Decimal("0.125")),
    ]
    assert [r["pricing_quantity"] for r in out] == [Decimal("0.166666666667"), 1, Decimal("0.166666666667")]
    assert res.raw_billed_total == res.focus_billed_total == Decimal("1.00")
    r = out[1]
    assert (r["provider_name"], r["service_category"], r["charge_category"], r["pricing_unit"]) == (
        "Lambda",
        "Compute",
        "Usage",
        "Hours",
    )
    assert r["list_unit_price"] == Decimal("0.75") and r["resource_id"] == "i-1"
    assert r["billing_account_id"] == "lambda-main" and r["x_instance_type"] == "gpu_1x_a10"


def test_non_terminating_minute_price_stays_exact(tmp_path, finops_home):
    # 110 cents/h -> 0.018333.. per minute: per-hour rows still add up exactly
    rows = [
        _row(T + timedelta(minutes=7), T + timedelta(hours=5, minutes=13), cents=110, iid=f"i-{k}")
        for k in range(3)
    ]
    res, out = convert(
        CONVERTER, [_intervals_file(tmp_path, rows)], provider="lambda", period="2026-10", tmp=tmp_path
    )
    assert res.raw_billed_total == res.focus_billed_total
    assert res.raw_billed_total == gen.expected_total([(r["bill_start"], r["bill_end"], 110) for r in rows])


def test_generated_day_end_to_end(tmp_path, finops_home):
    s = gen.generate()
    known = {}
    for t, resp in zip(s.polls, s.responses, strict=True):
        known.update(observe(known, resp["data"], t))
    rows = []
    for lt in known.values():
        a, b = billable_interval(lt)
        rows.append(
            {**_row(a, b, lt.price_cents_per_hour, lt.instance_id, lt.instance_type), "name": lt.name}
        )
    res, out = convert(
        CONVERTER, [_intervals_file(tmp_path, rows)], provider="lambda", period="2026-10", tmp=tmp_path
    )
    expected = gen.expected_total([(r["bill_start"], r["bill_end"], r["price_cents_per_hour"]) for r in rows])
    assert res.focus_billed_total == res.raw_billed_total == expected
    # the outage (05:00-08:00) did not lose the H100 hours: seen before and after
    h100 = [r for r in out if r["x_instance_type"] == "gpu_8x_h100_sxm5"]
    assert {r["charge_period_start"].hour for r in h100} == set(range(2, 10))


@pytest.mark.parametrize("period", ["2026-09", "2026-11"])
def test_other_period_gets_nothing(tmp_path, finops_home, period):
    rows = [_row(T, T + timedelta(hours=3))]
    res, out = convert(
        CONVERTER, [_intervals_file(tmp_path, rows)], provider="lambda", period=period, tmp=tmp_path
    )
    assert out == []

"""A generated CUR 2.0 month through the real spine (load_batch into DuckDB): the Savings
Plan's utilisation read back from focus_costs equals the raw CUR's
savingsPlan/UsedCommitment / TotalCommitmentToDate, per day and for the month, to the cent."""

from __future__ import annotations

from decimal import Decimal as D

import pyarrow.compute as pc
import pyarrow.parquet as pq

from finops.commitments.query import commitment_lines, month_window
from finops.commitments.usage import utilisation
from finops.demo.cur_generator import RI_ARN, SP_ARN, GenSpec, write_cur2_period
from finops.ingest import RawBatch, load_batch
from finops.sources import aws_cur

CENT = D("0.01")


def _money(x: float) -> D:
    """The generator writes whole 1e-8 units as float64: repr() gives that decimal exactly."""
    return D(repr(x))


def test_savings_plan_utilisation_matches_raw_cur(duckdb_wh, tmp_path):
    d = write_cur2_period(tmp_path / "gen", GenSpec("2026-03", rows=800, seed=7))
    files = [tmp_path / "gen" / k for k in d.data_keys]
    entry = load_batch(
        duckdb_wh, RawBatch("local", "aws", "2026-03", files, "fp-7"), aws_cur.converter_for("cur2")
    )
    assert entry.status == "loaded", entry.message

    raw = pq.read_table(files).filter(
        pc.equal(pc.field("line_item_line_item_type"), "SavingsPlanRecurringFee")
    )
    raw_days = {
        start.date().isoformat(): (_money(used), _money(total))
        for start, used, total in zip(
            raw["line_item_usage_start_date"].to_pylist(),
            raw["savings_plan_used_commitment"].to_pylist(),
            raw["savings_plan_total_commitment_to_date"].to_pylist(),
            strict=True,
        )
    }
    assert len(raw_days) == 31

    lines = commitment_lines(duckdb_wh, *month_window("2026-03"), providers=["aws"])
    days = {u.period: u for u in utilisation(lines, "day") if u.commitment_id == SP_ARN}
    assert set(days) == set(raw_days)
    for day, (used, total) in raw_days.items():
        u = days[day]
        assert (u.used_cost.quantize(CENT), u.total_cost.quantize(CENT)) == (
            used.quantize(CENT),
            total.quantize(CENT),
        )
        assert u.utilisation == used / total, day  # exact: the same Decimal quotient
        assert 0 <= u.utilisation < 1  # the generator's commitment is >= 115 % of the day's use
    assert any(u.used_cost > 0 for u in days.values())

    (month,) = [u for u in utilisation(lines, "month") if u.commitment_id == SP_ARN]
    raw_used = sum(used for used, _ in raw_days.values())
    raw_total = sum(total for _, total in raw_days.values())
    assert (month.used_cost, month.total_cost) == (raw_used, raw_total)
    assert month.utilisation == raw_used / raw_total

    # the RI's unused row carries the raw unused upfront + recurring fee; its used cost is the
    # discounted usage's reservation effective cost
    rif = pq.read_table(files).filter(pc.equal(pc.field("line_item_line_item_type"), "RIFee"))
    (ri,) = [u for u in utilisation(lines, "month") if u.commitment_id == RI_ARN]
    unused = (
        rif["reservation_unused_amortized_upfront_fee_for_billing_period"].to_pylist()[0]
        + rif["reservation_unused_recurring_fee"].to_pylist()[0]
    )
    assert ri.unused_cost == _money(unused) and ri.used_cost > 0


def test_ri_monthly_unused_row_is_prorated_over_the_month(duckdb_wh, tmp_path):
    # the RIFee's unused part is one row for the whole month on the 1st: at day grain each of
    # March's 31 days gets 1/31 of it, so a 7-day window mid-month reads the RI's utilisation
    # with its share of unused commitment instead of 100 %
    from datetime import date, timedelta

    from finops.commitments.expiry import Commitment, expiry_calendar

    d = write_cur2_period(tmp_path / "gen", GenSpec("2026-03", rows=800, seed=7))
    files = [tmp_path / "gen" / k for k in d.data_keys]
    entry = load_batch(
        duckdb_wh, RawBatch("local", "aws", "2026-03", files, "fp-7"), aws_cur.converter_for("cur2")
    )
    assert entry.status == "loaded", entry.message
    raw = pq.read_table(files)
    rif = raw.filter(pc.equal(pc.field("line_item_line_item_type"), "RIFee"))
    unused = _money(
        rif["reservation_unused_amortized_upfront_fee_for_billing_period"].to_pylist()[0]
        + rif["reservation_unused_recurring_fee"].to_pylist()[0]
    )
    share = (unused / 31).quantize(D("1e-10"), rounding="ROUND_DOWN")

    lines = commitment_lines(duckdb_wh, *month_window("2026-03"), providers=["aws"])
    days = {u.period: u for u in utilisation(lines, "day") if u.commitment_id == RI_ARN}
    assert len(days) == 31
    assert [days[f"2026-03-{i:02d}"].unused_cost for i in range(1, 31)] == [share] * 30
    assert sum(u.unused_cost for u in days.values()) == unused  # the 31st takes the rest: exact

    # 10-16 March against the raw discounted usage of those days
    du = raw.filter(pc.equal(pc.field("line_item_line_item_type"), "DiscountedUsage"))
    window = {date(2026, 3, 10) + timedelta(days=i) for i in range(7)}
    used = sum(
        (_money(c) for t, c in zip(du["line_item_usage_start_date"].to_pylist(),
                                   du["reservation_effective_cost"].to_pylist(), strict=True) if t.date() in window),
        D(0),
    )  # fmt: skip
    recent = [u for u in days.values() if date.fromisoformat(u.period) in window]
    (e,) = expiry_calendar([Commitment("aws", RI_ARN, date(2027, 1, 1))], recent, date(2026, 3, 17))
    assert sum(u.used_cost for u in recent).quantize(CENT) == used.quantize(CENT) and used > 0
    got_used = sum(u.used_cost for u in recent)
    assert e.daily_utilisation == got_used / (got_used + 7 * share) < 1

"""Edge: focus_costs in a real DuckDB warehouse -> showback tables that reconcile to the cent."""

from __future__ import annotations

import json
from decimal import Decimal as D

import pytest

from finops.allocation.rules import parse_rules
from finops.allocation.store import ConservationError, check_conservation, run_showback
from tests.fixtures.focus_data import focus_row, insert_focus

RULES = {
    "teams": [{"name": "ml", "cost_centre": "CC-1"}, {"name": "data", "cost_centre": "CC-2"}],
    "rules": [{"team": "data", "match": {"accounts": ["222"]}}],
    "shared": [
        {"name": "support", "match": {"services": ["AWS Support (Business)"]}, "method": "proportional"}
    ],
}


def _seed(wh):
    rows = [
        focus_row(
            "2026-10-01",
            "100.1234567891",
            "80.0000000001",
            {"user:team": "ml"},
            x_instance_type="p4d.24xlarge",
            pricing_category="Dynamic",
            list_cost=D("300"),
        ),
        focus_row("2026-10-01", "50", "50", {}, sub_account_id="222"),
        focus_row(
            "2026-10-01",
            "9.99",
            "9.99",
            {},
            service_name="AWS Support (Business)",
            service_category="Management and Governance",
        ),
        focus_row("2026-10-02", "-12.34", "-12.34", {"Team": "ml"}, charge_category="Credit"),
        focus_row("2026-10-02", "7.77", "7.77", {"owner": "nobody"}),
        focus_row(
            "2026-10-02",
            "3.3333333333",
            "3.3333333333",
            {"team": "data"},
            service_category="Storage",
            service_name="Amazon S3",
            x_usage_type="TimedStorage-ByteHrs",
        ),
        focus_row("2026-11-01", "1", "1", {"team": "ml"}),  # other period: untouched
    ]
    insert_focus(wh, rows)


def _sum(wh, sql, params):
    return D(wh.query(sql, params)[0][0] or 0)


def test_showback_reconciles_with_focus_costs_and_is_idempotent(any_wh):
    wh = any_wh
    _seed(wh)
    rules = parse_rules(RULES)
    for _ in range(2):  # a re-run replaces, never doubles
        res = run_showback(wh, "2026-10", rules)
    assert res.totals == {"amortised/USD": "138.7533333334", "billed/USD": "158.8767901224"}
    for view, col in (("billed", "billed_cost"), ("amortised", "effective_cost")):
        src = _sum(wh, f"SELECT SUM({col}) FROM focus_costs WHERE x_billing_period = ?", ["2026-10"])
        daily = _sum(
            wh,
            "SELECT SUM(cost) FROM showback_daily WHERE billing_period = ? AND cost_view = ?",
            ["2026-10", view],
        )
        monthly = _sum(
            wh,
            "SELECT SUM(total_cost) FROM chargeback_monthly WHERE billing_period = ? AND cost_view = ?",
            ["2026-10", view],
        )
        cents = _sum(
            wh,
            "SELECT SUM(total_cents) FROM chargeback_monthly WHERE billing_period = ? AND cost_view = ?",
            ["2026-10", view],
        )
        assert src == daily == monthly
        assert cents == src.quantize(D("0.01"))
    teams = dict(wh.query("SELECT team, total_cost FROM chargeback_monthly WHERE cost_view = 'billed'"))
    assert teams["unallocated"] == D("7.77")
    assert set(teams) == {"ml", "data", "unallocated"}
    cc = dict(wh.query("SELECT team, cost_centre FROM chargeback_monthly WHERE cost_view = 'billed'"))
    assert cc["ml"] == "CC-1" and cc["unallocated"] is None
    gpu = wh.query(
        "SELECT team, gpu_model, purchase_option, cost, savings, idle_cost FROM showback_gpu_monthly "
        "WHERE cost_view = 'billed'"
    )
    assert gpu == [("ml", "A100", "spot", D("100.1234567891"), D("199.8765432109"), D(0))]
    storage = _sum(
        wh,
        "SELECT SUM(storage_cost) FROM chargeback_monthly WHERE team = 'data' AND cost_view = 'billed'",
        [],
    )
    assert storage == D("3.3333333333")


def test_idle_gpu_cost_from_policy_actions_when_present(any_wh):
    wh = any_wh
    rows = [
        focus_row(
            f"2026-10-03T{h:02d}:00:00",
            "1.5",
            tags={"team": "ml"},
            x_instance_type="g5.xlarge",
            resource_id="i-0abc",
        )
        for h in range(8, 14)
    ]
    insert_focus(wh, rows)
    # two runs flag overlapping idle windows 10:00-12:00 and 11:00-13:00 -> hours 10, 11, 12 count once
    for i, (a, b) in enumerate((("10", "12"), ("11", "13"))):
        ev = json.dumps(
            {"window_start": f"2026-10-03T{a}:00:00+00:00", "window_end": f"2026-10-03T{b}:00:00+00:00"}
        )
        wh.execute(
            "INSERT INTO policy_actions (action_id, run_id, policy, policy_kind, provider, resource_id, decision, "
            "action, result, dry_run, evidence, created_at) VALUES (?, 'r', 'gpu-idle', 'idle', 'aws', 'i-0abc', "
            "'idle', 'stop', 'dry_run', true, ?, TIMESTAMP '2026-10-03 13:00:00')",
            [f"a{i}", ev],
        )
    run_showback(wh, "2026-10", parse_rules({}))
    assert wh.query("SELECT team, cost, idle_cost FROM showback_gpu_monthly WHERE cost_view = 'billed'") == [
        ("ml", D("9"), D("4.5"))
    ]


def test_conservation_guard_refuses_mismatch():
    with pytest.raises(ConservationError):
        check_conservation({("billed", "USD"): D("1.00")}, [])


def _restate(wh, tmp_path, period: str, rows: list[dict]) -> None:
    """Replace one (source, period) of focus_costs the way ingest does: one transaction with
    its load_log row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from finops.focus.schema import arrow_schema
    from finops.warehouse.base import LoadLogEntry

    schema = arrow_schema()
    f = tmp_path / f"restated-{period}.parquet"
    pq.write_table(
        pa.Table.from_pylist([{c: r.get(c) for c in schema.names} for r in rows], schema=schema), f
    )
    wh.replace_partition(
        "focus_costs",
        {"x_source": "main-payer", "x_billing_period": period},
        [f],
        log=LoadLogEntry(
            load_id=f"restated-{period}",
            source="main-payer",
            provider="aws",
            billing_period=period,
            status="loaded",
            row_count=len(rows),
        ),
    )


def test_stale_periods_are_those_reloaded_since_their_showback(any_wh, tmp_path):
    from finops.allocation.store import stale_periods

    wh = any_wh
    _seed(wh)
    rules = parse_rules(RULES)
    _restate(wh, tmp_path, "2026-11", [focus_row("2026-11-01", "1", "1", {"team": "ml"})])
    assert stale_periods(wh) == ["2026-11"]  # loaded, never allocated
    run_showback(wh, "2026-11", rules)
    assert stale_periods(wh) == []
    _restate(wh, tmp_path, "2026-11", [focus_row("2026-11-01", "4.56", "4.56", {"team": "ml"})])
    assert stale_periods(wh) == ["2026-11"]  # restated after its showback
    run_showback(wh, "2026-11", rules)
    assert stale_periods(wh) == []


def test_a_showback_failing_half_way_leaves_its_period_stale(any_wh, tmp_path):
    """chargeback_monthly.computed_at marks a period fresh: it must be written last, or a failure
    in a later table left the period half-recomputed yet never picked up again."""
    import pytest

    from finops.allocation.store import stale_periods

    wh = any_wh
    rules = parse_rules(RULES)
    _restate(wh, tmp_path, "2026-11", [focus_row("2026-11-01", "1", "1", {"team": "ml"})])
    run_showback(wh, "2026-11", rules)
    _restate(wh, tmp_path, "2026-11", [focus_row("2026-11-01", "4.56", "4.56", {"team": "ml"})])
    wh.execute("ALTER TABLE showback_gpu_monthly RENAME TO showback_gpu_monthly_away")  # its write fails
    with pytest.raises(Exception, match="showback_gpu_monthly"):
        run_showback(wh, "2026-11", rules)
    wh.execute("ALTER TABLE showback_gpu_monthly_away RENAME TO showback_gpu_monthly")
    assert stale_periods(wh) == ["2026-11"]
    run_showback(wh, "2026-11", rules)
    assert stale_periods(wh) == []


def test_restated_old_period_reaches_chargeback_on_the_asset_triggered_run(duckdb_wh, finops_home, tmp_path):
    """The billing DAG reloads 2026-10 by hand in December; the showback run its asset event
    triggers (no Params) must recompute 2026-10, not only the current month."""
    from datetime import date

    from finops.allocation.tasks import run_showback_task, showback_periods

    wh = duckdb_wh
    _restate(wh, tmp_path, "2026-10", [focus_row("2026-10-01", "10.00", "10.00", {"team": "ml"})])
    run_showback(wh, "2026-10", parse_rules(RULES))
    _restate(wh, tmp_path, "2026-10", [focus_row("2026-10-01", "12.34", "12.34", {"team": "ml"})])
    wh.close()  # the task bodies open the warehouse themselves

    periods = showback_periods("", date(2026, 12, 20))
    assert periods == ["2026-10", "2026-12"]
    assert showback_periods("2026-12", date(2026, 12, 20)) == ["2026-12"]  # explicit Params win
    for p in periods:
        run_showback_task(p)
    from finops.warehouse.duckdb_wh import DuckDBWarehouse

    with DuckDBWarehouse(finops_home / "warehouse.duckdb") as again:
        got = again.query(
            "SELECT SUM(total_cost) FROM chargeback_monthly WHERE billing_period = '2026-10' "
            "AND cost_view = 'billed'"
        )[0][0]
    assert got == D("12.34")


def test_idle_cost_lands_on_its_own_gpu_line_and_currency(any_wh):
    """One team, a busy A10G billed in USD, an idle H100 billed in EUR and an idle CPU box: the
    EUR idle cost goes on the H100/EUR line only, the CPU box on no GPU line (all 161 of mixed
    EUR + USD used to land on the team's first line, A10G/USD, above that line's own cost)."""
    wh = any_wh
    rows = []
    for h in range(8, 12):
        ts = f"2026-10-03T{h:02d}:00:00"
        rows += [
            focus_row(ts, "1.5", tags={"team": "ml"}, x_instance_type="g5.xlarge", resource_id="i-busy"),
            focus_row(
                ts,
                "40",
                tags={"team": "ml"},
                x_instance_type="p5.48xlarge",
                resource_id="i-eu",
                billing_currency="EUR",
                billing_account_id="eu-payer",
            ),
            focus_row(ts, "0.25", tags={"team": "ml"}, x_instance_type="m5.large", resource_id="i-cpu"),
        ]
    insert_focus(wh, rows)
    ev = json.dumps({"window_start": "2026-10-03T08:00:00+00:00", "window_end": "2026-10-03T12:00:00+00:00"})
    for i, rid in enumerate(("i-eu", "i-cpu")):
        wh.execute(
            "INSERT INTO policy_actions (action_id, run_id, policy, policy_kind, provider, resource_id, decision, "
            "action, result, dry_run, evidence, created_at) VALUES (?, 'r', 'gpu-idle', 'idle', 'aws', ?, "
            "'idle', 'stop', 'dry_run', true, ?, TIMESTAMP '2026-10-03 13:00:00')",
            [f"a{i}", rid, ev],
        )
    run_showback(wh, "2026-10", parse_rules({}))
    got = wh.query(
        "SELECT gpu_model, currency, cost, idle_cost FROM showback_gpu_monthly WHERE cost_view = 'billed' "
        "ORDER BY 1"
    )
    assert got == [("A10G", "USD", D("6"), D("0")), ("H100", "EUR", D("160"), D("160"))]

"""Monthly showback report: saved under FINOPS_HOME/reports and e-mailed (real aiosmtpd)."""

from __future__ import annotations

import csv
import io
from decimal import Decimal as D

from finops.allocation.report import build_reports, email_reports, save_reports
from finops.allocation.rules import parse_rules
from finops.allocation.store import run_showback
from finops.config import AlertRoute, AlertsConfig
from tests.fixtures.focus_data import focus_row, insert_focus


def test_team_reports_saved_and_emailed(duckdb_wh, finops_home, alert_smtp):
    wh = duckdb_wh
    insert_focus(
        wh,
        [
            focus_row(
                "2026-10-01",
                "100.005",
                tags={"team": "ml"},
                x_instance_type="p5.48xlarge",
                pricing_category="Dynamic",
                list_cost=D("250"),
            ),
            focus_row(
                "2026-10-02",
                "20",
                tags={"team": "ml"},
                service_name="=cmd|' /C calc'!A0",
                service_category="Storage",
            ),
            focus_row("2026-10-02", "5", tags={"team": "<script>alert(1)</script>"}),
        ],
    )
    run_showback(wh, "2026-10", parse_rules({}))
    reports = build_reports(wh, "2026-10", "billed")
    assert [r.team for r in reports] == ["<script>alert(1)</script>", "ml"]
    paths = save_reports(reports)
    assert all(p.is_relative_to(finops_home / "reports" / "2026-10") for p in paths)
    ml = reports[1]
    html = ml.files["html"].read_text()
    assert "<b>120.00</b>" in html and "H100" in html and "data:image/png;base64," in html
    evil = reports[0].files["html"]
    assert evil.parent == finops_home / "reports" / "2026-10" and "<script>" not in evil.read_text()
    rows = list(csv.reader(io.StringIO(ml.files["csv"].read_text())))
    assert rows[0][0] == "day" and sum(D(r[-1]) for r in rows[1:]) == D("120.005")
    assert any(r[8] == "'=cmd|' /C calc'!A0" for r in rows[1:])

    alerts = AlertsConfig(
        routes=[AlertRoute(team="ml", email_conn_id=alert_smtp.conn_id, email_to=["ml-leads@example.com"])]
    )
    sent = email_reports(reports, alerts)
    assert sent == {"ml": ["ml-leads@example.com"]}
    (msg,) = alert_smtp.messages
    assert msg["Subject"] == "Cloud cost showback 2026-10: ml"
    assert 'src="cid:chart.png"' in msg.get_body(("html",)).get_content()
    parts = {p["Content-ID"]: p for p in msg.walk() if p["Content-ID"]}
    assert parts["<chart.png>"].get_content().startswith(b"\x89PNG")
    assert parts["<showback-ml-2026-10.csv>"].get_filename() == "showback-ml-2026-10.csv"


def test_report_retry_after_a_failed_route_sends_each_report_once(
    duckdb_wh, finops_home, alert_smtp, monkeypatch
):
    """Team a's SMTP route is down: team b still gets its report, the task's retries do not
    re-send it, and once a's route is back a gets exactly one; a restated month is sent again."""
    import json

    import pytest

    from finops.alerts.dedup import AlertLedger
    from finops.allocation.report import ReportDeliveryError
    from tests.fixtures.alerts import _free_port

    wh = duckdb_wh
    insert_focus(
        wh,
        [
            focus_row("2026-10-01", "10", tags={"team": "a"}),
            focus_row("2026-10-01", "20", tags={"team": "b"}),
        ],
    )
    run_showback(wh, "2026-10", parse_rules({}))
    reports = build_reports(wh, "2026-10", "billed")
    down = {
        "conn_type": "smtp",
        "host": "127.0.0.1",
        "port": _free_port(),
        "extra": {
            "disable_tls": True,
            "disable_ssl": True,
            "from_email": "finops@example.com",
            "retry_limit": 0,
            "timeout": 2,
        },
    }
    monkeypatch.setenv("AIRFLOW_CONN_TEAM_A_SMTP", json.dumps(down))
    alerts = AlertsConfig(
        routes=[
            AlertRoute(team="a", email_conn_id="team_a_smtp", email_to=["a@example.com"]),
            AlertRoute(team="b", email_conn_id=alert_smtp.conn_id, email_to=["b@example.com"]),
        ]
    )
    ledger = AlertLedger(wh)
    for _ in range(2):  # the task and a retry, a's route still down
        with pytest.raises(ReportDeliveryError, match="team_a_smtp"):
            email_reports(reports, alerts, ledger)
    assert [env[1] for env in alert_smtp.envelopes] == [["b@example.com"]]

    monkeypatch.setenv("AIRFLOW_CONN_TEAM_A_SMTP", json.dumps({**down, "port": alert_smtp.port}))
    assert email_reports(reports, alerts, ledger) == {"a": ["a@example.com"]}
    assert email_reports(reports, alerts, ledger) == {}  # a re-run of the same figures
    # asked for again on purpose (the DAG's "Send again"): delivered once more, to every route
    assert email_reports(reports, alerts, ledger, resend=True) == {
        "a": ["a@example.com"],
        "b": ["b@example.com"],
    }
    assert sorted(env[1][0] for env in alert_smtp.envelopes[-2:]) == ["a@example.com", "b@example.com"]
    del alert_smtp.envelopes[-2:]
    assert sorted(env[1][0] for env in alert_smtp.envelopes) == ["a@example.com", "b@example.com"]

    insert_focus(wh, [focus_row("2026-10-02", "1.50", tags={"team": "b"})])  # restated month
    run_showback(wh, "2026-10", parse_rules({}))
    assert email_reports(build_reports(wh, "2026-10", "billed"), alerts, ledger) == {"b": ["b@example.com"]}


def test_a_retry_of_a_send_again_run_resends_each_report_once(
    duckdb_wh, finops_home, alert_smtp, monkeypatch
):
    """ "Send again" with one route down: the task's retry must not e-mail the reports that run
    already re-sent (before, resend skipped the ledger altogether: every retry re-sent them all)."""
    import json

    import pytest

    from finops.alerts.dedup import AlertLedger
    from finops.allocation.report import ReportDeliveryError
    from tests.fixtures.alerts import _free_port

    wh = duckdb_wh
    insert_focus(
        wh,
        [
            focus_row("2026-10-01", "10", tags={"team": "a"}),
            focus_row("2026-10-01", "20", tags={"team": "b"}),
        ],
    )
    run_showback(wh, "2026-10", parse_rules({}))
    reports = build_reports(wh, "2026-10", "billed")
    up = {
        "conn_type": "smtp",
        "host": "127.0.0.1",
        "port": alert_smtp.port,
        "extra": {
            "disable_tls": True,
            "disable_ssl": True,
            "from_email": "finops@example.com",
            "retry_limit": 0,
            "timeout": 2,
        },
    }
    monkeypatch.setenv("AIRFLOW_CONN_TEAM_A_SMTP", json.dumps(up))
    alerts = AlertsConfig(
        routes=[
            AlertRoute(team="a", email_conn_id="team_a_smtp", email_to=["a@example.com"]),
            AlertRoute(team="b", email_conn_id=alert_smtp.conn_id, email_to=["b@example.com"]),
        ]
    )
    ledger = AlertLedger(wh)
    assert email_reports(reports, alerts, ledger) == {"a": ["a@example.com"], "b": ["b@example.com"]}
    alert_smtp.envelopes.clear()

    monkeypatch.setenv("AIRFLOW_CONN_TEAM_A_SMTP", json.dumps({**up, "port": _free_port()}))  # a's route down
    with pytest.raises(ReportDeliveryError, match="team_a_smtp"):
        email_reports(reports, alerts, ledger, resend=True, run_id="manual__resend")
    assert [env[1] for env in alert_smtp.envelopes] == [["b@example.com"]]
    monkeypatch.setenv("AIRFLOW_CONN_TEAM_A_SMTP", json.dumps(up))
    # the retry of that run: only a's report is still owed
    assert email_reports(reports, alerts, ledger, resend=True, run_id="manual__resend") == {
        "a": ["a@example.com"]
    }
    assert email_reports(reports, alerts, ledger, resend=True, run_id="manual__resend") == {}
    assert sorted(env[1][0] for env in alert_smtp.envelopes) == ["a@example.com", "b@example.com"]
    # another run asking again sends again
    assert email_reports(reports, alerts, ledger, resend=True, run_id="manual__later") == {
        "a": ["a@example.com"],
        "b": ["b@example.com"],
    }


def test_two_runs_at_once_email_each_report_once(any_wh, request, finops_home, alert_smtp):
    """The scheduled report and a manual trigger of the same month at the same moment (each its
    own task, its own warehouse connection): each team's report is e-mailed once."""
    import threading

    from finops.alerts.dedup import AlertLedger

    insert_focus(
        any_wh,
        [
            focus_row("2026-10-01", "10", tags={"team": "a"}),
            focus_row("2026-10-01", "20", tags={"team": "b"}),
        ],
    )
    run_showback(any_wh, "2026-10", parse_rules({}))
    if any_wh.dialect == "duckdb":
        from finops.paths import warehouse_path
        from finops.warehouse.duckdb_wh import DuckDBWarehouse

        def open_wh():
            return DuckDBWarehouse(warehouse_path())
    else:
        from finops.warehouse.postgres_wh import PostgresWarehouse

        dsn = request.getfixturevalue("pg_dsn")

        def open_wh():
            return PostgresWarehouse.from_dsn(dsn, schema=any_wh.schema)

    alerts = AlertsConfig(
        routes=[AlertRoute(team="*", email_conn_id=alert_smtp.conn_id, email_to=["finops@example.com"])]
    )
    barrier = threading.Barrier(3)
    results: list[dict] = []
    errors: list[BaseException] = []

    def run() -> None:
        wh = open_wh()
        try:
            reports = build_reports(wh, "2026-10", "billed")
            barrier.wait()
            results.append(email_reports(reports, alerts, AlertLedger(wh)))
        except BaseException as e:  # noqa: BLE001 - asserted below
            errors.append(e)
        finally:
            wh.close()

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert sorted(team for r in results for team in r) == ["a", "b"]
    assert len(alert_smtp.envelopes) == 2


def test_saved_reports_never_overwrite_each_other(duckdb_wh, finops_home):
    """Teams whose names clean to the same file name, and the two cost views of one month,
    each keep their own files."""
    insert_focus(
        duckdb_wh,
        [
            focus_row("2026-10-01", "1", tags={"team": "ml research"}),
            focus_row("2026-10-01", "2", tags={"team": "ml_research"}),
            focus_row("2026-10-01", "4", tags={"team": "ml/research"}),
        ],
    )
    run_showback(duckdb_wh, "2026-10", parse_rules({}))
    paths = [
        p for view in ("billed", "amortised") for p in save_reports(build_reports(duckdb_wh, "2026-10", view))
    ]
    assert len(set(paths)) == len(paths) == 3 * 2 * 2  # 3 teams x 2 views x (html, csv)
    assert finops_home / "reports" / "2026-10" / "ml_research-billed.csv" in paths  # a plain name stays plain
    totals = sorted(
        sum(D(r[-1]) for r in list(csv.reader(io.StringIO(p.read_text())))[1:])
        for p in paths
        if p.suffix == ".csv" and "billed" in p.name
    )
    assert totals == [D(1), D(2), D(4)]


def test_rerun_after_a_restatement_leaves_no_report_of_the_old_figures(duckdb_wh, finops_home):
    """A restated month re-reported: a team the new figures no longer bill (its tag fixed) keeps
    no report file, so the month's saved reports add up to its total, not old + new."""
    from finops.allocation.tasks import run_report_task

    insert_focus(
        duckdb_wh,
        [
            focus_row("2026-10-01", "10", tags={"team": "ml-reserch"}),
            focus_row("2026-10-02", "5", tags={"team": "data"}),
        ],
    )
    run_showback(duckdb_wh, "2026-10", parse_rules({}))
    run_report_task("2026-10", "billed", send_email=False)
    run_report_task("2026-10", "amortised", send_email=False)
    duckdb_wh.execute("DELETE FROM focus_costs WHERE x_billing_period = '2026-10'")  # the restatement
    insert_focus(
        duckdb_wh,
        [
            focus_row("2026-10-01", "10", tags={"team": "ml-research"}),
            focus_row("2026-10-02", "5", tags={"team": "data"}),
        ],
    )
    run_showback(duckdb_wh, "2026-10", parse_rules({}))
    out = run_report_task("2026-10", "billed", send_email=False)

    folder = finops_home / "reports" / "2026-10"
    billed = sorted(p.name for p in folder.glob("*-billed.*"))
    assert billed == [
        "data-billed.csv",
        "data-billed.html",
        "ml-research-billed.csv",
        "ml-research-billed.html",
    ]
    assert sorted(str(folder / n) for n in billed) == sorted(out["files"])
    assert sum(
        D(r[-1])
        for p in folder.glob("*-billed.csv")
        for r in list(csv.reader(io.StringIO(p.read_text())))[1:]
    ) == D(15)
    assert len(list(folder.glob("*-amortised.*"))) == 4  # the other view is another run's business
    # asked for some teams only: the others' reports stay
    run_report_task("2026-10", "billed", send_email=False, teams=["data"])
    assert sorted(p.name for p in folder.glob("*-billed.*")) == billed


def test_dedup_key_does_not_depend_on_row_order(any_wh):
    """The report's detail CSV is hashed into its dedup key: rows that tie on day and service
    (different accounts) must come out in one order, or a re-run of the same figures e-mails again."""
    rows = [
        focus_row("2026-10-01", str(i + 1), tags={"team": "ml"}, sub_account_id=f"{i:012d}")
        for i in range(300)
    ]
    keys = []
    for batch in (rows, rows[::-1]):
        any_wh.execute("DELETE FROM focus_costs")
        insert_focus(any_wh, batch)
        run_showback(any_wh, "2026-10", parse_rules({}))
        [report] = build_reports(any_wh, "2026-10", "billed")
        keys.append((report.dedup_key(), report.csv()))
    assert keys[0] == keys[1]

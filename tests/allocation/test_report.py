"""Monthly showback report: saved under FINOPS_HOME/reports and e-mailed (real aiosmtpd)."""

from __future__ import annotations

import csv
import io
from decimal import Decimal as D

from finops.allocation.report import build_reports, email_reports, save_reports
from finops.allocation.rules import parse_rules
from finops.allocation.store import run_showback
from finops.config import AlertRoute, AlertsConfig
from tests.allocation.focus_data import focus_row, insert_focus


def test_team_reports_saved_and_emailed(duckdb_wh, finops_home, alert_smtp):
    wh = duckdb_wh
    insert_focus(wh, [
        focus_row("2026-10-01", "100.005", tags={"team": "ml"}, x_instance_type="p5.48xlarge",
                  pricing_category="Dynamic", list_cost=D("250")),
        focus_row("2026-10-02", "20", tags={"team": "ml"}, service_name="=cmd|' /C calc'!A0",
                  service_category="Storage"),
        focus_row("2026-10-02", "5", tags={"team": "<script>alert(1)</script>"}),
    ])
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

    alerts = AlertsConfig(routes=[AlertRoute(team="ml", email_conn_id=alert_smtp.conn_id,
                                             email_to=["ml-leads@example.com"])])
    sent = email_reports(reports, alerts)
    assert sent == {"ml": ["ml-leads@example.com"]}
    (msg,) = alert_smtp.messages
    assert msg["Subject"] == "Cloud cost showback 2026-10: ml"
    assert 'src="cid:chart"' in msg.get_body(("html",)).get_content()
    assert any(p.get_content_type() == "image/png" and p["Content-ID"] == "<chart>" for p in msg.walk())
    (att,) = list(msg.iter_attachments())
    assert att.get_filename() == "showback-ml-2026-10.csv"

"""Email delivery to a real aiosmtpd server: MIME structure, inline chart, CSV attachment,
and headers that hostile strings cannot extend."""

from __future__ import annotations

import csv
import io
from datetime import date

import pytest

from finops.alerts.chart import daily_chart_png
from finops.alerts.email import (
    Attachment,
    EmailAddressError,
    build_message,
    chart_ref,
    clean_header,
    send_alert_email,
    send_message,
    validate_address,
)
from finops.alerts.events import AlertEvent
from tests.fixtures.hostile import HOSTILE

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_clean_header_and_address_validation():
    assert clean_header("ops\r\nBcc: x@evil.example") == "ops Bcc: x@evil.example"
    assert "\n" not in clean_header("a\u2028b\x00c\rd")
    for bad in ["x@evil.example\r\nBcc: y@evil.example", "Name <a@b.co>", "a@b", "a,b@c.co", "", "a@-b.co"]:
        with pytest.raises(EmailAddressError):
            validate_address(bad)
    assert validate_address("team.ml+alerts@example.co.uk") == "team.ml+alerts@example.co.uk"


def test_report_mail_with_inline_chart_and_csv_reaches_smtp(alert_smtp):
    png = daily_chart_png(
        {
            "gpu": [(date(2026, 10, 1), 10.0), (date(2026, 10, 2), 12.5)],
            "storage": [(date(2026, 10, 1), 1.0)],
        },
        "ml-research 2026-10",
    )
    assert png.startswith(PNG_MAGIC)
    hostile_subject = "Showback ml\r\nBcc: x@evil.example 🚀 " + "A" * 10_000
    msg = build_message(
        sender="finops@example.com",
        to=["ml@example.com"],
        subject=hostile_subject,
        html=f'<html><body><h1>Report</h1><img src="{chart_ref("chart")}"></body></html>',
        chart_png=png,
        chart_cid="chart",
        attachments=[
            Attachment("../../etc/ml research.csv", b"team,cost\r\nml,1.00\r\n"),
            Attachment("chart.png", b"not the chart", "image/png"),
        ],
    )
    send_message(alert_smtp.conn_id, msg)  # SmtpHook.send_email_smtp, the provider's public API
    (got,) = alert_smtp.messages
    (env_from, rcpts) = alert_smtp.envelopes[0]
    assert env_from == "finops@example.com" and rcpts == ["ml@example.com"]  # no smuggled Bcc recipient
    assert got["Bcc"] is None and "evil" not in got["To"]
    assert got["Message-ID"] == msg.message_id
    assert "\n" not in got["Subject"] and got["Subject"].startswith("Showback ml Bcc: x@evil.example 🚀")
    assert len(got["Subject"]) <= 200
    assert got.get_content_type() == "multipart/mixed"
    html = got.get_body(("html",))
    assert 'src="cid:chart.png"' in html.get_content()
    # the HTML's cid: names exactly one part, the chart: an attachment cannot take its name
    by_cid = {p["Content-ID"]: p for p in got.walk() if p["Content-ID"]}
    assert set(by_cid) == {"<chart.png>", "<etc_ml_research.csv>", "<chart-2.png>"}
    assert by_cid["<chart.png>"].get_content() == png
    assert by_cid["<chart-2.png>"].get_content() == b"not the chart"
    att = by_cid["<etc_ml_research.csv>"]
    assert att.get_filename() == "etc_ml_research.csv"
    content = att.get_content()
    rows = list(csv.reader(io.StringIO(content if isinstance(content, str) else content.decode())))
    assert rows == [["team", "cost"], ["ml", "1.00"]]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_alert_email_with_hostile_strings(alert_smtp, hostile):
    ev = AlertEvent(
        kind="anomaly",
        title=f"anomaly {hostile}",
        team="ml",
        summary=hostile,
        facts={"Tag": hostile, "Cost": "12.00 USD"},
        links={"x": "javascript:alert(1)"},
    )
    send_alert_email(ev, alert_smtp.conn_id, ["ml@example.com"])
    (got,) = alert_smtp.messages
    assert alert_smtp.envelopes[0][1] == ["ml@example.com"]
    assert set(k.lower() for k in got.keys()) <= {
        "from",
        "to",
        "subject",
        "date",
        "message-id",
        "mime-version",
        "content-type",
        "content-transfer-encoding",
    }
    html = got.get_body(("html",)).get_content()
    assert "<!channel>" not in html and "<b>bold</b>" not in html and "javascript:" not in html
    (att,) = list(got.iter_attachments())
    content = att.get_content()
    rows = list(csv.reader(io.StringIO(content if isinstance(content, str) else content.decode())))
    assert all(not c.startswith(("=", "+", "-", "@", "\t")) for r in rows for c in r)


def test_invalid_recipient_is_refused_before_sending(alert_smtp):
    with pytest.raises(EmailAddressError):
        build_message(
            sender="finops@example.com",
            to=["a@example.com\r\nBcc: b@evil.example"],
            subject="s",
            html="<p>x</p>",
        )
    assert alert_smtp.messages == []

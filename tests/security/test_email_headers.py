"""Email headers and bodies built from hostile strings: one encoding path for every header.

On the CPython these machines run (3.11.7) the `email` policy parses a header value it is
given, decodes an RFC 2047 encoded word found inside it, and on output writes the decoded
CR/LF raw: `=?utf-8?q?=0D=0AReply-To:_x@evil?=` in an alert title became a real Reply-To.

Each message goes out through SmtpHook.send_email_smtp to a real SMTP server on loopback that
keeps the bytes it received: what is checked is what a mail server gets.
"""

from __future__ import annotations

import email
import json
import socket
import sys
from collections.abc import Iterator
from email.policy import default
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markupsafe import escape

from finops.alerts.email import body_text, build_message, clean_header, send_alert_email, send_message
from finops.alerts.events import AlertEvent
from finops.demo.alert_sinks import smtp_connection
from tests.fixtures.hostile import hostile_text

EW_REPLY_TO = "=?utf-8?q?=0D=0AReply-To:_attacker@evil.example?="
EW_BCC_B64 = "=?utf-8?b?DQpCY2M6IHhAZXZpbC5leGFtcGxl?="  # base64 of "\r\nBcc: x@evil.example"
HEADERS = {"from", "to", "subject", "date", "message-id", "mime-version", "content-type"}


class _RawInbox:
    """aiosmtpd handler keeping the DATA bytes exactly as received."""

    def __init__(self) -> None:
        self.raw: list[bytes] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 - aiosmtpd hook
        self.raw.append(envelope.original_content or envelope.content)
        return "250 OK"


@pytest.fixture(scope="module", autouse=True)
def raw_smtp() -> Iterator[_RawInbox]:
    """Module-wide (hypothesis examples share it): AIRFLOW_CONN_RAW_SMTP -> the loopback server."""
    from aiosmtpd.controller import Controller

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    inbox = _RawInbox()
    ctl = Controller(inbox, hostname="127.0.0.1", port=port)
    ctl.start()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW_CONN_RAW_SMTP", json.dumps(smtp_connection(port)))
        yield inbox
    ctl.stop()


_INBOX: list[_RawInbox] = []


@pytest.fixture(autouse=True)
def _inbox(raw_smtp: _RawInbox) -> None:
    _INBOX[:] = [raw_smtp]


def _wire(msg) -> bytes:
    """The bytes the SMTP server received for `msg` (sent through SmtpHook)."""
    inbox = _INBOX[0]
    before = len(inbox.raw)
    send_message("raw_smtp", msg)
    assert len(inbox.raw) == before + 1
    return inbox.raw[-1]


def _lines(text: str) -> str:
    return "\n".join(text.splitlines())


def _header_names(raw: bytes) -> list[str]:
    head = raw.split(b"\r\n\r\n", 1)[0]
    return [
        line.split(b":", 1)[0].decode().lower()
        for line in head.split(b"\r\n")
        if line[:1] not in (b" ", b"\t")
    ]


def test_runs_on_the_python_the_finding_was_made_on():
    assert sys.version_info[:2] == (3, 11)


def test_encoded_word_with_crlf_in_subject_adds_no_header():
    for subject in (f"anomaly {EW_REPLY_TO}", f"{EW_BCC_B64}", f"x {EW_REPLY_TO} {EW_BCC_B64} ü"):
        msg = build_message(
            sender="finops@example.com", to=["ml@example.com"], subject=subject, html="<p>x</p>"
        )
        raw = _wire(msg)
        assert set(_header_names(raw)) == HEADERS, raw[:600]
        parsed = email.message_from_bytes(raw, policy=default)
        assert parsed["Reply-To"] is None and parsed["Bcc"] is None
        # the reader shows exactly the text we were given, the encoded word as literal text
        assert str(parsed["Subject"]) == clean_header(subject)


def test_alert_title_from_a_tag_value_reaches_smtp_without_extra_headers(alert_smtp):
    ev = AlertEvent(
        kind="anomaly",
        title=f"anomaly team={EW_REPLY_TO}",
        team="ml",
        summary=EW_BCC_B64,
        facts={"Tag": EW_REPLY_TO},
    )
    send_alert_email(ev, alert_smtp.conn_id, ["ml@example.com"])
    (got,) = alert_smtp.messages
    assert alert_smtp.envelopes[0][1] == ["ml@example.com"]
    assert got["Reply-To"] is None and got["Bcc"] is None
    assert EW_REPLY_TO in str(got["Subject"])


@given(subject=hostile_text(), to_local=st.from_regex(r"[a-z0-9._+-]{1,20}", fullmatch=True))
def test_property_headers_are_exactly_ours_and_round_trip(subject, to_local):
    to = f"{to_local.strip('.') or 'x'}@example.com".replace("..", ".")
    msg = build_message(sender="finops@example.com", to=[to], subject=subject, html="<p>x</p>")
    raw = _wire(msg)
    assert set(_header_names(raw)) == HEADERS
    head = raw.split(b"\r\n\r\n", 1)[0]
    assert all(len(line) <= 998 for line in head.split(b"\r\n"))
    assert b"\r" not in head.replace(b"\r\n", b"") and b"\n" not in head.replace(b"\r\n", b"")
    parsed = email.message_from_bytes(raw, policy=default)
    assert str(parsed["Subject"]) == (clean_header(subject) or "(no subject)")
    assert [a.addr_spec for a in parsed["To"].addresses] == [to]


@given(title=hostile_text(), summary=hostile_text(), fact=hostile_text())
def test_property_alert_body_keeps_hostile_text_as_escaped_text(title, summary, fact):
    from finops.alerts.email import render_alert_html

    ev = AlertEvent(kind="anomaly", title=title, team="ml", summary=summary, facts={"Tag": fact})
    page = render_alert_html(ev)
    msg = build_message(sender="finops@example.com", to=["ml@example.com"], subject=title, html=page)
    parsed = email.message_from_bytes(_wire(msg), policy=default)
    assert set(k.lower() for k in parsed.keys()) == HEADERS
    body = parsed.get_body(("html",)).get_content()
    assert "<!channel>" not in body and "<http://evil" not in body
    for text in (title, summary, fact):
        # every user string is in the body as escaped text (line breaks normalised by MIME)
        assert _lines(body_text(str(escape(text)))) in _lines(body)
    parts = [p.get_content_type() for p in parsed.walk()]
    assert parts == ["multipart/mixed", "text/html"]


def test_many_recipients_are_all_kept():
    to = [f"team{i}@example.com" for i in range(40)]
    msg = build_message(sender="finops@example.com", to=to, subject="s", html="<p>x</p>")
    parsed = email.message_from_bytes(_wire(msg), policy=default)
    assert [a.addr_spec for a in parsed["To"].addresses] == to

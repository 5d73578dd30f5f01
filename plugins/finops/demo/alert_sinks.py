"""Where the demo's alerts land instead of a real Slack workspace and mail server: a local
Slack incoming-webhook endpoint and a real SMTP server on loopback (aiosmtpd), each wired to
an Airflow connection for as long as it runs. The product sends through its real code paths
(SlackWebhookHook, smtplib), so what these catch is exactly what a team would receive.

The test fixtures (tests/fixtures/alerts.py) use the same SMTP recorder.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Lock, Thread
from typing import Any

from finops.demo.emulators import airflow_connection, free_port

SLACK_PATH = "/services/T0000DEMO/B0000DEMO/demoWebhookToken0000"


# ------------------------------------------------------------------ SMTP (aiosmtpd)
@dataclass
class SmtpInbox:
    """What the loopback SMTP server accepted, in order."""

    conn_id: str
    port: int
    envelopes: list[tuple[str, list[str]]] = field(default_factory=list)
    messages: list[EmailMessage] = field(default_factory=list)


class SmtpRecorder:
    """aiosmtpd handler: accept every message and keep it in the inbox."""

    def __init__(self, inbox: SmtpInbox):
        self.inbox = inbox

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 - aiosmtpd hook
        self.inbox.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        raw = envelope.original_content or envelope.content
        self.inbox.messages.append(message_from_bytes(raw, policy=default))
        return "250 Message accepted for delivery"


def smtp_connection(port: int, sender: str = "finops@example.com") -> dict[str, Any]:
    """Airflow SMTP connection for a plain-text loopback server (no TLS, no retries)."""
    return {
        "conn_type": "smtp",
        "host": "127.0.0.1",
        "port": port,
        "extra": {
            "disable_tls": True,
            "disable_ssl": True,
            "from_email": sender,
            "retry_limit": 0,
            "timeout": 10,
        },
    }


@contextlib.contextmanager
def smtp_server(conn_id: str | None = None) -> Iterator[SmtpInbox]:
    """A real SMTP server on a free loopback port; `AIRFLOW_CONN_<conn_id>` points at it."""
    from aiosmtpd.controller import Controller

    port = free_port()
    inbox = SmtpInbox(conn_id=conn_id or "", port=port)
    ctl = Controller(SmtpRecorder(inbox), hostname="127.0.0.1", port=port)
    ctl.start()
    try:
        with airflow_connection(conn_id, smtp_connection(port)):
            yield inbox
    finally:
        ctl.stop()


# ------------------------------------------------------------------ Slack incoming webhook
@dataclass
class SlackCatcher:
    """The payloads POSTed to the webhook URL (Block Kit JSON: {text, blocks})."""

    url: str
    posts: list[dict[str, Any]] = field(default_factory=list)
    lock: Lock = field(default_factory=Lock, repr=False)


class _SlackHandler(BaseHTTPRequestHandler):
    """Answers as hooks.slack.com does: 200 "ok"; 404 "no_service" for an unknown webhook
    path; 400 "invalid_payload" / "no_text" for a body Slack would refuse."""

    server: _SlackServer

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != SLACK_PATH:
            return self._answer(404, "no_service")
        try:
            payload = json.loads(body)
        except ValueError:
            return self._answer(400, "invalid_payload")
        if not isinstance(payload, dict) or not (payload.get("text") or payload.get("blocks")):
            return self._answer(400, "no_text")
        with self.server.catcher.lock:
            self.server.catcher.posts.append(payload)
        self._answer(200, "ok")

    def _answer(self, status: int, text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass


class _SlackServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _SlackHandler)
        self.catcher = SlackCatcher(url=f"http://127.0.0.1:{self.server_address[1]}{SLACK_PATH}")


@contextlib.contextmanager
def slack_webhook(conn_id: str | None = None) -> Iterator[SlackCatcher]:
    """A local Slack incoming-webhook endpoint; `AIRFLOW_CONN_<conn_id>` is a slackwebhook
    connection whose password is its URL (as a real webhook connection holds the URL)."""
    server = _SlackServer()
    thread = Thread(target=server.serve_forever, name="slack-webhook", daemon=True)
    thread.start()
    try:
        with airflow_connection(conn_id, {"conn_type": "slackwebhook", "password": server.catcher.url}):
            yield server.catcher
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# ------------------------------------------------------------------ what was caught, on disk
def write_captured(slack: SlackCatcher, inbox: SmtpInbox, out: Path) -> tuple[Path, list[Path]]:
    """slack.jsonl (one payload a line) and one .eml file per e-mail, under `out` (emptied
    first, so a re-run shows this run's alerts only). Returns the paths."""
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("mail-*.eml"), out / "slack.jsonl"]:
        old.unlink(missing_ok=True)
    slack_file = out / "slack.jsonl"
    with slack.lock:
        slack_file.write_text("".join(json.dumps(p) + "\n" for p in slack.posts))
    mails = []
    for i, msg in enumerate(inbox.messages, 1):
        path = out / f"mail-{i:02d}.eml"
        path.write_bytes(msg.as_bytes())
        mails.append(path)
    return slack_file, mails

"""Email delivery through the SMTP provider (SmtpHook: host, port, TLS and login come from
the Airflow connection). HTML body, an inline chart PNG (multipart/related, cid:), CSV
attachments.

Header injection is impossible by construction: every header value has CR, LF and other
control characters removed, addresses must match a strict pattern, and the message is
built with the stdlib `email` policy that refuses line breaks in headers anyway.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import formatdate, make_msgid

from finops.alerts.events import AlertEvent

_CTRL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029\x85]+")
_ADDR = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                   r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$")
_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")


class EmailAddressError(ValueError):
    pass


def clean_header(value: object, max_len: int = 200) -> str:
    """A header-safe single line: control characters (CR, LF, NUL, ...) become spaces."""
    s = _CTRL.sub(" ", str(value)).strip()
    s = re.sub(r"\s{2,}", " ", s)
    return s[:max_len]


def validate_address(addr: str) -> str:
    """A bare mailbox `local@domain`; anything else (display names, lists, CR/LF) is refused."""
    if not isinstance(addr, str) or _CTRL.search(addr) or len(addr) > 254 or not _ADDR.match(addr):
        raise EmailAddressError(f"not a valid e-mail address: {addr!r}"[:300])
    return addr


def safe_filename(name: str) -> str:
    cleaned = _FILENAME.sub("_", clean_header(name, 100)).strip("._") or "attachment"
    return cleaned[:100]


@dataclass(frozen=True)
class Attachment:
    filename: str
    content: bytes
    mimetype: str = "text/csv"


def build_message(
    *, sender: str, to: Sequence[str], subject: str, html: str, chart_png: bytes | None = None,
    chart_cid: str | None = None, attachments: Sequence[Attachment] = (),
) -> EmailMessage:
    """multipart/mixed[ multipart/related[ text/html, image/png (inline) ], attachments... ]."""
    recipients = [validate_address(a) for a in to]
    if not recipients:
        raise EmailAddressError("no recipients")
    msg = EmailMessage(policy=SMTP)
    msg["From"] = validate_address(sender)
    msg["To"] = ", ".join(recipients)
    msg["Subject"] = clean_header(subject)
    msg["Date"] = formatdate(localtime=False, usegmt=True)
    msg["Message-ID"] = make_msgid(domain=sender.rsplit("@", 1)[1])
    msg.set_content("This message is HTML; open it in an HTML-capable mail client.")
    msg.add_alternative(html, subtype="html")
    if chart_png is not None:
        cid = chart_cid or "chart"
        html_part = msg.get_payload()[1]
        html_part.add_related(chart_png, maintype="image", subtype="png", cid=f"<{cid}>",
                              filename=f"{cid}.png", disposition="inline")
    for att in attachments:
        maintype, subtype = att.mimetype.split("/", 1)
        msg.add_attachment(att.content, maintype=maintype, subtype=subtype, filename=safe_filename(att.filename))
    return msg


def send_message(conn_id: str, msg: EmailMessage) -> None:
    """Send through the connection's SMTP server (SmtpHook opens / authenticates / closes)."""
    from airflow.providers.smtp.hooks.smtp import SmtpHook

    with SmtpHook(smtp_conn_id=conn_id) as hook:
        client = hook._smtp_client  # the provider exposes no send for a prebuilt MIME message
        if client is None:
            raise RuntimeError(f"SMTP connection {conn_id!r} did not open")
        client.send_message(msg)


def default_sender(conn_id: str) -> str:
    from airflow.sdk import BaseHook

    extra = BaseHook.get_connection(conn_id).extra_dejson
    return validate_address(extra.get("from_email") or "finops@localhost.localdomain")


def render_alert_html(event: AlertEvent) -> str:
    from jinja2 import Environment

    env = Environment(autoescape=True)
    tpl = env.from_string(
        """<html><body style="font-family:sans-serif">
<h2>{{ e.title }}</h2>
<p><b>{{ e.severity }}</b> · {{ e.kind }}{% if e.team %} · team {{ e.team }}{% endif %}</p>
{% if e.summary %}<p>{{ e.summary }}</p>{% endif %}
<table border="1" cellpadding="4" cellspacing="0">
{% for k, v in e.facts.items() %}<tr><th align="left">{{ k }}</th><td>{{ v }}</td></tr>
{% endfor %}</table>
{% for name, url in links %}<p><a href="{{ url }}">{{ name }}</a></p>{% endfor %}
</body></html>"""
    )
    links = [(n, u) for n, u in event.links.items() if re.fullmatch(r"https?://[^\s\"'<>]{1,2000}", str(u))]
    return tpl.render(e=event, links=links)


def send_alert_email(event: AlertEvent, conn_id: str, to: Sequence[str]) -> None:
    from finops.alerts.csv_safe import to_csv

    csv_text = to_csv(["fact", "value"], [(k, v) for k, v in event.facts.items()])
    msg = build_message(
        sender=default_sender(conn_id), to=to, subject=f"[finops {event.severity}] {event.title}",
        html=render_alert_html(event), attachments=[Attachment("alert.csv", csv_text.encode())],
    )
    send_message(conn_id, msg)

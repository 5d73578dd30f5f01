"""Email delivery through the SMTP provider (SmtpHook: host, port, TLS and login come from
the Airflow connection). HTML body, an inline chart PNG (multipart/related, cid:), CSV
attachments.

Header injection is impossible by construction: every header goes through `set_header`, the
one encoding path. Control characters (CR, LF, NUL, NEL, U+2028, ...) are removed; text that
is not plain printable ASCII, or that contains the `=?` of an RFC 2047 encoded word, is sent
as encoded words of its own (email.header.Header), so a reader shows the exact text and an
encoded word smuggled in a tag value stays literal text. Addresses must be bare mailboxes.
Bodies pass `body_text` (no lone surrogates, no control characters but tab and line breaks).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from email.header import Header
from email.headerregistry import Address
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import formatdate, make_msgid

from finops.alerts.model import AlertEvent
from finops.exceptions import FinopsError

_CTRL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")  # C0, DEL, C1 (NEL included), line / paragraph sep.
_BODY_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # what no HTML or text body needs
_ADDR = re.compile(
    r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$"
)
_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")


class EmailAddressError(FinopsError, ValueError):
    pass


def clean_header(value: object, max_len: int = 200) -> str:
    """A header-safe single line: control characters (CR, LF, NUL, ...) become spaces."""
    s = _CTRL.sub(" ", str(value)).strip()
    s = re.sub(r"\s{2,}", " ", s)
    return s[:max_len]


def validate_address(addr: str) -> str:
    """A bare mailbox `local@domain`; anything else (display names, lists, CR/LF) is refused.
    The strict pattern decides; the email package must then read it back as the same mailbox."""
    if not isinstance(addr, str) or _CTRL.search(addr) or len(addr) > 254 or not _ADDR.match(addr):
        raise EmailAddressError(f"not a valid e-mail address: {addr!r}"[:300])
    try:
        same = Address(addr_spec=addr).addr_spec == addr
    except (ValueError, IndexError):
        same = False
    if not same:
        raise EmailAddressError(f"not a valid e-mail address: {addr!r}"[:300])
    return addr


def encode_header(name: str, value: object, max_len: int = 200) -> str:
    """`value` as a folded header value that only ever means itself.

    Plain printable ASCII without `=?` goes as it is; anything else becomes RFC 2047 encoded
    words (UTF-8), where `=`, `?`, CR and LF are themselves encoded. Hand-folded because the
    policy's own path re-parses the value: on CPython 3.11.7 it decodes an encoded word it
    finds in our text and writes the decoded CR/LF out raw (a real Reply-To / Bcc header)."""
    text = clean_header(value, max_len)
    plain = text.isascii() and text.isprintable() and "=?" not in text
    return Header(text, "us-ascii" if plain else "utf-8", header_name=name, maxlinelen=76).encode(
        linesep="\r\n"
    )


def set_header(msg: EmailMessage, name: str, value: object, max_len: int = 200) -> None:
    """The one way a header enters a message (set_raw: stored as encoded, never re-parsed)."""
    if name in msg:
        del msg[name]
    msg.set_raw(name, encode_header(name, value, max_len))


def body_text(text: str) -> str:
    """A body part's text: lone surrogates become U+FFFD (they cannot be encoded), control
    characters other than tab and line breaks are dropped; MIME normalises the line breaks."""
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return _BODY_CTRL.sub("", text)


def safe_filename(name: str) -> str:
    cleaned = _FILENAME.sub("_", clean_header(name, 100)).strip("._") or "attachment"
    return cleaned[:100]


@dataclass(frozen=True)
class Attachment:
    filename: str
    content: bytes
    mimetype: str = "text/csv"


def build_message(
    *,
    sender: str,
    to: Sequence[str],
    subject: str,
    html: str,
    chart_png: bytes | None = None,
    chart_cid: str | None = None,
    attachments: Sequence[Attachment] = (),
) -> EmailMessage:
    """multipart/mixed[ multipart/related[ text/html, image/png (inline) ], attachments... ]."""
    recipients = [validate_address(a) for a in to]
    if not recipients:
        raise EmailAddressError("no recipients")
    msg = EmailMessage(policy=SMTP)
    set_header(msg, "From", validate_address(sender))
    set_header(msg, "To", ", ".join(recipients), max_len=100_000)  # validated mailboxes: never cut
    set_header(msg, "Subject", subject)
    set_header(msg, "Date", formatdate(localtime=False, usegmt=True))
    set_header(msg, "Message-ID", make_msgid(domain=sender.rsplit("@", 1)[1]))
    msg.set_content("This message is HTML; open it in an HTML-capable mail client.")
    msg.add_alternative(body_text(html), subtype="html")
    if chart_png is not None:
        cid = _FILENAME.sub("_", chart_cid or "chart")[:60] or "chart"  # goes into Content-ID
        html_part = list(msg.iter_parts())[1]  # [text/plain, text/html] after add_alternative
        html_part.add_related(
            chart_png,
            maintype="image",
            subtype="png",
            cid=f"<{cid}>",
            filename=f"{cid}.png",
            disposition="inline",
        )
    for att in attachments:
        maintype, subtype = att.mimetype.split("/", 1)
        msg.add_attachment(
            att.content, maintype=maintype, subtype=subtype, filename=safe_filename(att.filename)
        )
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
        sender=default_sender(conn_id),
        to=to,
        subject=f"[finops {event.severity}] {event.title}",
        html=render_alert_html(event),
        attachments=[Attachment("alert.csv", csv_text.encode())],
    )
    send_message(conn_id, msg)

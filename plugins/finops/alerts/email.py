"""Email delivery through the SMTP provider's public API: SmtpHook.send_email_smtp (host,
port, TLS, login or OAuth2 and retries come from the Airflow connection). An HTML body, a chart
PNG the HTML shows inline (`cid:<name>.png`: the hook gives every file part a Content-ID of
its file name), CSV attachments.

`build_message` validates and encodes everything first; the hook only assembles the MIME.
Header injection is impossible by construction: the one header value we supply from text (the
subject) goes through `header_value`, the one encoding path. Control characters (CR, LF, NUL,
NEL, U+2028, ...) are removed; text that is not plain printable ASCII, or that contains the `=?`
of an RFC 2047 encoded word, is sent as encoded words of its own (email.header.Header), so a
reader shows the exact text and an encoded word smuggled in a tag value stays literal text.
Addresses must be bare mailboxes. Bodies pass `body_text` (no lone surrogates, no control
characters but tab and line breaks). Attachment names pass `safe_filename`.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from email.header import Header
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

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


def header_value(name: str, value: object, max_len: int = 200) -> str:
    """`encode_header` on one line: the encoded words (each within RFC 2047's 75 characters) or
    the plain words joined by the single spaces they were folded at. The hook's message folds
    it again at those spaces; a reader joins adjacent encoded words back into the exact text."""
    return encode_header(name, value, max_len).replace("\r\n", "")


def set_header(msg: EmailMessage, name: str, value: object, max_len: int = 200) -> None:
    """A header on a message we assemble ourselves (set_raw: stored as encoded, never re-parsed)."""
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


@dataclass(frozen=True)
class Email:
    """A message ready for SmtpHook.send_email_smtp: addresses validated, subject encoded
    (`header_value`), body cleaned (`body_text`), attachment names made safe and unique."""

    sender: str
    to: tuple[str, ...]
    subject: str
    html: str
    attachments: tuple[Attachment, ...]
    message_id: str


def chart_ref(chart_cid: str | None = None) -> str:
    """What an <img src> puts for the chart `build_message` attaches under `chart_cid`."""
    return f"cid:{_chart_name(chart_cid)}"


def _chart_name(chart_cid: str | None) -> str:
    return (_FILENAME.sub("_", chart_cid or "chart")[:60].strip("._") or "chart") + ".png"


def build_message(
    *,
    sender: str,
    to: Sequence[str],
    subject: str,
    html: str,
    chart_png: bytes | None = None,
    chart_cid: str | None = None,
    attachments: Sequence[Attachment] = (),
) -> Email:
    """Validate and encode one e-mail. The chart travels as `<chart_cid>.png` (Content-ID the
    same), which the HTML shows with `src` = `chart_ref(chart_cid)`."""
    recipients = tuple(validate_address(a) for a in to)
    if not recipients:
        raise EmailAddressError("no recipients")
    sender = validate_address(sender)
    files: list[Attachment] = []
    if chart_png is not None:
        files.append(Attachment(_chart_name(chart_cid), chart_png, "image/png"))
    taken = {f.filename for f in files}
    for att in attachments:
        name = safe_filename(att.filename)
        stem, dot, ext = name.rpartition(".") if "." in name else (name, "", "")
        n = 1
        while name in taken:  # one file per name: the hook names parts (and Content-IDs) after files
            n += 1
            name = f"{stem}-{n}{dot}{ext}"
        taken.add(name)
        files.append(Attachment(name, att.content, att.mimetype))
    return Email(
        sender=sender,
        to=recipients,
        # the hook refuses an empty subject or body (it would read templates from the connection)
        subject=header_value("Subject", subject) or "(no subject)",
        html=body_text(html) or "<html><body></body></html>",
        attachments=tuple(files),
        message_id=make_msgid(domain=sender.rsplit("@", 1)[1]),
    )


def send_message(conn_id: str, msg: Email) -> None:
    """Send through the connection's SMTP server with the provider's public API
    (SmtpHook.send_email_smtp: it opens, authenticates, retries per the connection and closes).
    The hook attaches files by path, so attachments are written to a private temporary folder."""
    from airflow.providers.smtp.hooks.smtp import SmtpHook

    with tempfile.TemporaryDirectory(prefix="finops-mail-") as tmp:
        paths = []
        for att in msg.attachments:
            path = Path(tmp) / att.filename
            path.write_bytes(att.content)
            paths.append(str(path))
        with SmtpHook(smtp_conn_id=conn_id) as hook:
            hook.send_email_smtp(
                to=list(msg.to),
                from_email=msg.sender,
                subject=msg.subject,
                html_content=msg.html,
                files=paths,
                custom_headers={"Message-ID": msg.message_id},
            )


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

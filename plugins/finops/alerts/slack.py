"""Slack delivery through the Slack provider: SlackWebhookHook for webhook connections,
SlackHook (chat.postMessage) for API-token connections. Messages are Block Kit.

Every user-controlled string is escaped for mrkdwn (&, <, >), so a tag value such as
`<!channel>` or `<@U123>` or `<http://evil|click>` renders as text and pings no one; text
objects carrying user data are also `verbatim` (no auto-linking of names or URLs). HTTP 429
is retried after its Retry-After, a bounded number of times with a capped wait.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from slack_sdk.http_retry import RetryHandler, RetryState
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, ServerErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse

from finops.alerts.model import AlertEvent

log = logging.getLogger(__name__)

HEADER_MAX, SECTION_MAX, FIELD_MAX, FALLBACK_MAX = 150, 3000, 2000, 3000
_PARTIAL_ENTITY = re.compile(r"&[a-z]{0,3}$")
_EMOJI = {"info": ":information_source:", "warning": ":warning:", "critical": ":rotating_light:"}


def escape(text: Any) -> str:
    """Slack mrkdwn escaping: the three control characters, nothing else (per Slack docs)."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(text: str, limit: int) -> str:
    """Cut an already-escaped string to `limit` chars without splitting an entity."""
    if len(text) <= limit:
        return text
    cut = _PARTIAL_ENTITY.sub("", text[: limit - 1])
    return cut + "…"


def _safe_url(url: str) -> str | None:
    url = str(url).strip()
    if re.fullmatch(r"https?://[^\s<>|]{1,2900}", url):
        return url
    return None


def build_message(event: AlertEvent) -> dict[str, Any]:
    """Block Kit payload ({text, blocks}) for an AlertEvent."""
    sev = _EMOJI.get(event.severity, "")
    title = clip(escape(event.title), HEADER_MAX - 3)
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": title, "emoji": False}},
    ]
    context = f"{sev} *{escape(event.severity)}* · {escape(event.kind)}"
    if event.team:
        context += f" · team {escape(event.team)}"
    blocks.append(
        {"type": "context", "elements": [{"type": "mrkdwn", "text": clip(context, 300), "verbatim": True}]}
    )
    if event.summary:
        blocks.append(
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": clip(escape(event.summary), SECTION_MAX),
                    "verbatim": True,
                },
            }
        )
    fields = [
        {"type": "mrkdwn", "verbatim": True, "text": clip(f"*{escape(k)}*\n{escape(v)}", FIELD_MAX)}
        for k, v in list(event.facts.items())[:20]
    ]
    for i in range(0, len(fields), 10):  # Slack: at most 10 fields per section
        blocks.append({"type": "section", "fields": fields[i : i + 10]})
    buttons = []
    for name, url in list(event.links.items())[:5]:
        safe = _safe_url(url)
        if safe:
            buttons.append(
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": clip(escape(name), 70)},
                    "url": safe,
                }
            )
    if buttons:
        blocks.append({"type": "actions", "elements": buttons})
    text = clip(escape(f"[{event.severity}] {event.title}"), FALLBACK_MAX)
    return {"text": text, "blocks": blocks[:50]}


class BoundedRateLimitHandler(RetryHandler):
    """Retry HTTP 429 after Retry-After seconds (capped at max_wait_s), max_retry_count times."""

    def __init__(self, max_retry_count: int = 3, max_wait_s: float = 30.0):
        super().__init__(max_retry_count=max_retry_count)
        self.max_wait_s = max_wait_s

    def _can_retry(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        return response is not None and response.status_code == 429

    def prepare_for_next_attempt(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        wait = 1.0
        if response is not None:
            for k, v in response.headers.items():
                if k.lower() == "retry-after":
                    raw = v[0] if isinstance(v, list) else v
                    try:
                        wait = float(raw)
                    except (TypeError, ValueError):
                        wait = 1.0
        wait = min(max(wait, 0.0), self.max_wait_s)
        log.warning("slack: 429, retrying in %.1fs (attempt %d)", wait, state.current_attempt + 1)
        state.next_attempt_requested = True
        time.sleep(wait)
        state.increment_current_attempt()


def send_slack(
    event: AlertEvent,
    conn_id: str,
    channel: str | None = None,
    *,
    max_retries: int = 3,
    max_wait_s: float = 30.0,
) -> None:
    """Deliver one event; raises on a final failure (the caller's emit() reports it)."""
    from airflow.providers.slack.hooks.slack import SlackHook
    from airflow.providers.slack.hooks.slack_webhook import SlackWebhookHook
    from airflow.sdk import BaseHook

    payload = build_message(event)
    handlers: list[RetryHandler] = [
        BoundedRateLimitHandler(max_retries, max_wait_s),
        ConnectionErrorRetryHandler(max_retry_count=2),
        ServerErrorRetryHandler(max_retry_count=2),
    ]
    conn = BaseHook.get_connection(conn_id)
    if conn.conn_type == "slack":
        if not channel:
            raise ValueError(
                f"slack connection {conn_id!r} is an API connection: the route needs slack_channel"
            )
        SlackHook(slack_conn_id=conn_id, retry_handlers=handlers).call(
            "chat.postMessage",
            json={"channel": channel, "link_names": False, "unfurl_links": False, **payload},
        )
    else:
        SlackWebhookHook(slack_webhook_conn_id=conn_id, retry_handlers=handlers).send(
            text=payload["text"], blocks=payload["blocks"], unfurl_links=False, unfurl_media=False
        )

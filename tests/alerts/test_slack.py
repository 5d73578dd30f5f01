"""Slack delivery to a local webhook endpoint: Block Kit shape, escaping, 429 + Retry-After."""

from __future__ import annotations

import json
import time

import pytest

from finops.alerts.events import AlertEvent
from finops.alerts.slack import build_message, escape, send_slack
from tests.fixtures.hostile import HOSTILE


def _event(text: str) -> AlertEvent:
    return AlertEvent(
        kind="anomaly",
        title=f"Cost anomaly: {text}",
        team=text,
        summary=f"summary {text}",
        facts={"Monitor": text, text[:50]: "value"},
        dedup_key="k1",
        links={"Open": "https://finops.example/anomalies/1", "Bad": "javascript:alert(1)"},
    )


def _all_text(payload: dict) -> str:
    return json.dumps(payload, ensure_ascii=False)


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_strings_cannot_mention_or_link(hostile):
    payload = build_message(_event(hostile))
    raw = _all_text(payload)
    for bad in ("<!channel>", "<!here", "<@U123ABC>", "<http://evil"):
        assert bad not in raw
    assert "javascript:" not in raw
    for block in payload["blocks"]:
        if block["type"] == "header":
            assert len(block["text"]["text"]) <= 150
        for f in block.get("fields", []):
            assert len(f["text"]) <= 2000 and f["verbatim"] is True
        if block["type"] == "section" and "text" in block:
            assert len(block["text"]["text"]) <= 3000
    assert len(raw) < 20_000  # a 10 kB tag value is cut, not forwarded whole


def test_escape_is_slack_documented_three_characters():
    assert escape("a & <b> > c") == "a &amp; &lt;b&gt; &gt; c"
    assert build_message(_event("&" * 400))["blocks"][0]["text"]["text"].endswith("…")
    assert "&am…" not in build_message(_event("&" * 400))["blocks"][0]["text"]["text"]


def test_webhook_delivery_block_kit(alert_slack):
    alert_slack.server.expect_ordered_request(alert_slack.path, method="POST").respond_with_data("ok")
    send_slack(_event("<!channel> team-a"), alert_slack.conn_id)
    (body,) = alert_slack.payloads()
    assert body["blocks"][0]["type"] == "header"
    assert "&lt;!channel&gt; team-a" in body["text"]
    assert body["unfurl_links"] is False
    assert any(
        b["type"] == "actions" and b["elements"][0]["url"] == "https://finops.example/anomalies/1"
        for b in body["blocks"]
    )


def test_webhook_429_retry_after_is_honoured(alert_slack):
    srv = alert_slack.server
    stamps: list[float] = []

    def limited(request):
        from werkzeug import Response

        stamps.append(time.monotonic())
        return Response("rate_limited", status=429, headers={"Retry-After": "1"})

    def ok(request):
        from werkzeug import Response

        stamps.append(time.monotonic())
        return Response("ok", status=200)

    srv.expect_ordered_request(alert_slack.path, method="POST").respond_with_handler(limited)
    srv.expect_ordered_request(alert_slack.path, method="POST").respond_with_handler(ok)
    send_slack(_event("x"), alert_slack.conn_id)
    assert len(stamps) == 2 and stamps[1] - stamps[0] >= 0.9  # waited the server's Retry-After
    assert alert_slack.payloads()[0] == alert_slack.payloads()[1]


def test_webhook_429_retries_are_bounded_and_wait_capped(alert_slack):
    srv = alert_slack.server
    srv.expect_request(alert_slack.path, method="POST").respond_with_data(
        "rate_limited", status=429, headers={"Retry-After": "3600"}
    )
    with pytest.raises(Exception, match="429"):
        send_slack(_event("x"), alert_slack.conn_id, max_retries=2, max_wait_s=0.05)
    assert len(srv.log) == 3  # first try + 2 retries, each wait capped far below 3600 s


def test_api_connection_needs_a_channel(monkeypatch):
    monkeypatch.setenv(
        "AIRFLOW_CONN_ALERT_SLACK_API", json.dumps({"conn_type": "slack", "password": "xoxb-test"})
    )
    with pytest.raises(ValueError, match="slack_channel"):
        send_slack(_event("x"), "alert_slack_api")


def test_api_connection_posts_chat_message(httpserver, monkeypatch):
    httpserver.expect_request("/api/chat.postMessage", method="POST").respond_with_json(
        {"ok": True, "channel": "C123", "ts": "1.2"}
    )
    conn = {"conn_type": "slack", "password": "xoxb-test", "extra": {"base_url": httpserver.url_for("/api/")}}
    monkeypatch.setenv("AIRFLOW_CONN_ALERT_SLACK_API", json.dumps(conn))
    send_slack(_event("<@U123ABC>"), "alert_slack_api", channel="#finops")
    req, _ = httpserver.log[0]
    body = json.loads(req.get_data())
    assert body["channel"] == "#finops" and body["link_names"] is False
    assert "<@U123ABC>" not in req.get_data(as_text=True)
    assert req.headers["Authorization"] == "Bearer xoxb-test"

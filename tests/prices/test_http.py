"""The retrying client against a real local HTTP server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from werkzeug import Response

from finops.prices.http import (
    HttpClient,
    PriceSourceError,
    RetryableHTTPError,
    parse_retry_after,
    same_origin,
)
from finops.prices.settings import HttpSettings


def _client(sleeps: list[float], **kw) -> HttpClient:
    return HttpClient(HttpSettings(backoff_base_s=0.5, backoff_max_s=8, **kw), sleep=sleeps.append)


def test_429_waits_retry_after_then_succeeds(httpserver):
    httpserver.expect_ordered_request("/x").respond_with_response(
        Response("slow down", 429, {"Retry-After": "7"})
    )
    httpserver.expect_ordered_request("/x").respond_with_json({"ok": 1})
    sleeps: list[float] = []
    c = _client(sleeps)
    assert c.get_json(httpserver.url_for("/x")) == {"ok": 1}
    assert sleeps == [7.0]  # exactly what the server asked for
    assert c.requests_made == 2


def test_retry_after_is_capped(httpserver):
    httpserver.expect_ordered_request("/x").respond_with_response(Response("", 429, {"Retry-After": "86400"}))
    httpserver.expect_ordered_request("/x").respond_with_json({"ok": 1})
    sleeps: list[float] = []
    _client(sleeps, retry_after_max_s=30).get_json(httpserver.url_for("/x"))
    assert sleeps == [30.0]


def test_5xx_backs_off_exponentially_then_succeeds(httpserver):
    for status in (500, 503, 502):
        httpserver.expect_ordered_request("/x").respond_with_response(Response("boom", status))
    httpserver.expect_ordered_request("/x").respond_with_json([1, 2])
    sleeps: list[float] = []
    assert _client(sleeps).get_json(httpserver.url_for("/x")) == [1, 2]
    assert len(sleeps) == 3 and sleeps == sorted(sleeps) and sleeps[-1] > sleeps[0]


def test_attempts_are_bounded(httpserver):
    httpserver.expect_request("/x").respond_with_response(Response("down", 503))
    sleeps: list[float] = []
    c = _client(sleeps, max_attempts=3)
    with pytest.raises(RetryableHTTPError) as ei:
        c.get_json(httpserver.url_for("/x"), {"key": "not-in-the-message"})
    assert ei.value.status == 503 and c.requests_made == 3 and len(sleeps) == 2
    assert "not-in-the-message" not in str(ei.value)


def test_4xx_is_not_retried(httpserver):
    httpserver.expect_request("/x").respond_with_response(Response('{"error":"forbidden"}', 403))
    sleeps: list[float] = []
    c = _client(sleeps)
    with pytest.raises(PriceSourceError, match="HTTP 403"):
        c.get_json(httpserver.url_for("/x"))
    assert c.requests_made == 1 and sleeps == []


def test_non_json_is_an_error(httpserver):
    httpserver.expect_request("/x").respond_with_data("<html>maintenance</html>", content_type="text/html")
    with pytest.raises(PriceSourceError, match="did not return JSON"):
        _client([]).get_json(httpserver.url_for("/x"))


def test_parse_retry_after_forms():
    now = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after(format_datetime(now + timedelta(seconds=90), usegmt=True), now) == 90.0
    assert parse_retry_after(format_datetime(now - timedelta(seconds=90), usegmt=True), now) == 0.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_same_origin():
    base = "https://prices.azure.com/api/retail/prices"
    assert same_origin("https://prices.azure.com:443/api/retail/prices?$skip=100", base)
    assert not same_origin("https://evil.example/api/retail/prices", base)
    assert not same_origin("http://prices.azure.com/api/retail/prices", base)

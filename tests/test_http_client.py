"""finops.http_client against a real local HTTP server (http.server in a thread) that answers
from a script: retries, Retry-After in both forms, give-up, errors without query strings."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from finops.http_client import HttpClient, HttpError, RetryableHttpError, RetrySettings, parse_retry_after


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict / list -> JSON; str / bytes -> as is
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    truncate: bool = False  # announce the whole body, send half of it, close the connection


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.server.seen.append(Seen(self.command, self.path, dict(self.headers), self.rfile.read(length)))
        reply = self.server.script.pop(0) if self.server.script else self.server.default
        time.sleep(reply.delay_s)
        if isinstance(reply.body, dict | list):
            data, ctype = json.dumps(reply.body).encode(), "application/json"
        else:
            data, ctype = (
                (reply.body or "").encode() if isinstance(reply.body, str | None) else reply.body,
                "text/html",
            )
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data[: len(data) // 2] if reply.truncate else data)
            if reply.truncate:
                self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
            pass

    do_GET = do_POST = _answer  # http.server's names

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: list[Reply] = []
        self.default = Reply(200, {"ok": True})
        self.seen: list[Seen] = []

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def api() -> Iterator[_Server]:
    server = _Server()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="http-client-test", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _client(server: _Server, sleeps: list[float], **kw: Any) -> HttpClient:
    settings = RetrySettings(
        **{"backoff_base_s": 0.5, "backoff_max_s": 8.0, "retry_after_max_s": 120.0, **kw}
    )
    return HttpClient(server.base, settings=settings, sleep=sleeps.append)


def test_429_waits_retry_after_seconds(api):
    api.script = [Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "7"}), Reply(200, {"n": 1})]
    sleeps: list[float] = []
    c = _client(api, sleeps)
    assert c.get("/x") == {"n": 1}
    assert sleeps == [7.0] and c.requests_made == 2 and len(api.seen) == 2


def test_429_waits_until_an_http_date(api):
    when = datetime.now(UTC) + timedelta(seconds=90)
    api.script = [Reply(429, "", {"Retry-After": format_datetime(when, usegmt=True)})]
    sleeps: list[float] = []
    assert _client(api, sleeps).get("/x") == {"ok": True}
    [wait] = sleeps
    assert 80 < wait <= 90


def test_retry_after_is_capped(api):
    far = datetime.now(UTC) + timedelta(days=1)
    api.script = [
        Reply(429, "", {"Retry-After": "86400"}),
        Reply(503, "", {"Retry-After": format_datetime(far)}),
    ]
    sleeps: list[float] = []
    _client(api, sleeps, retry_after_max_s=30.0).get("/x")
    assert sleeps == [30.0, 30.0]


def test_503_then_success_backs_off_exponentially(api):
    api.script = [Reply(503, "down"), Reply(502, "down"), Reply(500, "down"), Reply(200, [1, 2])]
    sleeps: list[float] = []
    assert _client(api, sleeps).get("/x") == [1, 2]
    assert sleeps == [0.5, 1.0, 2.0]


def test_gives_up_after_max_attempts_with_a_clear_message(api, caplog):
    api.default = Reply(503, {"error": {"code": "unavailable", "message": "backend overloaded"}})
    sleeps: list[float] = []
    c = _client(api, sleeps, max_attempts=3)
    with caplog.at_level(logging.WARNING, "finops.http_client"), pytest.raises(RetryableHttpError) as ei:
        c.get("/v1/things")
    e = ei.value
    assert e.status == 503 and e.url == f"{api.base}/v1/things"
    assert str(e) == f"GET {api.base}/v1/things: HTTP 503 after 3 attempt(s): backend overloaded"
    assert c.requests_made == len(api.seen) == 3 and len(sleeps) == 2
    assert "retry 2/2" in caplog.text


def test_4xx_is_not_retried(api):
    api.script = [Reply(404, {"error": {"code": "notFound", "message": "no such instance"}})]
    sleeps: list[float] = []
    with pytest.raises(HttpError, match="HTTP 404 after 1 attempt.*no such instance") as ei:
        _client(api, sleeps).get("/x")
    assert ei.value.status == 404 and not isinstance(ei.value, RetryableHttpError)
    assert len(api.seen) == 1 and sleeps == []


def test_non_json_body_is_a_clear_error(api):
    api.script = [Reply(200, "<html>maintenance</html>")]
    with pytest.raises(HttpError, match=r"GET http://127\.0\.0\.1:\d+/x did not return JSON: '<html>maint"):
        _client(api, []).get("/x?page=2")
    assert len(api.seen) == 1  # not retried: a proxy page will not turn into JSON


def test_empty_body_is_none_unless_the_caller_forbids_it(api):
    class Strict(HttpClient):
        allow_empty = False

    api.default = Reply(202, "")
    assert _client(api, []).post("/op") is None
    with pytest.raises(HttpError, match="did not return JSON"):
        Strict(api.base).get("/op")


def test_token_is_asked_each_attempt_and_sent_as_bearer(api):
    issued: list[str] = []

    def token() -> str:
        issued.append(f"tok-{len(issued) + 1}")
        return issued[-1]

    api.script = [Reply(429, "", {"Retry-After": "0"}), Reply(401, {"error": {"message": "expired"}})]
    c = HttpClient(api.base, token=token, sleep=lambda s: None)
    with pytest.raises(HttpError) as ei:
        c.get("/x")
    assert [s.headers["Authorization"] for s in api.seen] == ["Bearer tok-1", "Bearer tok-2"]
    assert api.seen[0].headers["Accept"] == "application/json"
    assert "tok-" not in str(ei.value)
    # a static key works the same; no token, no header
    HttpClient(api.base, token="static-key").get("/x")
    HttpClient(api.base).get("/x")
    assert (
        api.seen[-2].headers["Authorization"] == "Bearer static-key"
        and "Authorization" not in api.seen[-1].headers
    )


def test_query_string_stays_out_of_errors_and_logs(api, caplog):
    api.default = Reply(500, "boom")
    c = _client(api, [], max_attempts=2)
    with caplog.at_level(logging.DEBUG, "finops.http_client"), pytest.raises(HttpError) as ei:
        c.get("/list?sig=secret-in-path", params={"key": "secret-in-params"})
    assert "secret-in-params" in api.seen[0].path and "secret-in-path" in api.seen[0].path  # it was sent
    assert "secret" not in str(ei.value) and "secret" not in caplog.text
    assert f"{api.base}/list" in str(ei.value)


def test_no_response_is_retried_then_reported_without_query(api):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps: list[float] = []
    c = HttpClient(f"http://127.0.0.1:{port}", settings=RetrySettings(max_attempts=2), sleep=sleeps.append)
    with pytest.raises(RetryableHttpError, match="no response after 2 attempt") as ei:
        c.get("/x", params={"key": "secret"})
    assert ei.value.status == 0 and "secret" not in str(ei.value) and sleeps == [1.0]


def test_timeout_is_retried_then_reported(api):
    api.script = [Reply(200, {"late": True}, delay_s=1.0)]
    sleeps: list[float] = []
    c = _client(api, sleeps, timeout_s=0.2)
    assert c.get("/x") == {"ok": True}  # the second attempt got the default reply
    assert sleeps == [0.5]
    api.default = Reply(200, {"late": True}, delay_s=1.0)
    with pytest.raises(RetryableHttpError, match="Timeout"):
        _client(api, [], timeout_s=0.2, max_attempts=2).get("/x")


def test_a_body_cut_off_midway_is_no_response(api):
    """A connection dropped while the body streams in (requests raises ChunkedEncodingError from
    inside session.request) is retried like any lost answer, and reported as our error type
    without the query string. Before, the raw requests exception escaped, with no retry, past
    every caller's `except HttpError`."""
    body = {"items": list(range(200))}
    api.script = [Reply(200, body, truncate=True), Reply(200, body)]
    sleeps: list[float] = []
    assert _client(api, sleeps).get("/x", params={"key": "secret"}) == body
    assert sleeps == [0.5] and len(api.seen) == 2

    api.default = Reply(200, body, truncate=True)
    with pytest.raises(RetryableHttpError, match="no response after 2 attempt.*ChunkedEncodingError") as ei:
        _client(api, [], max_attempts=2).get("/x", params={"key": "secret"})
    assert ei.value.status == 0 and "secret" not in str(ei.value)
    api.seen.clear()
    with pytest.raises(HttpError, match="no response after 1 attempt"):  # may have acted: never resent
        _client(api, []).post("/launch", json={"n": 1}, idempotent=False)
    assert len(api.seen) == 1


def test_non_idempotent_call_retries_429_only(api):
    api.script = [Reply(429, "", {"Retry-After": "1"}), Reply(500, {"error": {"message": "maybe created"}})]
    sleeps: list[float] = []
    with pytest.raises(HttpError, match="HTTP 500 after 2 attempt"):
        _client(api, sleeps).post("/launch", json={"n": 1}, idempotent=False)
    assert sleeps == [1.0] and [json.loads(s.body) for s in api.seen] == [{"n": 1}, {"n": 1}]


def test_next_page_links_absolute_on_the_same_host_only(api):
    c = _client(api, [])
    assert c.get(f"{api.base}/page2?$skiptoken=abc") == {"ok": True}
    assert api.seen[-1].path == "/page2?$skiptoken=abc"
    with pytest.raises(HttpError, match="off the API host"):
        c.get("http://169.254.169.254/latest/meta-data?x=1")
    assert len(api.seen) == 1  # refused before anything (or any token) was sent


def test_caller_error_types_are_kept(api):
    from finops.gpubench.launchers.rest import ApiError
    from finops.gpubench.launchers.rest import RestClient as BenchClient
    from finops.policies.rest import RestClient, RestError
    from finops.prices.http import HttpClient as PriceClient
    from finops.prices.http import PriceSourceError, RetryableHTTPError
    from finops.prices.settings import HttpSettings

    api.default = Reply(503, "down")
    with pytest.raises(RetryableHTTPError) as pe:
        PriceClient(HttpSettings(max_attempts=2), sleep=lambda s: None).get_json(f"{api.base}/p")
    assert isinstance(pe.value, PriceSourceError) and isinstance(pe.value, RetryableHttpError)
    with pytest.raises(RestError):
        RestClient(api.base, retries=1, backoff_s=0).get("/r")
    with pytest.raises(ApiError):
        BenchClient(api.base, "k", max_attempts=1).call("GET", "/b")
    assert issubclass(PriceSourceError, HttpError) and issubclass(RestError, HttpError)


def test_parse_retry_after_forms():
    now = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    assert (
        parse_retry_after("12") == 12.0
        and parse_retry_after(" 1.5 ") == 1.5
        and parse_retry_after("-3") == 0.0
    )
    assert parse_retry_after(format_datetime(now + timedelta(seconds=90), usegmt=True), now) == 90.0
    assert parse_retry_after(format_datetime(now - timedelta(seconds=90), usegmt=True), now) == 0.0
    assert (
        parse_retry_after("soon") is None
        and parse_retry_after(None) is None
        and parse_retry_after("nan") is None
    )

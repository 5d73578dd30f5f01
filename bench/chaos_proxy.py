"""A small HTTP fault proxy for the cloud emulators (bench/chaos.py, tests/chaos/): forwards each
request to the upstream (moto) or, at `rate`, answers it with a fault instead:

- `500` / `503`: an AWS-shaped error (InternalError / ServiceUnavailable), nothing forwarded;
- `429`: Throttling with `Retry-After: 1`, nothing forwarded;
- `timeout`: the request IS forwarded, then the answer is held past the client's read timeout
  (the call happened; the client does not know: the case the audit log must call "unknown");
- `reset`: the request is forwarded, then the connection is reset instead of answering.

Hand-written rather than a library (toxiproxy needs its own daemon) because the faults must be
chosen per request and counted; ~100 lines of the standard library."""

from __future__ import annotations

import http.client
import random
import socket
import struct
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

FAULTS = ("500", "503", "429", "timeout", "reset")
_ERRORS = {
    "500": ("InternalError", "We encountered an internal error."),
    "503": ("ServiceUnavailable", "Service is unavailable."),
    "429": ("Throttling", "Rate exceeded"),
}


class FaultProxy:
    def __init__(
        self,
        upstream: str,
        *,
        rate: float,
        rng: random.Random,
        hold_s: float = 3.0,
        faults: tuple[str, ...] = FAULTS,
    ):
        u = urlsplit(upstream)
        self.host, self.port = u.hostname or "127.0.0.1", u.port or 80
        self.rate, self.rng, self.hold_s, self.faults = rate, rng, hold_s, faults
        self.injected: Counter = Counter()
        self.forwarded = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FaultProxy:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _pick(self) -> str | None:
        with self._lock:
            if self.rng.random() >= self.rate:
                return None
            fault = self.rng.choice(self.faults)
            self.injected[fault] += 1
            return fault

    def _forward(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list, bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
            with self._lock:
                self.forwarded += 1
            return r.status, r.getheaders(), r.read()
        finally:
            conn.close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _any(self) -> None:
                try:
                    self._answer()
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout): expected
                    self.close_connection = True

            def _answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                fault = proxy._pick()
                if fault in _ERRORS:
                    code, msg = _ERRORS[fault]
                    out = (
                        f'<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>{code}</Code>'
                        f"<Message>{msg}</Message></Error></Errors><RequestID>chaos</RequestID></Response>"
                    ).encode()
                    self.send_response(int(fault))
                    if fault == "429":
                        self.send_header("Retry-After", "1")
                    self.send_header("Content-Type", "text/xml")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                    return
                status, resp_headers, out = proxy._forward(self.command, self.path, headers, body)
                if fault == "timeout":
                    time.sleep(proxy.hold_s)  # past the client's read timeout: it gives up
                if fault == "reset":  # RST instead of an answer
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.close_connection = True
                    self.connection.close()
                    return
                self.send_response(status)
                for k, v in resp_headers:
                    if k.lower() not in (
                        "transfer-encoding",
                        "connection",
                        "content-length",
                        "server",
                        "date",
                    ):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any  # noqa: N815

        return Handler

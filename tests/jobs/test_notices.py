"""Interruption notices against a loopback HTTP server speaking the metadata services' shapes:
AWS IMDSv2 (token PUT, then 404 until a notice, 401 without the token), GCP `preempted`
(needs Metadata-Flavor: Google), Azure Scheduled Events (needs Metadata: true)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from finops.jobs.notices import aws_check, azure_check, check_for, gcp_check, watch

TOKEN = "AQAEAFake-token=="


class _Metadata(BaseHTTPRequestHandler):
    state: dict = {}

    def log_message(self, *args):
        pass

    def _send(self, code: int, body: bytes = b"", ctype: str = "text/plain") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        if self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self._send(200, TOKEN.encode())
        self._send(400)

    def do_GET(self):
        s = self.state
        if self.path.startswith("/latest/meta-data/"):
            if self.headers.get("X-aws-ec2-metadata-token") != TOKEN:
                return self._send(401)
            key = self.path.removeprefix("/latest/meta-data/")
            return (
                self._send(200, json.dumps(s[key]).encode(), "application/json")
                if key in s
                else self._send(404)
            )
        if self.path == "/computeMetadata/v1/instance/preempted":
            if self.headers.get("Metadata-Flavor") != "Google":
                return self._send(403)
            return self._send(200, b"TRUE" if s.get("gcp_preempted") else b"FALSE")
        if self.path == "/metadata/scheduledevents?api-version=2020-07-01":
            if self.headers.get("Metadata") != "true":
                return self._send(400)
            doc = {"DocumentIncarnation": 2, "Events": s.get("azure_events", [])}
            return self._send(200, json.dumps(doc).encode(), "application/json")
        self._send(404)


@pytest.fixture
def metadata():
    _Metadata.state = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Metadata)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", _Metadata.state
    server.shutdown()


def test_aws_spot_notice_and_rebalance(metadata):
    base, state = metadata
    check = aws_check(base)
    assert check() is None
    state["events/recommendations/rebalance"] = {"noticeTime": "2026-11-25T12:00:00Z"}
    assert check() == "aws rebalance recommendation at 2026-11-25T12:00:00Z"
    state["spot/instance-action"] = {"action": "terminate", "time": "2026-11-25T12:02:00Z"}
    assert check() == "aws spot interruption notice: terminate at 2026-11-25T12:02:00Z"


def test_gcp_preempted(metadata):
    base, state = metadata
    assert gcp_check(base)() is None
    state["gcp_preempted"] = True
    assert gcp_check(base)() == "gcp preemption notice"


def test_azure_preempt_event_only(metadata):
    base, state = metadata
    state["azure_events"] = [
        {
            "EventId": "1",
            "EventType": "Freeze",
            "ResourceType": "VirtualMachine",
            "Resources": ["vm1"],
            "EventStatus": "Scheduled",
            "NotBefore": "x",
        }
    ]
    assert azure_check(base)() is None
    state["azure_events"].append(
        {
            "EventId": "2",
            "EventType": "Preempt",
            "ResourceType": "VirtualMachine",
            "Resources": ["vm1"],
            "EventStatus": "Scheduled",
            "NotBefore": "Wed, 25 Nov 2026 12:00:30 GMT",
        }
    )
    assert azure_check(base)() == "azure eviction scheduled not before Wed, 25 Nov 2026 12:00:30 GMT"


def test_watch_requests_one_stop_and_survives_an_unreachable_service(metadata):
    base, state = metadata
    reasons: list[str] = []
    got = threading.Event()
    calls = []

    def check():
        calls.append(1)
        if len(calls) == 1:
            return aws_check("http://127.0.0.1:9")()  # nothing listens: an OSError, not a notice
        return gcp_check(base)()

    def stop(reason):
        reasons.append(reason)
        got.set()

    done = watch(stop, check, interval_s=0.01)
    state["gcp_preempted"] = True
    assert got.wait(10) and done.wait(5)
    assert reasons == ["gcp preemption notice"] and len(calls) >= 2


def test_an_unreachable_metadata_service_raises_oserror():
    with pytest.raises(OSError):
        aws_check("http://127.0.0.1:9")()


def test_check_for_names_the_provider_check():
    assert check_for("local") is None and check_for("lambda") is None
    assert all(callable(check_for(p)) for p in ("aws", "gcp", "azure"))

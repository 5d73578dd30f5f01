"""finops.connections: a connection's proxy, CA bundle and headers reach every REST client, GCP
tokens are refreshed in one place (through the connection's proxy), Azure credentials come from
AzureBaseHook.get_credential().

The proxy is a real forward proxy on loopback (http.server reading absolute-form request lines).
The API hosts it is asked for (`*.finops.test`) do not resolve, so an answer can only have come
through it; it answers for them with the real APIs' shapes (Lambda Cloud instances, Google's
OAuth token endpoint)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from finops import connections

LAMBDA_HOST = "lambda.finops.test"
OAUTH_HOST = "oauth.finops.test"
INSTANCES = {
    "data": [
        {
            "id": "i-1",
            "name": "train",
            "status": "active",
            "instance_type": {"name": "gpu_1x_h100_pcie", "price_cents_per_hour": 249},
            "region": {"name": "us-east-1"},
        }
    ]
}


@dataclass
class Proxied:
    method: str
    url: str  # the absolute-form target a client only sends to a proxy
    headers: dict[str, str]
    body: bytes


@dataclass
class _Proxy:
    port: int
    seen: list[Proxied] = field(default_factory=list)
    tokens_issued: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class _Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self) -> None:
        state: _Proxy = self.server.state  # type: ignore[attr-defined]
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        state.seen.append(Proxied(self.command, self.path, dict(self.headers), body))
        target = urlsplit(self.path)
        if target.hostname == LAMBDA_HOST and target.path == "/api/v1/instances":
            status, reply = 200, INSTANCES
        elif target.hostname == OAUTH_HOST and target.path == "/token":
            form = parse_qs(body.decode())
            assert form["grant_type"] == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]
            state.tokens_issued += 1
            status, reply = (
                200,
                {"access_token": f"tok-{state.tokens_issued}", "expires_in": 3600, "token_type": "Bearer"},
            )
        else:
            status, reply = 502, {"error": {"message": f"proxy: no route to {target.hostname}"}}
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer


@pytest.fixture
def proxy() -> Iterator[_Proxy]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.state = _Proxy(srv.server_address[1])  # type: ignore[attr-defined]
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.state  # type: ignore[attr-defined]
    srv.shutdown()
    srv.server_close()


def _set_conn(monkeypatch: pytest.MonkeyPatch, conn_id: str, conn: dict) -> str:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))
    return conn_id


def _lambda_conn(monkeypatch: pytest.MonkeyPatch, extra: dict) -> str:
    return _set_conn(
        monkeypatch,
        "lambda_via_proxy",
        {
            "conn_type": "http",
            "host": LAMBDA_HOST,
            "schema": "http",
            "password": "lambda-key",
            "extra": extra,
        },
    )


def test_a_proxy_set_on_a_connection_carries_the_rest_clients_calls(proxy, monkeypatch):
    from finops.gpubench.launchers.lambda_cloud import LambdaLauncher
    from finops.sources.lambda_cloud import LambdaApi

    conn_id = _lambda_conn(
        monkeypatch, {"proxies": {"http": proxy.url, "https": proxy.url}, "X-Finops-Tenant": "acme"}
    )
    assert LambdaApi(conn_id, max_attempts=1).instances() == INSTANCES["data"]
    launcher = LambdaLauncher.from_conn(conn_id, target=None)  # type: ignore[arg-type]
    assert launcher.api.get("/api/v1/instances") == INSTANCES

    assert [s.url for s in proxy.seen] == [f"http://{LAMBDA_HOST}/api/v1/instances"] * 2
    for s in proxy.seen:
        assert s.headers["Authorization"] == "Bearer lambda-key"  # the key, never HttpHook's basic auth
        assert s.headers["X-Finops-Tenant"] == "acme"  # an http connection's extra keys are headers


def test_without_the_proxy_the_same_connection_cannot_reach_the_host(proxy, monkeypatch):
    from finops.sources.lambda_cloud import LambdaApi, LambdaApiError

    conn_id = _lambda_conn(monkeypatch, {})
    with pytest.raises(LambdaApiError, match="no response"):
        LambdaApi(conn_id, max_attempts=1).instances()
    assert proxy.seen == []


def test_policy_inventory_sends_through_the_targets_connection_proxy(proxy, monkeypatch):
    from finops.policies.clouds import build_clouds
    from finops.policies.model import Target

    conn_id = _lambda_conn(monkeypatch, {"proxies": {"http": proxy.url}})
    target = Target(name="lambda", provider="lambda", conn_id=conn_id, base_url=f"http://{LAMBDA_HOST}")
    (cloud,) = build_clouds(target)
    cloud.inventory.api.get("/api/v1/instances")
    assert [s.url for s in proxy.seen] == [f"http://{LAMBDA_HOST}/api/v1/instances"]


def test_non_http_connections_lend_only_their_transport_keys(monkeypatch, tmp_path):
    ca = tmp_path / "corp-ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    conn_id = _set_conn(
        monkeypatch,
        "gcp_transport",
        {
            "conn_type": "google_cloud_platform",
            "extra": {
                "project": "p",
                "scope": "https://www.googleapis.com/auth/cloud-platform",
                "proxies": {"https": "http://proxy.corp:3128"},
                "verify": str(ca),
            },
        },
    )
    s = connections.http_session(conn_id)
    assert s.proxies["https"] == "http://proxy.corp:3128"
    assert s.verify == str(ca)
    assert "project" not in s.headers and "scope" not in s.headers  # credential settings are not headers
    assert connections.http_session(None).proxies == {}


def test_gcp_token_is_refreshed_once_through_the_connection_proxy(proxy, monkeypatch, gcp_service_account):
    key = {**gcp_service_account, "token_uri": f"http://{OAUTH_HOST}/token"}
    conn_id = _set_conn(
        monkeypatch,
        "gcp_sa",
        {
            "conn_type": "google_cloud_platform",
            "extra": {
                "keyfile_dict": json.dumps(key),
                "scope": "https://www.googleapis.com/auth/cloud-platform",
                "proxies": {"http": proxy.url, "https": proxy.url},
            },
        },
    )
    creds, project = connections.gcp_credentials(conn_id)
    assert project == "acme-finops"
    token = connections.gcp_token(conn_id)
    assert token() == "tok-1"
    assert token() == "tok-1"  # still valid: no second refresh
    assert proxy.tokens_issued == 1
    assert [s.url for s in proxy.seen] == [f"http://{OAUTH_HOST}/token"]


def test_azure_service_principal_through_azure_base_hook(monkeypatch):
    from azure.identity import ClientSecretCredential

    conn_id = _set_conn(
        monkeypatch,
        "azure_sp",
        {"conn_type": "azure", "login": "client-id", "password": "secret", "extra": {"tenantId": "tenant-1"}},
    )
    cred = connections.azure_credential(conn_id)
    # without use_azure_identity_object the provider would return msrest credentials with no get_token
    assert isinstance(cred, ClientSecretCredential)
    assert (cred._tenant_id, cred._client_id) == ("tenant-1", "client-id")  # what the connection holds


def test_azure_managed_identity_when_the_connection_has_no_secret(monkeypatch):
    from azure.identity import DefaultAzureCredential

    conn_id = _set_conn(
        monkeypatch, "azure_mi", {"conn_type": "azure", "extra": {"managed_identity_client_id": "mi-client"}}
    )
    cred = connections.azure_credential(conn_id)
    assert isinstance(cred, DefaultAzureCredential)
    assert hasattr(cred, "get_token")

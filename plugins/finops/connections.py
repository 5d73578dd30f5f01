"""Airflow connection -> client, one way per cloud, so credentials and transport are read the
same everywhere (price jobs, policies, benchmark launchers, billing sources).

- AWS: `aws_client` through the Amazon provider's AwsBaseHook (role assumption, `endpoint_url`
  and `region_name` from the extra, as the provider documents).
- GCP: `gcp_credentials` through GoogleBaseHook (key file, key JSON, ADC, impersonation) and
  `gcp_token`, the one place a Google access token is refreshed.
- Azure: `azure_credential` through AzureBaseHook.get_credential(): a service principal when the
  connection has login, password and tenantId; otherwise DefaultAzureCredential (managed identity,
  workload identity with `managed_identity_client_id` / `workload_identity_tenant_id`).
- HTTP: `http_session`, the requests Session our REST clients send through, built by the HTTP
  provider's HttpHook for an `http` connection, so the connection's proxies, CA bundle (`verify`),
  client certificate (`cert`) and headers apply.

Provider imports are local: importing this module costs nothing at DAG parse time.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import requests
    from azure.core.credentials import TokenCredential
    from google.auth.credentials import Credentials

__all__ = [
    "ARM_SCOPE",
    "TRANSPORT_KEYS",
    "TokenProvider",
    "aws_client",
    "azure_credential",
    "azure_token",
    "gcp_credentials",
    "gcp_token",
    "http_session",
    "refreshing_token",
]

TokenProvider = Callable[[], str | None]
ARM_SCOPE = "https://management.azure.com/.default"

# The extra keys that describe how to reach a host rather than who we are (HttpHook's names).
# A non-HTTP connection (google_cloud_platform, azure) keeps credential settings in its extra
# too; only these are read from it for transport.
TRANSPORT_KEYS = ("proxies", "proxy", "verify", "verify_ssl", "cert", "trust_env")


def _connection(conn_id: str) -> Any:
    from airflow.sdk import BaseHook

    return BaseHook.get_connection(conn_id)


# --------------------------------------------------------------------------- AWS
def aws_client(conn_id: str, service: str, region_name: str | None = None) -> Any:
    """A boto3 client for `service` from the AWS connection (AwsBaseHook.get_conn())."""
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

    return AwsBaseHook(aws_conn_id=conn_id, client_type=service, region_name=region_name).get_conn()


# --------------------------------------------------------------------------- HTTP
def _apply_transport(session: requests.Session, extra: dict[str, Any]) -> None:
    proxies = extra.get("proxies", extra.get("proxy"))
    if proxies:
        session.proxies.update(proxies)
    verify = extra.get("verify", extra.get("verify_ssl"))
    if verify is not None:
        session.verify = verify
    if extra.get("cert"):
        session.cert = extra["cert"]
    if extra.get("trust_env") is not None:
        session.trust_env = bool(extra["trust_env"])


def http_session(conn_id: str | None) -> requests.Session:
    """The Session a REST client sends through.

    An `http` connection: HttpHook.get_conn() (proxies, verify, cert, trust_env from the extra;
    the extra's other keys are request headers, as HttpHook documents). Any other type: only the
    TRANSPORT_KEYS of its extra, since the rest are credential settings, never headers. No
    connection: a plain Session. The hook's basic auth is dropped: each client sends its own
    token or key, and only to its API host."""
    import requests

    if not conn_id:
        return requests.Session()
    conn = _connection(conn_id)
    if conn.conn_type in ("http", "https"):
        from airflow.providers.http.hooks.http import HttpHook

        session: requests.Session = HttpHook(method="GET", http_conn_id=conn_id).get_conn()
        session.auth = None
        return session
    session = requests.Session()
    _apply_transport(session, conn.extra_dejson)
    return session


# --------------------------------------------------------------------------- GCP
def gcp_credentials(conn_id: str) -> tuple[Credentials, str | None]:
    """(credentials, project id) from a google_cloud_platform connection (GoogleBaseHook)."""
    from airflow.providers.google.common.hooks.base_google import GoogleBaseHook

    creds, project = GoogleBaseHook(gcp_conn_id=conn_id).get_credentials_and_project_id()
    return creds, project or None


def refreshing_token(creds: Credentials, session: requests.Session | None = None) -> TokenProvider:
    """A token callable that refreshes `creds` when they are missing or about to expire (google-auth's
    `valid` allows for clock skew). Asked before every request, so a token outlives no long job.
    The refresh goes through `session` (the connection's proxies) when one is given."""
    import google.auth.transport.requests

    lock = threading.Lock()  # mapped tasks in threads must not refresh the same credentials twice

    def token() -> str | None:
        with lock:
            if not creds.valid:
                creds.refresh(google.auth.transport.requests.Request(session=session))
            return creds.token

    return token


def gcp_token(conn_id: str) -> TokenProvider:
    """Bearer tokens for the Google REST APIs from a google_cloud_platform connection."""
    creds, _ = gcp_credentials(conn_id)
    return refreshing_token(creds, http_session(conn_id))


# --------------------------------------------------------------------------- Azure
def azure_credential(conn_id: str) -> TokenCredential:
    """An azure-identity credential from an Azure connection (AzureBaseHook.get_credential()).

    We always need `get_token`, which only azure-identity objects have, so the connection is read
    with `use_azure_identity_object` on; without it the provider returns msrest-era credentials
    that cannot issue tokens. Everything else (service principal, managed identity, workload
    identity, cloud_environment) is the provider's own reading of the connection."""
    from airflow.providers.microsoft.azure.hooks.base_azure import AzureBaseHook

    conn = _connection(conn_id)
    extra = conn.extra_dejson
    if not extra.get("use_azure_identity_object"):
        conn = _with_extra(conn, {**extra, "use_azure_identity_object": True})
    cred = AzureBaseHook(conn_id=conn_id).get_credential(conn=conn)
    if not hasattr(cred, "get_token"):  # pragma: no cover - the flag above rules it out
        raise ValueError(
            f"Azure connection {conn_id!r} gave a {type(cred).__name__}, which cannot issue tokens"
        )
    return cred


def _with_extra(conn: Any, extra: dict[str, Any]) -> Any:
    """A copy of `conn` with another extra (task SDK Connections are attrs classes)."""
    import attrs

    if attrs.has(type(conn)):
        return attrs.evolve(conn, extra=json.dumps(extra))
    from airflow.sdk import Connection

    return Connection(
        conn_id=conn.conn_id,
        conn_type=conn.conn_type,
        host=conn.host,
        login=conn.login,
        password=conn.password,
        schema=conn.schema,
        port=conn.port,
        extra=json.dumps(extra),
    )


def azure_token(conn_id: str, scope: str = ARM_SCOPE) -> TokenProvider:
    """Bearer tokens for ARM (or `scope`); azure-identity caches and renews them itself."""
    cred = azure_credential(conn_id)
    return lambda: cred.get_token(scope).token

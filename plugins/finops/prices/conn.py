"""Airflow connection -> (base URL, auth) for the HTTP price APIs. The only Airflow import of
the HTTP fetchers; kept at the edge so the fetchers run with plain arguments in tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from finops.http_client import TokenProvider


@dataclass(frozen=True)
class HttpEndpoint:
    base_url: str
    api_key: str | None = None
    login: str | None = None


def resolve(conn_id: str | None, default_base: str, keep_path: bool = True) -> HttpEndpoint:
    """Base URL from the connection's host (schema/port honoured; a host that already carries a
    scheme is used as is), API key from its password. No connection -> the default base URL."""
    if not conn_id:
        return HttpEndpoint(default_base.rstrip("/"))
    from airflow.sdk import BaseHook

    conn = BaseHook.get_connection(conn_id)
    base = default_base
    if conn.host and conn.conn_type != "google_cloud_platform":
        host = conn.host
        if "://" not in host:
            scheme = conn.schema or "https"
            host = f"{scheme}://{host}" + (f":{conn.port}" if conn.port else "")
        base = host
        if keep_path:
            # default_base may carry the API path (Azure): keep it behind a host override
            from urllib.parse import urlsplit

            path = urlsplit(default_base).path
            if path and path != "/" and not urlsplit(host).path.strip("/"):
                base = host.rstrip("/") + path
    return HttpEndpoint(base.rstrip("/"), api_key=conn.password or None, login=conn.login or None)


def gcp_auth(conn_id: str | None, api_key: str | None) -> tuple[dict[str, str], TokenProvider | None]:
    """Auth for the Billing Catalog as (headers, token): an API key (sent as a header, never in
    the URL), or OAuth tokens from a `google_cloud_platform` connection (finops.connections, which
    refreshes them when they expire mid-job)."""
    if api_key:
        return {"X-Goog-Api-Key": api_key}, None
    if not conn_id:
        return {}, None
    from airflow.sdk import BaseHook

    if BaseHook.get_connection(conn_id).conn_type != "google_cloud_platform":
        return {}, None
    from finops.connections import gcp_token

    return {}, gcp_token(conn_id)

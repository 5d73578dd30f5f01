"""The Azure service-principal credential both the price jobs and the policies read from an
Airflow connection (client id = login, secret = password, tenantId in the extra)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from azure.identity import ClientSecretCredential


def service_principal(conn_id: str, purpose: str) -> ClientSecretCredential:
    """A ClientSecretCredential, or a ValueError naming the connection and what it lacks
    (azure.identity's own error does not say which connection)."""
    from airflow.sdk import BaseHook
    from azure.identity import ClientSecretCredential

    c = BaseHook.get_connection(conn_id)
    extra = c.extra_dejson
    tenant = extra.get("tenantId") or extra.get("tenant_id")
    if not tenant or not c.login or not c.password:
        raise ValueError(
            f"Airflow connection {conn_id!r} needs the service principal's client id (login), "
            f"secret (password) and tenantId (extra) to {purpose}"
        )
    return ClientSecretCredential(tenant, c.login, c.password)

"""Access control for the FinOps app: the same login as the Airflow UI, through its auth manager.

Airflow mounts plugin FastAPI apps with no authentication at all, so the whole app depends on
`require_access` (see finops.ui.app). It reuses Airflow's own `get_user` (JWT from
`Authorization: Bearer` or the UI's `_token` cookie, validated and revocation-checked by the
configured auth manager), then asks the auth manager whether that user may read the custom
view "FinOps" (`is_authorized_custom_view`, the hook Airflow provides for plugin views: AVP,
Keycloak or FAB can grant it per role; SimpleAuthManager grants it to VIEWER and up).
Set FINOPS_UI_AUTHORIZATION=website to require only what the Airflow UI home page requires.

Refusals: no / bad credentials -> 401 (403 for an invalid token, as Airflow does); a logged-in
user without the permission -> 403. A browser asking for the HTML page without a login is
redirected to the auth manager's login page, which sends it back afterwards.
"""

from __future__ import annotations

import os
from typing import Any

from fastapi import HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials

RESOURCE_NAME = "FinOps"


class LoginRedirect(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised for an HTML page request without a login; the app turns it into a redirect."""

    def __init__(self, url: str):
        super().__init__(url)
        self.url = url


def _bearer(request: Request) -> HTTPAuthorizationCredentials | None:
    header = request.headers.get("authorization") or ""
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return HTTPAuthorizationCredentials(scheme="Bearer", credentials=token.strip())
    return None


def _wants_html(request: Request) -> bool:
    """A browser navigating to the page (not the JSON API, not a static asset)."""
    path = request.url.path
    return (
        request.method == "GET"
        and "text/html" in request.headers.get("accept", "")
        and "/api/" not in path
        and "/static/" not in path
    )


def next_path(request: Request) -> str:
    """Where the login page sends the browser back: this path and query, relative. Never a URL
    built from the Host header (a forged Host made the login page send users to another site),
    and never `//host` or `/\\host`, which browsers read as another site too."""
    path = "/" + request.url.path.lstrip("/\\")
    return f"{path}?{request.url.query}" if request.url.query else path


def is_authorized(user: Any) -> bool:
    from airflow.api_fastapi.app import get_auth_manager

    am = get_auth_manager()
    if os.environ.get("FINOPS_UI_AUTHORIZATION", "custom_view").strip().lower() == "website":
        from airflow.api_fastapi.auth.managers.models.resource_details import AccessView

        return bool(am.is_authorized_view(access_view=AccessView.WEBSITE, user=user))
    return bool(am.is_authorized_custom_view(method="GET", resource_name=RESOURCE_NAME, user=user))


async def require_access(request: Request) -> Any:
    """FastAPI dependency on every route: the Airflow user, or 401 / 403 / login redirect."""
    # Imported here: the plugin module is loaded by every Airflow component, this only by the api-server.
    from airflow.api_fastapi.core_api.security import get_user

    try:
        user = await get_user(request, None, _bearer(request))
    except HTTPException as e:
        if _wants_html(request):
            from airflow.api_fastapi.app import get_auth_manager

            raise LoginRedirect(get_auth_manager().get_url_login(next_url=next_path(request))) from e
        raise
    if not is_authorized(user):
        raise HTTPException(status.HTTP_403_FORBIDDEN, f"not allowed to read the {RESOURCE_NAME} view")
    request.state.finops_user = user
    return user

"""The FinOps FastAPI app Airflow mounts at /finops, and its nav entry (`external_views`).

Every route, the HTML page and the static assets included, depends on finops.ui.auth
(plugin apps get no Airflow auth by default). GET only: the view never changes anything.

Every Airflow component imports the plugin, only the api-server serves it: `plugin_apps()`
hands Airflow a tiny ASGI wrapper that builds the FastAPI app on its first request, so the
scheduler, workers and DAG processor never import FastAPI or this package's UI code for it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from finops.ui.prefix import URL_PREFIX  # re-exported: the plugin mounts the view here

if TYPE_CHECKING:
    from fastapi import FastAPI


def create_app() -> FastAPI:
    from finops.ui.server import create_app as build

    return build()


class LazyApp:
    """An ASGI app that builds `create_app()` on first use (see the module docstring)."""

    def __init__(self) -> None:
        self._app: FastAPI | None = None
        self._lock = threading.Lock()

    @property
    def app(self) -> FastAPI:
        if self._app is None:
            with self._lock:
                if self._app is None:
                    self._app = create_app()
        return self._app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)

    def __repr__(self) -> str:
        return "finops.ui.app.create_app (built on first request)"


def plugin_apps() -> list[dict]:
    """`fastapi_apps` entries of the Airflow plugin."""
    return [{"app": LazyApp(), "url_prefix": URL_PREFIX, "name": "FinOps"}]


def plugin_external_views() -> list[dict]:
    """`external_views` entry: a "FinOps" item under Browse, the page shown inside the Airflow UI."""
    return [
        {
            "name": "FinOps",
            "href": f"{URL_PREFIX}/",
            "destination": "nav",
            "category": "browse",
            "url_route": "finops",
        }
    ]

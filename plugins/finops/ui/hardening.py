"""What the FinOps view tells a viewer when something is wrong, and how it answers HEAD.

A viewer is not an operator: a 503 says "warehouse unavailable" or "configuration invalid" and
nothing about the host (DuckDB's lock error names the file, the lock holder's interpreter and
its PID; a config error names the config path). The details go to the api-server log.
Every route that answers GET answers HEAD the same way, without the body, as the 405's
`Allow: GET, HEAD` promises (FastAPI registers GET routes for GET only).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from finops.config import ConfigError
from finops.ui.db import WarehouseBusy

log = logging.getLogger("finops.ui")

WAREHOUSE_UNAVAILABLE = "warehouse unavailable (busy with a load, or unreachable); try again in a moment"
CONFIG_INVALID = "FinOps configuration invalid; an administrator can find the reason in the api-server log"


class HeadAsGet:
    """ASGI middleware: HEAD runs the GET route (login and permission included) and sends its
    status and headers with an empty body (Content-Length stays that of the GET body)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        sent_end = False

        async def no_body(message: dict[str, Any]) -> None:
            nonlocal sent_end
            if message["type"] == "http.response.body":
                if message.get("more_body", False) or sent_end:
                    return
                sent_end = True
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, no_body)


def harden(app: FastAPI) -> None:
    """Install the 503 handlers and HEAD support on the FinOps app."""

    @app.exception_handler(WarehouseBusy)
    async def _busy(request: Request, exc: WarehouseBusy) -> JSONResponse:
        log.warning("FinOps UI %s: warehouse unavailable: %s", request.url.path, exc)
        return JSONResponse({"detail": WAREHOUSE_UNAVAILABLE}, status_code=503, headers={"Retry-After": "5"})

    @app.exception_handler(ConfigError)
    async def _config(request: Request, exc: ConfigError) -> JSONResponse:
        log.error("FinOps UI %s: %s", request.url.path, exc)
        return JSONResponse({"detail": CONFIG_INVALID}, status_code=503)

    app.add_middleware(HeadAsGet)

"""Builds the FinOps FastAPI app (imported only by the api-server, on the first request)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse

from finops.ui.api import router
from finops.ui.auth import LoginRedirect, require_access
from finops.ui.commitments_api import router as commitments_router
from finops.ui.feedback_api import WRITE_PATHS
from finops.ui.feedback_api import router as feedback_router
from finops.ui.hardening import harden
from finops.ui.inference_api import router as inference_router
from finops.ui.jobs_api import router as jobs_router
from finops.ui.plan_api import router as plan_router
from finops.ui.quarantine_docs import router as quarantine_docs_router

STATIC = Path(__file__).parent / "static"

_MEDIA = {
    ".js": "text/javascript",
    ".css": "text/css",
    ".html": "text/html",
    ".md": "text/plain",
    ".svg": "image/svg+xml",
}
_SECURITY_HEADERS = {
    # Same-origin only: the Airflow UI shows the page in an iframe of the same origin.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
    "script-src 'self'; connect-src 'self'; frame-ancestors 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def create_app() -> FastAPI:
    app = FastAPI(
        title="FinOps",
        description="FinOps view of the airflow-finops warehouse (read-only)",
        dependencies=[Depends(require_access)],
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )

    @app.exception_handler(LoginRedirect)
    async def _login(request: Request, exc: LoginRedirect) -> RedirectResponse:
        return RedirectResponse(exc.url, status_code=303)

    @app.middleware("http")
    async def _headers(request: Request, call_next: Any) -> Any:
        # one write: feedback on an anomaly (finops.ui.feedback_api checks origin and permission)
        if request.method not in ("GET", "HEAD") and not (
            request.method == "POST" and WRITE_PATHS.search(request.url.path)
        ):
            return JSONResponse(
                {"detail": "the FinOps view is read-only"}, status_code=405, headers={"Allow": "GET, HEAD"}
            )
        response = await call_next(request)
        for k, v in _SECURITY_HEADERS.items():
            response.headers.setdefault(k, v)
        return response

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    @app.get("/api/me")
    def me(request: Request) -> dict[str, Any]:
        user = request.state.finops_user
        return {"name": user.get_name(), "id": user.get_id()}

    @app.get("/static/{path:path}", include_in_schema=False)
    def static(path: str) -> FileResponse:
        # A route, not app.mount(StaticFiles): app-level dependencies (the login) skip mounts.
        root = STATIC.resolve()
        try:
            f = (root / path).resolve()
            found = f.is_file() and root in f.parents
        except (OSError, ValueError):  # a NUL byte, a name too long for the file system
            found = False
        if not found:
            raise HTTPException(404, "not found")
        return FileResponse(f, media_type=_MEDIA.get(f.suffix, "application/octet-stream"))

    app.include_router(router)
    app.include_router(plan_router)
    app.include_router(inference_router)
    app.include_router(commitments_router)
    app.include_router(jobs_router)
    app.include_router(feedback_router)
    app.include_router(quarantine_docs_router)
    harden(app)  # 503s without host details, HEAD as GET without a body
    return app

"""The FinOps view serves the Great Expectations Data Docs rendered beside a quarantined batch
(FINOPS_HOME/quarantine/<source>/<period>/<load_id>/data_docs[.N]/), so the alert can link to
them through the same login as the rest of the view, and lists the recent quarantined loads
with that link (`/api/quarantines`, shown by static/quarantines.js).

Only files inside a data_docs folder are served, never the quarantined billing files next to
them. The pages hold values quoted from the export, so they are sent with a CSP sandbox: no
script runs and the page gets an opaque origin, whatever a hostile value contains.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse

from finops.paths import subdir
from finops.ui.api import ReaderDep

router = APIRouter()

PREFIX = "/quarantine-docs"
_DOCS_DIR = re.compile(r"^data_docs(\.\d+)?$")
_MEDIA = {
    ".html": "text/html",
    ".css": "text/css",
    ".js": "text/javascript",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".gif": "image/gif",
    ".ico": "image/x-icon",
    ".json": "application/json",
}
_HEADERS = {
    "Content-Security-Policy": "sandbox; default-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; script-src 'none'; frame-ancestors 'self'",
}


def docs_path(index: Path) -> str | None:
    """`/quarantine-docs/<source>/<period>/<load_id>/<data_docs>/index.html` for a Data Docs
    index under the quarantine folder (percent-encoded), or None for any other path."""
    root = subdir("quarantine").resolve()
    try:
        rel = index.resolve().relative_to(root)
    except ValueError:
        return None
    if len(rel.parts) < 5 or not _DOCS_DIR.match(rel.parts[3]):
        return None
    return PREFIX + "/" + "/".join(quote(p, safe="") for p in rel.parts)


@router.get(PREFIX + "/{source}/{period}/{load_id}/{docs}/{path:path}", include_in_schema=False)
def quarantine_docs(source: str, period: str, load_id: str, docs: str, path: str) -> FileResponse:
    if not _DOCS_DIR.match(docs):
        raise HTTPException(404, "not found")
    root = subdir("quarantine").resolve()
    try:
        base = (root / source / period / load_id / docs).resolve()
        f = (base / (path or "index.html")).resolve()
        found = base.parent.parent.parent.parent == root and base in f.parents and f.is_file()
    except (OSError, ValueError):  # a NUL byte, a name too long for the file system
        found = False
    if not found:
        raise HTTPException(404, "not found")
    return FileResponse(f, media_type=_MEDIA.get(f.suffix, "application/octet-stream"), headers=_HEADERS)


def docs_url(index: str | Path | None) -> str | None:
    """The absolute link an alert carries to a quarantined batch's Data Docs in the FinOps view
    (None without a Data Docs index or without Airflow's `[api] base_url`)."""
    from finops.ui.links import base_url
    from finops.ui.prefix import URL_PREFIX

    path = docs_path(Path(index)) if index else None
    base = base_url() if path else None
    return f"{base}{URL_PREFIX}{path}" if base and path else None


def _latest_docs(quarantine_path: str | None) -> str | None:
    """The newest Data Docs site of a quarantine folder, as a path inside the view."""
    if not quarantine_path:
        return None
    sites = sorted(Path(quarantine_path).glob("data_docs*/index.html"), key=lambda p: p.stat().st_mtime)
    return docs_path(sites[-1]) if sites else None


@router.get("/api/quarantines")
def quarantines(r: ReaderDep) -> dict[str, Any]:
    """The 20 most recent quarantined loads, with a link to their Data Docs where this
    api-server can read them (a shared FINOPS_HOME)."""
    if not r.has("load_log"):
        return {"items": [], "reason": "No loads yet."}
    rows = r.query(
        "SELECT source, billing_period, load_id, finished_at, quarantine_path, quarantine_summary "
        "FROM load_log WHERE status = ? ORDER BY finished_at DESC LIMIT 20",
        ["quarantined"],
    )
    items = []
    for source, period, load_id, finished, qpath, summary in rows:
        info = json.loads(summary) if isinstance(summary, str) else (summary or {})
        docs = _latest_docs(qpath)
        items.append(
            {
                "source": source,
                "billing_period": period,
                "load_id": load_id,
                "finished_at": finished.isoformat() if finished else None,
                "headline": info.get("headline"),
                "column": info.get("column"),
                "rule": info.get("rule"),
                "data_docs": docs.lstrip("/") if docs else None,  # relative to the view's own URL
            }
        )
    return {"items": items, "reason": "No quarantined loads." if not items else None}

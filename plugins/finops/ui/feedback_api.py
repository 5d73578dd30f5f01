"""Feedback on anomalies from the FinOps view: the one route of the app that writes.

POST /api/anomalies/{anomaly_id}/feedback  {"label": "acknowledged" | "expected" | "snoozed",
                                            "note": "...", "snooze_until": "YYYY-MM-DD"}
GET  /api/anomaly-feedback                 precision people report + recent labels

Access: the app's login (finops.ui.auth.require_access), then the auth manager is asked for
POST on the FinOps custom view (FINOPS_UI_AUTHORIZATION=website: what the Airflow home page
requires). The user recorded is the logged-in one, never a field of the request.

CSRF: the Airflow UI's login is a cookie, which a browser attaches to cross-site requests too,
so a write must prove it comes from this origin: the body must be JSON (a cross-site form
cannot send application/json without a CORS preflight, which this app never grants), the
browser's Sec-Fetch-Site (when sent) must be same-origin, and Origin (when sent) must be this
host. A Bearer-token client (no cookie) passes the same checks with its own headers.
"""

from __future__ import annotations

import os
import re
from datetime import date
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, HTTPException, Path, Request
from pydantic import BaseModel, ConfigDict, Field

from finops.ui import db as ui_db
from finops.ui.api import ReaderDep

router = APIRouter(prefix="/api")
WRITE_PATHS = re.compile(r"/api/anomalies/[^/]{1,200}/feedback$")  # the app's only non-GET route


class FeedbackIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: Literal["acknowledged", "expected", "snoozed"]
    note: str | None = Field(default=None, max_length=2000)
    snooze_until: date | None = None


def _same_origin(request: Request) -> None:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise HTTPException(415, "send the feedback as application/json")
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        raise HTTPException(403, "cross-site request refused")
    origin = request.headers.get("origin")
    if origin is not None:
        allowed = {request.headers.get("host", "").lower()}
        from finops.ui.links import base_url

        if (base := base_url()) is not None:
            allowed.add(urlsplit(base).netloc.lower())
        if urlsplit(origin).netloc.lower() not in allowed:
            raise HTTPException(403, "cross-origin request refused")


def _may_write(request: Request) -> Any:
    user = request.state.finops_user
    from airflow.api_fastapi.app import get_auth_manager

    am = get_auth_manager()
    if os.environ.get("FINOPS_UI_AUTHORIZATION", "custom_view").strip().lower() == "website":
        from airflow.api_fastapi.auth.managers.models.resource_details import AccessView

        ok = am.is_authorized_view(access_view=AccessView.WEBSITE, user=user)
    else:
        from finops.ui.auth import RESOURCE_NAME

        ok = am.is_authorized_custom_view(method="POST", resource_name=RESOURCE_NAME, user=user)
    if not ok:
        raise HTTPException(403, "not allowed to give feedback in the FinOps view")
    return user


@router.post("/anomalies/{anomaly_id}/feedback", status_code=201)
def give_feedback(
    request: Request,
    body: FeedbackIn,
    anomaly_id: Annotated[str, Path(min_length=1, max_length=200)],
    _origin: Annotated[None, Depends(_same_origin)] = None,
) -> dict[str, Any]:
    from finops.anomaly.feedback import FeedbackError, record
    from finops.ui.writer import open_writer

    user = _may_write(request)
    try:
        with open_writer() as wh:
            if not wh.table_exists("anomaly_feedback"):
                raise HTTPException(
                    503,
                    "the warehouse has no anomaly_feedback table yet: run any finops DAG "
                    "once (it applies the migrations)",
                )
            fb = record(
                wh,
                anomaly_id,
                body.label,
                str(user.get_name()),
                note=body.note,
                snooze_until=body.snooze_until,
            )
    except ui_db.WarehouseBusy as e:
        raise HTTPException(503, f"warehouse unavailable: {e}") from e
    except FeedbackError as e:
        raise HTTPException(404 if "no anomaly" in str(e) else 422, str(e)) from e
    return {
        "feedback_id": fb.feedback_id,
        "anomaly_id": fb.anomaly_id,
        "label": fb.label,
        "note": fb.note,
        "snooze_until": fb.snooze_until.isoformat() if fb.snooze_until else None,
        "created_by": fb.created_by,
        "created_at": fb.created_at.isoformat(),
    }


@router.get("/anomaly-feedback")
def feedback_summary(r: ReaderDep) -> dict[str, Any]:
    from finops.ui import plan_queries

    return plan_queries.feedback_summary(r)

"""JSON endpoints of the planning pages: month-end forecasts and budgets (GET only)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from finops.ui import plan_queries
from finops.ui.api import PageDep, Period, ReaderDep, View

router = APIRouter(prefix="/api")


@router.get("/forecasts")
def forecasts(
    r: ReaderDep,
    page: PageDep,
    dimension: Literal["team", "service", "account"] = "team",
    period: Period = None,
    view: View = "amortised",
) -> dict[str, Any]:
    """Month-end forecast per team / service / account, with 80 % and 95 % intervals."""
    return plan_queries.forecasts(r, dimension=dimension, period=period, view=view, page=page)


@router.get("/budgets")
def budgets(
    r: ReaderDep, period: Period = None, name: Annotated[str | None, Query(max_length=63)] = None
) -> dict[str, Any]:
    """Budget vs actual vs forecast for each budget in finops.yaml (`name`: just that one)."""
    from finops.config import get_config

    configured = [b for b in get_config().budgets.items if name is None or b.name == name]
    return plan_queries.budgets(r, period=period, configured=configured)

"""JSON endpoints of the FinOps view (GET only; aggregation and paging happen in the warehouse).

Each endpoint opens the warehouse read-only for the request (finops.ui.db.get_reader), calls
one function of finops.ui.queries and returns its dict. Query parameters are validated here
(enums, ranges); values then travel to SQL as bound parameters only.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query

from finops.ui import queries
from finops.ui.db import Reader, open_reader

router = APIRouter(prefix="/api")

View = Literal["billed", "amortised"]
MAX_DAYS = 3 * 366


def get_reader() -> Iterator[Reader]:
    """Dependency: a read-only warehouse for this request. WarehouseBusy and ConfigError become
    a 503 that names no host detail (finops.ui.hardening)."""
    with open_reader() as r:
        yield r


ReaderDep = Annotated[Reader, Depends(get_reader)]


def paging(
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1, page_size: Annotated[int, Query(ge=1, le=500)] = 50
) -> queries.Page:
    return queries.Page(page, page_size)


PageDep = Annotated[queries.Page, Depends(paging)]


@router.get("/overview")
def overview(r: ReaderDep) -> dict[str, Any]:
    return queries.overview(r)


@router.get("/cost")
def cost(
    r: ReaderDep,
    dim: Literal["provider", "service", "category", "team"] = "provider",
    view: View = "amortised",
    grain: Literal["day", "month"] = "day",
    start: date | None = None,
    end: date | None = None,
    currency: Annotated[str | None, Query(max_length=8)] = None,
    top: Annotated[int, Query(ge=1, le=25)] = 8,
) -> dict[str, Any]:
    """Cost over time by provider / service / service category (focus_costs) or team (showback).

    A missing bound is filled from the default range first, then the range is checked: with one
    bound alone (start=1900-01-01, end=9999-12-31) the check would otherwise be skipped and the
    query scan, and the answer list, every day in between."""
    if start is None or end is None:
        d_start, d_end = queries.default_range(r)
        start, end = start or d_start, end or d_end
    if end <= start or (end - start).days > MAX_DAYS:
        raise HTTPException(422, f"need start < end and a range of at most {MAX_DAYS} days")
    return queries.cost_timeseries(
        r, dim=dim, view=view, grain=grain, start=start, end=end, currency=currency, top=top
    )


# ASCII digits only: the regex engine behind Query(pattern=...) reads \d as any Unicode digit.
PERIOD_PATTERN = r"^[0-9]{4}-(0[1-9]|1[0-2])$"
Period = Annotated[str | None, Query(pattern=PERIOD_PATTERN)]


@router.get("/showback")
def showback(r: ReaderDep, page: PageDep, period: Period = None, view: View = "amortised") -> dict[str, Any]:
    return queries.showback(r, period=period, view=view, page=page)


@router.get("/showback/team")
def showback_team(
    r: ReaderDep,
    page: PageDep,
    period: Annotated[str, Query(pattern=PERIOD_PATTERN)],
    team: Annotated[str, Query(min_length=1, max_length=200)],
    view: View = "amortised",
) -> dict[str, Any]:
    """Drill-down: where a team's cost comes from (allocation breakdown)."""
    return queries.team_breakdown(r, period=period, team=team, view=view, page=page)


@router.get("/showback/resources")
def showback_resources(
    r: ReaderDep,
    page: PageDep,
    period: Annotated[str, Query(pattern=PERIOD_PATTERN)],
    team: Annotated[str, Query(min_length=1, max_length=200)],
    view: View = "amortised",
) -> dict[str, Any]:
    """Drill-down: the team's tagged resources in the period, costliest first."""
    return queries.team_resources(
        r, period=period, team=team, view=view, tag_keys=_team_tag_keys(), page=page
    )


def _team_tag_keys() -> list[str]:
    from finops.ui.rollup import team_tag_keys

    return team_tag_keys()


@router.get("/anomalies")
def anomalies(
    r: ReaderDep,
    page: PageDep,
    status: Literal["open", "closed"] | None = None,
    severity: Annotated[str | None, Query(max_length=20)] = None,
) -> dict[str, Any]:
    return queries.anomalies(r, status=status, severity=severity, page=page)


@router.get("/policy-actions")
def policy_actions(
    r: ReaderDep,
    page: PageDep,
    policy: Annotated[str | None, Query(max_length=200)] = None,
    provider: Annotated[str | None, Query(max_length=40)] = None,
    decision: Annotated[str | None, Query(max_length=40)] = None,
    result: Annotated[str | None, Query(max_length=40)] = None,
    dry_run: bool | None = None,
) -> dict[str, Any]:
    filters = {
        "policy": policy,
        "provider": provider,
        "decision": decision,
        "result": result,
        "dry_run": dry_run,
    }
    return queries.policy_actions(r, filters=filters, page=page)


@router.get("/tag-compliance")
def tag_compliance(
    r: ReaderDep,
    page: PageDep,
    day: date | None = None,
) -> dict[str, Any]:
    """Latest (or `day`'s) snapshot; costs of non-compliant resources in that billing period."""
    return queries.tag_compliance(r, day=day, tag_keys=_team_tag_keys(), page=page)


@router.get("/gpu/price-performance")
def gpu_price_performance(r: ReaderDep) -> dict[str, Any]:
    return queries.gpu_price_performance(r)


@router.get("/gpu/catalog-drift")
def gpu_catalog_drift(r: ReaderDep) -> dict[str, Any]:
    return queries.catalog_drift(r)


@router.get("/gpu/cheapest")
def gpu_cheapest(
    r: ReaderDep,
    steps: Annotated[int, Query(ge=1, le=10**12)] = 100_000,
    precision: Literal["fp32", "amp_bf16", "amp_fp16"] = "amp_bf16",
    checkpoint_interval_h: Annotated[float, Query(ge=0, le=1000)] = 0.5,
    restart_overhead_h: Annotated[float, Query(ge=0, le=100)] = 0.1,
    checkpoint_cost_h: Annotated[float, Query(ge=0, le=100)] = 0.0,
    scaling_efficiency: Annotated[float, Query(gt=0, le=1)] = 1.0,
    spot_interruption_rate_per_h: Annotated[float, Query(ge=0, le=100)] = 0.05,
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
    currency: Annotated[str, Query(pattern=r"^[A-Z]{3}$")] = "USD",
) -> dict[str, Any]:
    """The "cheapest place to run a job" form: offers ranked by expected cost incl. spot interruptions."""
    from finops.gpubench.pricing import Job

    job = Job(
        steps=steps,
        precision=precision,
        checkpoint_interval_h=checkpoint_interval_h,
        restart_overhead_h=restart_overhead_h,
        checkpoint_cost_h=checkpoint_cost_h,
        scaling_efficiency=scaling_efficiency,
        spot_interruption_rate_per_h=spot_interruption_rate_per_h,
    )
    out = queries.cheapest(r, job, limit=limit, currency=currency)
    out["job"] = {
        "steps": steps,
        "precision": precision,
        "checkpoint_interval_h": checkpoint_interval_h,
        "restart_overhead_h": restart_overhead_h,
        "checkpoint_cost_h": checkpoint_cost_h,
        "scaling_efficiency": scaling_efficiency,
        "spot_interruption_rate_per_h": spot_interruption_rate_per_h,
    }
    return out

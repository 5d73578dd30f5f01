"""SQL behind each FinOps page, aggregated and paged in the warehouse; DuckDB and PostgreSQL.

Every value is bound (`?`); identifiers only come from the small whitelists below. Functions
take a `Reader` (finops.ui.db) and return plain JSON-ready dicts; a page whose tables do not
exist (or hold nothing) returns `{"empty": true, "reason": ...}` instead of failing.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from finops.ui.db import Reader

CENT = Decimal("0.01")
COST_VIEWS = ("billed", "amortised")
FOCUS_COST = {"billed": "billed_cost", "amortised": "effective_cost"}
FOCUS_DIMS = {"provider": "provider_name", "service": "service_name", "category": "service_category"}
DIMS = (*FOCUS_DIMS, "team")
OTHER = "(other)"
NONE_LABEL = "(none)"


def money(v: Any) -> str | None:
    """Exact decimal as a string to the cent (money never travels as a float in tables)."""
    if v is None:
        return None
    return str(Decimal(str(v)).quantize(CENT, rounding=ROUND_HALF_EVEN))


def _iso(v: Any) -> str | None:
    return v.isoformat() if isinstance(v, date | datetime) else (None if v is None else str(v))


def _json(v: Any) -> Any:
    if v is None or not isinstance(v, str):
        return v
    try:
        return json.loads(v)
    except ValueError:
        return v


def empty(reason: str, **extra: Any) -> dict[str, Any]:
    return {"empty": True, "reason": reason, **extra}


@dataclass(frozen=True)
class Page:
    page: int = 1
    size: int = 50

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.size

    def wrap(self, items: list[dict[str, Any]], total: int, **extra: Any) -> dict[str, Any]:
        return {
            "empty": total == 0,
            "items": items,
            "page": self.page,
            "page_size": self.size,
            "total": total,
            **extra,
        }


def _where(clauses: list[tuple[str, list[Any]]]) -> tuple[str, list[Any]]:
    parts = [c for c, _ in clauses]
    params = [p for _, ps in clauses for p in ps]
    return (" WHERE " + " AND ".join(parts) if parts else ""), params


def _dt(d: date) -> datetime:
    return datetime(d.year, d.month, d.day)  # noqa: DTZ001 - warehouse timestamps are naive UTC


def _month_start(d: date) -> date:
    return d.replace(day=1)


def _next_month(d: date) -> date:
    return (d.replace(day=28) + timedelta(days=4)).replace(day=1)


# -- overview / ranges -----------------------------------------------------------------------


def latest_day(r: Reader) -> date | None:
    """The last day with data, from small tables only (never a scan of focus_costs)."""
    found: list[date] = []
    if r.has("ui_cost_daily"):
        v = r.query("SELECT MAX(day) FROM ui_cost_daily")[0][0]
        if v:
            found.append(v)
    if r.has("load_log"):
        v = r.query("SELECT MAX(billing_period) FROM load_log WHERE status = ?", ["loaded"])[0][0]
        if v:
            y, m = (int(x) for x in v.split("-"))
            found.append(_next_month(date(y, m, 1)) - timedelta(days=1))
    if r.has("showback_daily"):
        v = r.query("SELECT MAX(day) FROM showback_daily")[0][0]
        if v:
            found.append(v)
    return max(found) if found else None


def default_range(r: Reader, days: int = 90) -> tuple[date, date]:
    """[start, end): the `days` up to and including the last day with data (today if none)."""
    last = latest_day(r) or datetime.now().date()  # noqa: DTZ005 - a calendar day, UTC server
    end = last + timedelta(days=1)
    return end - timedelta(days=days), end


def overview(r: Reader) -> dict[str, Any]:
    tables = (
        "focus_costs",
        "ui_cost_daily",
        "showback_daily",
        "chargeback_monthly",
        "anomalies",
        "policy_actions",
        "tag_compliance",
        "gpu_benchmarks",
        "spot_prices",
        "ondemand_prices",
    )
    start, end = default_range(r)
    out: dict[str, Any] = {
        "tables": {t: r.has(t) for t in tables},
        "dialect": r.dialect,
        "default_start": start.isoformat(),
        "default_end": end.isoformat(),
        "stale_partitions": None,
    }
    if r.has("load_log", "ui_rollup_state"):
        from finops.ui.rollup import stale_partitions

        out["stale_partitions"] = len(stale_partitions(r.warehouse))
    return out


# -- cost over time --------------------------------------------------------------------------


def _stale(r: Reader) -> list[tuple[str, str]] | None:
    """Partitions the rollup cannot answer for; None = no rollup at all (read focus_costs)."""
    if not r.has("ui_cost_daily", "ui_rollup_state", "load_log"):
        return None
    from finops.ui.rollup import stale_partitions

    return stale_partitions(r.warehouse)


def _partitions_sql(parts: list[tuple[str, str]]) -> tuple[str, list[str]]:
    sql = " OR ".join("(x_source = ? AND x_billing_period = ?)" for _ in parts)
    return f"({sql})", [v for p in parts for v in p]


def _bucket(grain: str, col: str) -> str:
    return col if grain == "day" else f"CAST(date_trunc('month', {col}) AS DATE)"


def _cost_rows(r: Reader, dim: str, view: str, grain: str, start: date, end: date) -> list[tuple]:
    """(bucket, key, currency, cost) rows."""
    if dim == "team":
        b = _bucket(grain, "day")
        return r.query(
            f"SELECT {b} AS b, team, currency, SUM(cost) FROM showback_daily "
            "WHERE cost_view = ? AND day >= ? AND day < ? GROUP BY 1, 2, 3",
            [view, start, end],
        )
    col, cost = FOCUS_DIMS[dim], FOCUS_COST[view]
    stale = _stale(r)
    parts: list[str] = []
    params: list[Any] = []
    if stale is not None:
        not_stale, p = "", list[str]()
        if stale:
            s, p = _partitions_sql(stale)
            not_stale = f" AND NOT {s}"
        parts.append(
            f"SELECT day AS d, {col} AS k, billing_currency AS cur, {cost} AS cost FROM ui_cost_daily "
            f"WHERE day >= ? AND day < ?{not_stale}"
        )
        params += [start, end, *p]
    if stale is None or stale:
        only = ""
        p = []
        if stale:
            s, p = _partitions_sql(stale)
            only = f" AND {s}"
        parts.append(
            f"SELECT CAST(charge_period_start AS DATE) AS d, {col} AS k, billing_currency AS cur, "
            f"{cost} AS cost FROM focus_costs WHERE charge_period_start >= ? "
            f"AND charge_period_start < ?{only}"
        )
        params += [_dt(start), _dt(end), *p]
    union = " UNION ALL ".join(parts)
    b = _bucket(grain, "d")
    return r.query(f"SELECT {b} AS b, k, cur, SUM(cost) FROM ({union}) src GROUP BY 1, 2, 3", params)


def cost_timeseries(
    r: Reader,
    *,
    dim: str,
    view: str = "amortised",
    grain: str = "day",
    start: date | None = None,
    end: date | None = None,
    currency: str | None = None,
    top: int = 8,
) -> dict[str, Any]:
    """Chart data: one series per key (top `top` by total, the rest as "(other)") in one currency."""
    need = ("showback_daily",) if dim == "team" else ("focus_costs",)
    if not r.has(*need):
        return empty(f"table {need[0]} does not exist yet", dim=dim)
    if start is None or end is None:
        d_start, d_end = default_range(r)
        start, end = start or d_start, end or d_end
    rows = _cost_rows(r, dim, view, grain, start, end)
    by_cur: dict[str, Decimal] = defaultdict(Decimal)
    for _, _, cur, cost in rows:
        by_cur[cur or NONE_LABEL] += abs(Decimal(cost or 0))
    currencies = sorted(by_cur, key=lambda c: (-by_cur[c], c))
    if not rows:
        return empty("no costs in this range", dim=dim, start=start.isoformat(), end=end.isoformat())
    cur = currency if currency in by_cur else currencies[0]
    totals: dict[str, Decimal] = defaultdict(Decimal)
    cells: dict[tuple[Any, str], Decimal] = defaultdict(Decimal)
    for b, k, c, cost in rows:
        if (c or NONE_LABEL) != cur:
            continue
        key = k if k not in (None, "") else NONE_LABEL
        totals[key] += Decimal(cost or 0)
        cells[(b, key)] += Decimal(cost or 0)
    ranked = sorted(totals, key=lambda k: (-abs(totals[k]), k))
    keep = set(ranked[:top])
    labels = _labels(start, end, grain)
    series: dict[str, list[float]] = {k: [0.0] * len(labels) for k in ranked[:top]}
    if len(ranked) > top:
        series[OTHER] = [0.0] * len(labels)
    index = {lab: i for i, lab in enumerate(labels)}
    for (b, k), v in cells.items():
        i = index.get(_iso(b) or "")
        if i is not None:
            series[k if k in keep else OTHER][i] += float(v)
    return {
        "empty": False,
        "dim": dim,
        "view": view,
        "grain": grain,
        "start": start.isoformat(),
        "end": end.isoformat(),
        "currency": cur,
        "currencies": currencies,
        "labels": labels,
        "series": [
            {
                "name": k,
                "total": money(totals[k])
                if k != OTHER
                else money(sum((totals[x] for x in ranked[top:]), Decimal(0))),
                "values": [round(x, 2) for x in vals],
            }
            for k, vals in series.items()
        ],
        "total": money(sum(totals.values(), Decimal(0))),
    }


def _labels(start: date, end: date, grain: str) -> list[str]:
    out = []
    d = start if grain == "day" else _month_start(start)
    while d < end:
        out.append(d.isoformat())
        d = d + timedelta(days=1) if grain == "day" else _next_month(d)
    return out


# -- showback ------------------------------------------------------------------------------


def showback_periods(r: Reader) -> list[str]:
    if not r.has("chargeback_monthly"):
        return []
    return [p for (p,) in r.query("SELECT DISTINCT billing_period FROM chargeback_monthly ORDER BY 1 DESC")]


_CB_COLS = (
    "team",
    "cost_centre",
    "currency",
    "direct_cost",
    "shared_cost",
    "unallocated_cost",
    "gpu_cost",
    "storage_cost",
    "egress_cost",
    "total_cost",
)


def showback(r: Reader, *, period: str | None, view: str, page: Page) -> dict[str, Any]:
    if not r.has("chargeback_monthly"):
        return empty("table chargeback_monthly does not exist yet")
    periods = showback_periods(r)
    if not periods:
        return empty("no showback computed yet (run finops_showback)", periods=[])
    period = period if period in periods else periods[0]
    args = [period, view]
    total = r.query(
        "SELECT COUNT(*) FROM chargeback_monthly WHERE billing_period = ? AND cost_view = ?", args
    )[0][0]
    rows = r.query(
        f"SELECT {', '.join(_CB_COLS)} FROM chargeback_monthly WHERE billing_period = ? "
        "AND cost_view = ? ORDER BY total_cost DESC, team LIMIT ? OFFSET ?",
        [*args, page.size, page.offset],
    )
    items = [
        {c: (money(v) if c.endswith("_cost") else v) for c, v in zip(_CB_COLS, row, strict=True)}
        for row in rows
    ]
    sums = r.query(
        "SELECT currency, SUM(total_cost) FROM chargeback_monthly WHERE billing_period = ? "
        "AND cost_view = ? GROUP BY 1 ORDER BY 1",
        args,
    )
    return page.wrap(
        items, total, period=period, view=view, periods=periods, totals={c: money(v) for c, v in sums}
    )


_BREAKDOWN = (
    "provider",
    "billing_account_id",
    "sub_account_id",
    "service_name",
    "allocation",
    "rule",
    "currency",
)


def team_breakdown(r: Reader, *, period: str, team: str, view: str, page: Page) -> dict[str, Any]:
    """Where a team's allocated cost comes from (showback_daily), biggest first."""
    if not r.has("showback_daily"):
        return empty("table showback_daily does not exist yet")
    args = [period, view, team]
    base = "FROM showback_daily WHERE billing_period = ? AND cost_view = ? AND team = ?"
    cols = ", ".join(_BREAKDOWN)
    total = r.query(f"SELECT COUNT(*) FROM (SELECT {cols} {base} GROUP BY {cols}) g", args)[0][0]
    rows = r.query(
        f"SELECT {cols}, SUM(cost) AS cost {base} GROUP BY {cols} "
        f"ORDER BY cost DESC, {cols} LIMIT ? OFFSET ?",
        [*args, page.size, page.offset],
    )
    items = [{**dict(zip(_BREAKDOWN, row[:-1], strict=True)), "cost": money(row[-1])} for row in rows]
    return page.wrap(items, total, period=period, team=team, view=view)


def _resource_costs(r: Reader, period: str, view: str, tag_keys: list[str]) -> tuple[str, list[Any]]:
    """Subquery (provider_name, resource_id, resource_name, service_name, team, billing_currency, cost)
    for one billing period: ui_resource_monthly where it is current, focus_costs for stale partitions."""
    from finops.ui.rollup import team_expr

    cost = FOCUS_COST[view]
    cols = "provider_name, resource_id, resource_name, service_name"
    stale = _stale(r) if r.has("ui_resource_monthly") else None
    team_sql, team_params = team_expr(r.dialect, tag_keys)
    raw = (
        f"SELECT {cols}, {team_sql} AS team, billing_currency, {cost} AS cost FROM focus_costs "
        "WHERE x_billing_period = ?"
    )
    if stale is None:
        return raw, [*team_params, period]
    here = [p for p in stale if p[1] == period]
    fresh = (
        f"SELECT {cols}, team, billing_currency, {cost} AS cost FROM ui_resource_monthly "
        "WHERE x_billing_period = ?"
    )
    if not here:
        return fresh, [period]
    s, p = _partitions_sql(here)
    return (f"{fresh} AND NOT {s} UNION ALL {raw} AND {s}", [period, *p, *team_params, period, *p])


def team_resources(
    r: Reader, *, period: str, team: str, view: str, tag_keys: list[str], page: Page
) -> dict[str, Any]:
    """Resources of one billing period whose team tag (any accepted spelling) names the team."""
    if not r.has("focus_costs"):
        return empty("table focus_costs does not exist yet")
    src, params = _resource_costs(r, period, view, tag_keys)
    inner = (
        f"SELECT provider_name, resource_id, MIN(resource_name), MIN(service_name), billing_currency, "
        f"SUM(cost) AS cost FROM ({src}) rc WHERE team = ? "
        "GROUP BY provider_name, resource_id, billing_currency"
    )
    args = [*params, team]
    total = r.query(f"SELECT COUNT(*) FROM ({inner}) g", args)[0][0]
    rows = r.query(
        f"{inner} ORDER BY cost DESC, resource_id LIMIT ? OFFSET ?", [*args, page.size, page.offset]
    )
    names = ("provider", "resource_id", "resource_name", "service_name", "currency")
    items = [{**dict(zip(names, row[:-1], strict=True)), "cost": money(row[-1])} for row in rows]
    return page.wrap(items, total, period=period, team=team, view=view)


# -- anomalies -------------------------------------------------------------------------------

_AN_COLS = (
    "anomaly_id",
    "monitor_type",
    "monitor_key",
    "cost_view",
    "currency",
    "status",
    "start_day",
    "last_day",
    "peak_day",
    "actual",
    "expected",
    "delta",
    "total_impact",
    "pct",
    "score",
    "severity",
    "contributors",
    "first_detected_at",
    "updated_at",
)


def anomalies(r: Reader, *, status: str | None, severity: str | None, page: Page) -> dict[str, Any]:
    if not r.has("anomalies"):
        return empty("table anomalies does not exist yet")
    where, args = _where([(c, [v]) for c, v in (("status = ?", status), ("severity = ?", severity)) if v])
    total = r.query(f"SELECT COUNT(*) FROM anomalies{where}", args)[0][0]
    rows = r.query(
        f"SELECT {', '.join(_AN_COLS)} FROM anomalies{where} "
        "ORDER BY last_day DESC, total_impact DESC, anomaly_id LIMIT ? OFFSET ?",
        [*args, page.size, page.offset],
    )
    items = []
    for row in rows:
        d = dict(zip(_AN_COLS, row, strict=True))
        for c in ("actual", "expected", "delta", "total_impact"):
            d[c] = money(d[c])
        for c in ("start_day", "last_day", "peak_day", "first_detected_at", "updated_at"):
            d[c] = _iso(d[c])
        contributors = _json(d["contributors"]) or []
        d["contributors"] = [
            {**c, **{k: money(c[k]) for k in ("actual", "expected", "delta") if k in c}}
            for c in contributors
            if isinstance(c, dict)
        ]
        items.append(d)
    return page.wrap(items, total)


# -- policy actions (audit log) --------------------------------------------------------------

_PA_COLS = (
    "action_id",
    "run_id",
    "policy",
    "policy_kind",
    "provider",
    "account",
    "region",
    "resource_id",
    "resource_name",
    "owner",
    "decision",
    "action",
    "result",
    "reason",
    "dry_run",
    "evidence",
    "created_at",
)


def policy_actions(r: Reader, *, filters: dict[str, Any], page: Page) -> dict[str, Any]:
    if not r.has("policy_actions"):
        return empty("table policy_actions does not exist yet")
    allowed = ("policy", "provider", "decision", "result", "dry_run")
    where, args = _where([(f"{k} = ?", [filters[k]]) for k in allowed if filters.get(k) is not None])
    total = r.query(f"SELECT COUNT(*) FROM policy_actions{where}", args)[0][0]
    rows = r.query(
        f"SELECT {', '.join(_PA_COLS)} FROM policy_actions{where} "
        "ORDER BY created_at DESC, action_id LIMIT ? OFFSET ?",
        [*args, page.size, page.offset],
    )
    items = []
    for row in rows:
        d = dict(zip(_PA_COLS, row, strict=True))
        d["evidence"] = _json(d["evidence"])
        d["created_at"] = _iso(d["created_at"])
        items.append(d)
    policies = [p for (p,) in r.query("SELECT DISTINCT policy FROM policy_actions ORDER BY 1")]
    return page.wrap(items, total, policies=policies)


# -- tag compliance ---------------------------------------------------------------------------


def _snapshot(r: Reader, day: date | None) -> date | None:
    if day is not None:
        return day
    return r.query("SELECT MAX(snapshot_date) FROM tag_compliance")[0][0]


def tag_compliance(r: Reader, *, day: date | None, tag_keys: list[str], page: Page) -> dict[str, Any]:
    """Per policy / provider: resources and non-compliant ones, with what the non-compliant ones cost
    in the snapshot's billing period (month to date); then those resources, costliest first."""
    if not r.has("tag_compliance"):
        return empty("table tag_compliance does not exist yet")
    snap = _snapshot(r, day)
    if snap is None:
        return empty("no tag compliance snapshot yet (run the tagging policy DAG)")
    period = snap.strftime("%Y-%m")
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for policy, provider, n, bad in r.query(
        "SELECT policy, provider, COUNT(*), SUM(CASE WHEN compliant THEN 0 ELSE 1 END) FROM tag_compliance "
        "WHERE snapshot_date = ? GROUP BY 1, 2 ORDER BY 1, 2",
        [snap],
    ):
        groups[(policy, provider)] = {
            "policy": policy,
            "provider": provider,
            "resources": int(n),
            "non_compliant": int(bad or 0),
            "non_compliant_cost": {},
        }
    has_costs = r.has("focus_costs")
    nc = "SELECT DISTINCT resource_id FROM tag_compliance WHERE snapshot_date = ? AND compliant = FALSE"
    cost_cte, cost_args = "", []
    totals: dict[str, Decimal] = defaultdict(Decimal)
    if has_costs:
        src, src_params = _resource_costs(r, period, "amortised", tag_keys)
        cost_cte = (
            f"SELECT resource_id, billing_currency AS cur, SUM(cost) AS cost FROM ({src}) rc "
            f"WHERE resource_id IN ({nc}) GROUP BY 1, 2"
        )
        cost_args = [*src_params, snap]
        for policy, provider, cur, cost in r.query(
            f"""WITH c AS ({cost_cte})
                    SELECT t.policy, t.provider, c.cur, SUM(c.cost) FROM tag_compliance t
                      JOIN c ON c.resource_id = t.resource_id
                     WHERE t.snapshot_date = ? AND t.compliant = FALSE GROUP BY 1, 2, 3 ORDER BY 1, 2, 3""",
            [*cost_args, snap],
        ):
            groups[(policy, provider)]["non_compliant_cost"][cur] = money(cost)
        for cur, cost in r.query(
            f"WITH c AS ({cost_cte}) SELECT cur, SUM(cost) FROM c GROUP BY 1 ORDER BY 1", cost_args
        ):
            totals[cur] = Decimal(cost)
    cols = (
        "policy",
        "provider",
        "account",
        "region",
        "resource_id",
        "resource_name",
        "team",
        "missing_tags",
        "invalid_tags",
    )
    total = r.query(
        "SELECT COUNT(*) FROM tag_compliance WHERE snapshot_date = ? AND compliant = FALSE", [snap]
    )[0][0]
    tcols = ", ".join("t." + c for c in cols)
    if has_costs:
        # a resource billed in two currencies (rare) is listed once, under its first currency code
        rows = r.query(
            f"""WITH c AS ({cost_cte}),
                     c1 AS (SELECT resource_id, MIN(cur) AS cur, SUM(cost) AS cost FROM c GROUP BY 1)
                SELECT {tcols}, c1.cur, c1.cost
                  FROM tag_compliance t LEFT JOIN c1 ON c1.resource_id = t.resource_id
                 WHERE t.snapshot_date = ? AND t.compliant = FALSE
                 ORDER BY c1.cost DESC NULLS LAST, t.resource_id, t.policy LIMIT ? OFFSET ?""",
            [*cost_args, snap, page.size, page.offset],
        )
    else:
        rows = [
            (*row, None, None)
            for row in r.query(
                f"SELECT {tcols} FROM tag_compliance t WHERE t.snapshot_date = ? AND t.compliant = FALSE "
                "ORDER BY t.resource_id, t.policy LIMIT ? OFFSET ?",
                [snap, page.size, page.offset],
            )
        ]
    items = []
    for row in rows:
        d = dict(zip(cols, row[:-2], strict=True))
        d["missing_tags"], d["invalid_tags"] = _json(d["missing_tags"]), _json(d["invalid_tags"])
        d["currency"], d["cost"] = row[-2], money(row[-1])
        items.append(d)
    return page.wrap(
        items,
        total,
        snapshot_date=snap.isoformat(),
        billing_period=period,
        summary=list(groups.values()),
        non_compliant_cost={c: money(v) for c, v in totals.items()},
    )


# -- GPU price-performance -------------------------------------------------------------------


def _bench_settings() -> Any:
    """The `benchmarks` config section (fallback prices), or None when it does not parse."""
    try:
        from finops.config import get_config
        from finops.gpubench.settings import parse_settings

        return parse_settings(get_config().benchmarks)
    except Exception:  # noqa: BLE001 - the view still works from the price tables alone
        return None


def gpu_price_performance(r: Reader) -> dict[str, Any]:
    """$ per TFLOP-hour per dtype and $ per 1k steps, spot vs on-demand, AMP saving (finops.gpubench.pricing)."""
    if not r.has("gpu_benchmarks"):
        return empty("table gpu_benchmarks does not exist yet")
    from finops.gpubench.report import price_performance

    rows = price_performance(r.warehouse, _bench_settings())
    if not rows:
        return empty("no benchmark figures with a matching price yet")
    rows.sort(key=lambda x: (x["provider"], x["instance_type"], x["region"], x["pricing_model"]))
    dtypes = sorted({d for x in rows for d in x["usd_per_tflop_hour"]})
    return {"empty": False, "items": rows, "dtypes": dtypes}


def cheapest(r: Reader, job: Any, limit: int = 20, currency: str = "USD") -> dict[str, Any]:
    """Offers (benchmarks x latest prices) ranked by the expected cost of `job` (a pricing.Job).

    Only prices in `currency` are ranked: an offer carries no currency of its own, so a EUR price
    (prices.azure.currency: EUR) would otherwise be ranked against USD ones as if it were USD."""
    if not r.has("gpu_benchmarks"):
        return empty("table gpu_benchmarks does not exist yet")
    from finops.gpubench import pricing, store
    from finops.gpubench.report import latest_prices

    measured = pricing.measured_from_rows(store.latest_rows(r.warehouse))
    prices = latest_prices(r.warehouse, _bench_settings())
    currencies = sorted({p.currency for p in prices})
    offers = pricing.offers_for(measured, [p for p in prices if p.currency == currency])
    if not offers:
        other = [c for c in currencies if c != currency]
        return empty(
            f"no benchmarked instance type has a price in {currency} yet"
            + (f" (prices exist in {', '.join(other)})" if other else ""),
            currency=currency,
            currencies=currencies,
        )
    from finops.prices.queries import offered_places  # a type a region does not offer is never proposed

    offered = offered_places(r.warehouse) if r.has("instance_availability") else None
    ranked = pricing.cheapest_place_to_run(job, offers, offered)[:limit]
    items = [
        {
            "provider": x.offer.provider,
            "region": x.offer.region,
            "instance_type": x.offer.instance_type,
            "pricing_model": x.offer.pricing_model,
            "gpu_model": x.offer.gpu_model,
            "gpu_count": x.offer.gpu_count,
            "price_per_hour": x.offer.price_per_hour,
            "currency": currency,
            "feasible": x.feasible,
            "expected_cost": None if x.expected_cost is None else round(x.expected_cost, 4),
            "expected_hours": None if x.expected_hours is None else round(x.expected_hours, 4),
            "expected_interruptions": round(x.expected_interruptions, 3),
            "overhead_fraction": round(x.overhead_fraction, 4),
            "note": x.note,
        }
        for x in ranked
    ]
    return {
        "empty": False,
        "items": items,
        "offers": len(offers),
        "currency": currency,
        "currencies": currencies,
    }


def catalog_drift(r: Reader) -> dict[str, Any]:
    """GPU instance types a provider's spec API lists that the catalog cannot classify (model or
    count unknown): shown so they are seen, not silently missing from price-performance."""
    if not r.has("instance_catalog"):
        return empty("table instance_catalog does not exist yet")
    from finops.prices.queries import catalog_drift as drift

    items = [
        {
            "provider": d.provider,
            "instance_type": d.instance_type,
            "gpu_name": d.gpu_name,
            "gpu_count": d.gpu_count,
            "source": d.source,
            "updated_at": d.updated_at,
        }
        for d in drift(r.warehouse)
    ]
    return {"empty": False, "items": items}

"""Edge: read focus_costs (aggregated in SQL), allocate (pure), write showback_daily,
chargeback_monthly and showback_gpu_monthly for one billing period in one transaction each.

Conservation is checked before anything is written: per view and currency, the allocated
total must equal the focus_costs total exactly, else nothing is replaced.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finops.allocation.engine import (
    VIEWS,
    Allocated,
    ChargebackLine,
    CostRow,
    GpuLine,
    allocate,
    chargeback,
    gpu_view,
)
from finops.allocation.rules import AllocationRules
from finops.exceptions import FinopsError

if TYPE_CHECKING:
    import pyarrow as pa

    from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)
ZERO = Decimal(0)

_AGG_SQL = """
SELECT CAST(charge_period_start AS DATE) AS day, x_billing_period, x_provider, billing_account_id,
       sub_account_id, service_name, service_category, billing_currency, CAST(tags AS TEXT) AS tags,
       x_instance_type, x_usage_type, pricing_category,
       SUM(billed_cost), SUM(effective_cost), SUM(list_cost)
FROM focus_costs
WHERE x_billing_period = ?
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
"""


class ConservationError(FinopsError, RuntimeError):
    """Allocated totals differ from focus_costs: refuse to write a showback that loses money."""


def _tags(raw: Any) -> dict[str, str]:
    if raw is None or raw == "":
        return {}
    d = raw if isinstance(raw, dict) else json.loads(raw)
    return {str(k): "" if v is None else str(v) for k, v in d.items()} if isinstance(d, dict) else {}


def load_cost_rows(wh: Warehouse, period: str) -> list[CostRow]:
    rows = wh.query(_AGG_SQL, [period])
    return [
        CostRow(
            day=r[0],
            billing_period=r[1],
            provider=r[2],
            billing_account_id=r[3],
            sub_account_id=r[4],
            service_name=r[5],
            service_category=r[6],
            currency=r[7],
            tags=_tags(r[8]),
            instance_type=r[9],
            usage_type=r[10],
            pricing_category=r[11],
            billed=Decimal(r[12] or 0),
            effective=Decimal(r[13] or 0),
            list_cost=Decimal(r[14] or 0),
        )
        for r in rows
    ]


def source_totals(wh: Warehouse, period: str) -> dict[tuple[str, str], Decimal]:
    """(view, currency) -> exact total in focus_costs for the period."""
    out: dict[tuple[str, str], Decimal] = {}
    for cur, billed, eff in wh.query(
        "SELECT billing_currency, SUM(billed_cost), SUM(effective_cost) FROM focus_costs "
        "WHERE x_billing_period = ? GROUP BY 1",
        [period],
    ):
        out[("billed", cur)] = Decimal(billed or 0)
        out[("amortised", cur)] = Decimal(eff or 0)
    return out


def check_conservation(expected: dict[tuple[str, str], Decimal], allocated: Sequence[Allocated]) -> None:
    got: dict[tuple[str, str], Decimal] = defaultdict(lambda: ZERO)
    for a in allocated:
        got[(a.cost_view, a.currency)] += a.cost
    keys = set(expected) | set(got)
    bad = {
        k: (expected.get(k, ZERO), got.get(k, ZERO))
        for k in keys
        if expected.get(k, ZERO) != got.get(k, ZERO)
    }
    if bad:
        raise ConservationError(f"allocation does not reconcile with focus_costs: {bad}")


def _idle_sql(dialect: str) -> str:
    ev = "json_extract_string(p.evidence, '$.{k}')" if dialect == "duckdb" else "p.evidence->>'{k}'"

    def ts(k: str) -> str:
        return f"CAST(REPLACE(SUBSTR({ev.format(k=k)}, 1, 19), 'T', ' ') AS TIMESTAMP)"

    return f"""
SELECT f.x_provider, f.billing_account_id, f.sub_account_id, f.service_name, f.service_category,
       f.billing_currency, CAST(f.tags AS TEXT), f.x_instance_type, f.x_usage_type, f.pricing_category,
       SUM(f.billed_cost), SUM(f.effective_cost)
FROM focus_costs f
WHERE f.x_billing_period = ? AND f.resource_id IS NOT NULL AND EXISTS (
    SELECT 1 FROM policy_actions p
    WHERE p.resource_id = f.resource_id AND p.policy_kind = 'idle' AND p.decision = 'idle'
      AND f.charge_period_start >= {ts("window_start")} AND f.charge_period_start < {ts("window_end")})
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
"""


IdleKey = tuple[str, str, str, str, str]  # (view, team, gpu_model, purchase_option, currency)


def idle_gpu_cost(wh: Warehouse, period: str, rules: AllocationRules) -> dict[IdleKey, Decimal]:
    """Cost of GPU resources during the windows the idle policy found them idle (policy_actions,
    written by the policies package), keyed exactly like the GPU lines (team, model, purchase
    option, currency) so each amount lands on the line it belongs to: never summed across
    currencies, never a CPU instance's idle cost on a GPU line. Each charge hour counts once even
    when several runs flagged it. Empty when the policies tables are absent."""
    if not wh.table_exists("policy_actions"):
        return {}
    from finops.allocation.classify import gpu_model, purchase_option
    from finops.allocation.engine import Resolver

    res = Resolver(rules)
    out: dict[IdleKey, Decimal] = defaultdict(lambda: ZERO)
    for prov, acct, sub, svc, cat, cur, tags, itype, utype, pcat, billed, eff in wh.query(
        _idle_sql(wh.dialect), [period]
    ):
        model = gpu_model(itype, rules.gpu_models)
        if not model:
            continue
        row = CostRow(
            day=datetime.now(UTC).date(),
            billing_period=period,
            provider=prov,
            billing_account_id=acct,
            sub_account_id=sub,
            service_name=svc,
            service_category=cat,
            currency=cur,
            billed=ZERO,
            effective=ZERO,
            tags=_tags(tags),
            instance_type=itype,
            usage_type=utype,
            pricing_category=pcat,
        )
        kind, team, _, _ = res.resolve(row)  # the same team gpu_view() gives this row
        team = team if kind == "direct" and team else rules.unallocated.bucket
        po = purchase_option(pcat, utype)
        out[("billed", team, model, po, cur)] += Decimal(billed or 0)
        out[("amortised", team, model, po, cur)] += Decimal(eff or 0)
    return dict(out)


def _arrow(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    import pyarrow as pa

    return pa.Table.from_pylist(rows, schema=schema)


def _schemas() -> dict[str, pa.Schema]:
    import pyarrow as pa

    m = pa.decimal128(38, 10)
    s = pa.string()
    ts = pa.timestamp("us")
    return {
        "showback_daily": pa.schema(
            [
                ("day", pa.date32()),
                ("billing_period", s),
                ("cost_view", s),
                ("team", s),
                ("cost_centre", s),
                ("allocation", s),
                ("rule", s),
                ("provider", s),
                ("billing_account_id", s),
                ("sub_account_id", s),
                ("service_name", s),
                ("line", s),
                ("currency", s),
                ("cost", m),
                ("computed_at", ts),
            ]
        ),
        "chargeback_monthly": pa.schema(
            [
                ("billing_period", s),
                ("cost_view", s),
                ("team", s),
                ("cost_centre", s),
                ("currency", s),
                ("direct_cost", m),
                ("shared_cost", m),
                ("unallocated_cost", m),
                ("gpu_cost", m),
                ("storage_cost", m),
                ("egress_cost", m),
                ("total_cost", m),
                ("total_cents", m),
                ("computed_at", ts),
            ]
        ),
        "showback_gpu_monthly": pa.schema(
            [
                ("billing_period", s),
                ("cost_view", s),
                ("team", s),
                ("gpu_model", s),
                ("purchase_option", s),
                ("currency", s),
                ("cost", m),
                ("list_cost", m),
                ("savings", m),
                ("idle_cost", m),
                ("computed_at", ts),
            ]
        ),
    }


def _replace(wh: Warehouse, table: str, period: str, rows: list[dict[str, Any]]) -> int:
    """Delete the period's rows and insert the new ones in ONE transaction (via parquet)."""
    import pyarrow.parquet as pq

    tbl = _arrow(rows, _schemas()[table])
    with tempfile.TemporaryDirectory(prefix="finops-showback-") as d:
        files: list[Path] = []
        if tbl.num_rows:
            f = Path(d) / f"{table}.parquet"
            pq.write_table(tbl, f)
            files.append(f)
        return wh.replace_partition(table, {"billing_period": period}, files)


@dataclass
class ShowbackResult:
    billing_period: str
    rows_daily: int
    rows_monthly: int
    rows_gpu: int
    totals: dict[str, str]  # "view/currency" -> total

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def stale_periods(wh: Warehouse) -> list[str]:
    """Billing periods whose newest load is newer than their showback (or that have cost but no
    showback yet). A restatement of a month outside the default window (a manual reload of an
    older period, late GCP rows) would otherwise never reach chargeback_monthly or the reports."""
    loads = dict(
        wh.query("SELECT billing_period, MAX(finished_at) FROM load_log WHERE status = 'loaded' GROUP BY 1")
    )
    done = dict(wh.query("SELECT billing_period, MAX(computed_at) FROM chargeback_monthly GROUP BY 1"))
    out = []
    for period, loaded in sorted(loads.items()):
        computed = done.get(period)
        if computed is None:
            if wh.query("SELECT 1 FROM focus_costs WHERE x_billing_period = ? LIMIT 1", [period]):
                out.append(period)
        elif loaded is not None and loaded > computed:
            out.append(period)
    return out


def run_showback(wh: Warehouse, period: str, rules: AllocationRules) -> ShowbackResult:
    # computed_at is taken BEFORE reading: a load committed while this runs is then newer than
    # the showback and stale_periods() picks the period up again
    now = datetime.now(UTC).replace(tzinfo=None)
    rows = load_cost_rows(wh, period)
    allocated: list[Allocated] = []
    gpu: list[GpuLine] = []
    for view in VIEWS:
        allocated += allocate(rows, rules, view)
        gpu += gpu_view(rows, rules, view)
    expected = source_totals(wh, period)
    check_conservation(expected, allocated)
    cb: list[ChargebackLine] = chargeback(allocated)
    idle = idle_gpu_cost(wh, period, rules)
    daily = [{**asdict(a), "computed_at": now} for a in allocated]
    monthly = [{**asdict(c), "computed_at": now} for c in cb]
    gpu_rows = [{**asdict(g), "computed_at": now} for g in gpu]
    # idle GPU cost (from the policy audit log) on the GPU line it belongs to
    for g in gpu_rows:
        g["idle_cost"] = idle.get(
            (g["cost_view"], g["team"], g["gpu_model"], g["purchase_option"], g["currency"]), ZERO
        )
    # chargeback_monthly last: its computed_at is what stale_periods() compares with the loads, so a
    # failure before it leaves the period stale (recomputed next run), never half-written but "fresh"
    n_daily = _replace(wh, "showback_daily", period, daily)
    n_gpu = _replace(wh, "showback_gpu_monthly", period, gpu_rows)
    n_monthly = _replace(wh, "chargeback_monthly", period, monthly)
    totals = {f"{v}/{c}": str(t) for (v, c), t in sorted(expected.items())}
    log.info("showback %s: %d daily rows, %d teams x views, totals %s", period, n_daily, n_monthly, totals)
    return ShowbackResult(period, n_daily, n_monthly, n_gpu, totals)

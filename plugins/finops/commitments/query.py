"""Warehouse edge: the FOCUS Usage rows commitments need, grouped, read from `focus_costs`.

Grouped in SQL by everything `finops.commitments.usage` keys on (day, account, service,
instance type, commitment, status), so a year of a large account comes back as thousands of
groups, not millions of rows; the pure module rolls them up to months / families."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from finops.commitments.gcp import CudCovered, CudFee, SpendCudLine
from finops.commitments.usage import CommitmentLine

if TYPE_CHECKING:
    from finops.allocation.rules import AllocationRules

_SQL = """
SELECT x_provider, COALESCE(sub_account_id, billing_account_id) AS account, billing_currency,
  CAST(charge_period_start AS DATE) AS day, service_name, x_instance_type, pricing_category,
  commitment_discount_status, commitment_discount_id, commitment_discount_type, commitment_discount_unit,
  CASE WHEN commitment_discount_status = 'Unused'
    THEN CAST(charge_period_end AS DATE) - CAST(charge_period_start AS DATE) ELSE 1 END AS span_days,
  SUM(effective_cost), SUM(list_cost), SUM(commitment_discount_quantity)
FROM focus_costs
WHERE charge_category = 'Usage' AND charge_period_start >= ? AND charge_period_start < ?
  AND (commitment_discount_status IN ('Used', 'Unused')
       OR (pricing_category = 'Standard' AND x_instance_type IS NOT NULL)){provider_filter}
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12{team_group}
"""
# what finops.allocation's Resolver needs to name a row's team (showback's own answer)
_TEAM_COLS = ",\n  billing_account_id, sub_account_id, service_category, CAST(tags AS TEXT), x_usage_type"


def commitment_lines(
    wh: Any,
    start: date,
    end: date,
    providers: Sequence[str] | None = None,
    rules: AllocationRules | None = None,
) -> list[CommitmentLine]:
    """Usage groups with charge period starting in [start, end) (dates, UTC), optionally
    only some providers (x_provider values: aws, gcp, azure, lambda). With allocation `rules`
    each line carries its showback team (the same Resolver finops_showback uses: shared pools
    as `shared:<pool>`, unallocated rows in the rules' unallocated bucket)."""
    if end <= start:
        raise ValueError(f"commitments window: end {end} must be after start {start}")
    params: list[Any] = [
        datetime.combine(start, datetime.min.time()),
        datetime.combine(end, datetime.min.time()),
    ]
    provider_filter = ""
    if providers:
        provider_filter = f"\n  AND x_provider IN ({', '.join('?' for _ in providers)})"
        params.extend(providers)
    team_cols = _TEAM_COLS if rules is not None else ""
    sql = _SQL.format(
        provider_filter=provider_filter, team_group=", 16, 17, 18, 19, 20" if rules is not None else ""
    )
    sql = sql.replace("SUM(commitment_discount_quantity)", "SUM(commitment_discount_quantity)" + team_cols, 1)
    rows = wh.query(sql, params)
    resolve = _team_resolver(rules) if rules is not None else None
    out: dict[tuple, CommitmentLine] = {}
    for r in rows:
        line = CommitmentLine(
            provider=r[0],
            account=r[1],
            currency=r[2],
            day=_as_date(r[3]),
            service_name=r[4],
            instance_type=r[5],
            pricing_category=r[6],
            status=r[7],
            commitment_id=r[8],
            commitment_type=r[9],
            unit=r[10],
            effective_cost=Decimal(r[12]),
            list_cost=Decimal(r[13]),
            quantity=None if r[14] is None else Decimal(r[14]),
            team=resolve(r) if resolve else None,
            days=max(int(r[11] or 1), 1),
        )
        if resolve is None:
            out[(len(out),)] = line
            continue
        key = (*r[:12], line.team)  # the team columns collapse once the team is known
        prev = out.get(key)
        if prev is None:
            out[key] = line
        else:
            q = (
                None
                if prev.quantity is None and line.quantity is None
                else ((prev.quantity or Decimal(0)) + (line.quantity or Decimal(0)))
            )
            out[key] = replace(
                prev,
                effective_cost=prev.effective_cost + line.effective_cost,
                list_cost=prev.list_cost + line.list_cost,
                quantity=q,
            )
    return list(out.values())


def _team_resolver(rules: AllocationRules) -> Any:
    from finops.allocation.engine import CostRow, Resolver
    from finops.allocation.store import _tags

    res = Resolver(rules)

    def team(r: tuple) -> str:
        row = CostRow(
            day=_as_date(r[3]),
            billing_period="",
            provider=r[0],
            billing_account_id=r[15],
            service_name=r[4],
            currency=r[2],
            billed=Decimal(0),
            effective=Decimal(0),
            sub_account_id=r[16],
            service_category=r[17],
            tags=_tags(r[18]),
            instance_type=r[5],
            usage_type=r[19],
            pricing_category=r[6],
        )
        kind, name, pool, _ = res.resolve(row)
        if kind == "direct" and name:
            return name
        if kind == "shared" and pool is not None:
            return f"shared:{pool.name}"
        return rules.unallocated.bucket

    return team


# GCP: CUD fee rows (SKUs "Commitment v1: ..." and "Commitment - dollar based v1: ...",
# Committed usage without a CommitmentDiscountId) and the usage carrying a CUD credit, with
# their pricing quantity and (spend-based) what the credits took off.
_GCP_FEES = """
SELECT billing_account_id, billing_currency, CAST(charge_period_start AS DATE), region_id, charge_description,
  pricing_unit, SUM(effective_cost), SUM(pricing_quantity), service_name
FROM focus_costs
WHERE x_provider = 'gcp' AND charge_category = 'Usage' AND pricing_category = 'Committed'
  AND commitment_discount_id IS NULL AND charge_description LIKE 'Commitment%'
  AND charge_period_start >= ? AND charge_period_start < ?
GROUP BY 1, 2, 3, 4, 5, 6, 9
"""
_GCP_COVERED = """
SELECT billing_account_id, billing_currency, CAST(charge_period_start AS DATE), region_id, charge_description,
  commitment_discount_id, commitment_discount_category, pricing_unit, SUM(pricing_quantity), SUM(list_cost),
  service_name, SUM(contracted_cost - effective_cost)
FROM focus_costs
WHERE x_provider = 'gcp' AND charge_category = 'Usage' AND commitment_discount_status = 'Used'
  AND charge_period_start >= ? AND charge_period_start < ?
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 11
"""


def gcp_cud_rows(wh: Any, start: date, end: date) -> tuple[list[CudFee], list[CudCovered]]:
    """The GCP CUD fees and the CUD-covered usage with charge period starting in [start, end)."""
    params = [datetime.combine(start, datetime.min.time()), datetime.combine(end, datetime.min.time())]
    fees = [
        CudFee(
            r[0], r[1], _as_date(r[2]), r[3] or "", r[4], r[5], Decimal(r[6]), Decimal(r[7] or 0), r[8] or ""
        )
        for r in wh.query(_GCP_FEES, params)
    ]
    covered = [
        CudCovered(
            r[0],
            r[1],
            _as_date(r[2]),
            r[3] or "",
            r[4] or "",
            r[5],
            r[6],
            r[7],
            Decimal(r[8] or 0),
            Decimal(r[9]),
            r[10] or "",
            Decimal(r[11] or 0),
        )
        for r in wh.query(_GCP_COVERED, params)
    ]
    return fees, covered


# GCP spend-based CUDs on the multiprice model: their fee rows ('Unused': the fee net of its
# FEE_UTILIZATION_OFFSET) and the usage priced by their consumption model ('Used'), keyed by the
# CUD's subscription (finops.focus.gcp_billing); legacy credited usage comes too and is told
# apart by having no fee row (finops.commitments.gcp.new_spend_cud_utilisation).
_GCP_NEW_SPEND = """
SELECT billing_account_id, billing_currency, CAST(charge_period_start AS DATE), commitment_discount_id,
  commitment_discount_status, MAX(commitment_discount_name), SUM(contracted_cost), SUM(effective_cost),
  SUM(list_cost)
FROM focus_costs
WHERE x_provider = 'gcp' AND charge_category = 'Usage' AND commitment_discount_category = 'Spend'
  AND commitment_discount_status IN ('Used', 'Unused') AND commitment_discount_id IS NOT NULL
  AND charge_period_start >= ? AND charge_period_start < ?
GROUP BY 1, 2, 3, 4, 5
"""


def gcp_new_spend_cud_lines(wh: Any, start: date, end: date) -> list[SpendCudLine]:
    """New-model spend-based CUD fee and covered-usage groups, charge period in [start, end)."""
    params = [datetime.combine(start, datetime.min.time()), datetime.combine(end, datetime.min.time())]
    return [
        SpendCudLine(
            r[0], r[1], _as_date(r[2]), r[3], r[4], r[5] or "", Decimal(r[6]), Decimal(r[7]), Decimal(r[8])
        )
        for r in wh.query(_GCP_NEW_SPEND, params)
    ]


def _as_date(v: Any) -> date:
    """DuckDB and psycopg both return `date` for CAST(... AS DATE); a driver giving text or a
    timestamp still yields the day."""
    if isinstance(v, datetime):
        return v.date()
    if isinstance(v, date):
        return v
    return date.fromisoformat(str(v)[:10])


def month_window(period: str) -> tuple[date, date]:
    """`YYYY-MM` -> [first day, first day of the next month)."""
    try:
        y, m = map(int, period.split("-"))
        first = date(y, m, 1)
    except ValueError as e:
        raise ValueError(f"commitments period {period!r}: expected YYYY-MM") from e
    return first, (first + timedelta(days=32)).replace(day=1)

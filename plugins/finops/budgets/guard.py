"""The question a cost-aware training job asks before it starts: may this team spend `amount`
more on GPUs this month?

    from finops.budgets import allows_gpu_spend

    decision = allows_gpu_spend("ml-research", Decimal("420.00"))           # before launching
    if not decision.allowed:
        raise AirflowFailException(decision.reason)                          # or ask for an override
    decision = allows_gpu_spend("ml-research", cost, override=True, requested_by="alice")  # explicit

Rule: a team with a `kind: gpu` budget (finops.yaml `budgets:`) is allowed while its GPU spend
so far this month plus `amount` stays within the amount; beyond it only with `override=True`,
which is logged with who asked. A team without a GPU budget is allowed. Spend so far comes from
showback_daily (the GPU line of the team's showback, the budget's currency and cost view), so it
is as fresh as the last showback run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from finops.budgets.settings import BudgetsConfig
    from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SpendDecision:
    allowed: bool
    reason: str
    budget: str | None = None
    amount: Decimal | None = None  # the budget's monthly amount
    spent: Decimal | None = None  # GPU spend so far this month
    remaining: Decimal | None = None  # amount - spent (negative: over)
    currency: str | None = None
    overridden: bool = False

    def __bool__(self) -> bool:
        return self.allowed


def _month_to_date(wh: Warehouse, team: str, currency: str, view: str, today: date) -> Decimal:
    if not wh.table_exists("showback_daily"):
        return Decimal(0)
    first = today.replace(day=1)
    rows = wh.query(
        "SELECT SUM(cost) FROM showback_daily WHERE team = ? AND line = 'gpu' AND currency = ? "
        "AND cost_view = ? AND day >= ? AND day <= ?",
        [team, currency, view, first, today],
    )
    return Decimal(rows[0][0] or 0) if rows else Decimal(0)


def allows_gpu_spend(
    team: str,
    amount: Decimal | float | str,
    override: bool = False,
    *,
    requested_by: str | None = None,
    cfg: BudgetsConfig | None = None,
    wh: Warehouse | None = None,
    today: date | None = None,
) -> SpendDecision:
    """Decide; never raises for an over-budget team (the caller decides how to refuse)."""
    try:
        cost = Decimal(str(amount))
    except InvalidOperation:
        raise ValueError(f"amount must be a number, not {amount!r}") from None
    if not cost.is_finite() or cost < 0:
        raise ValueError(f"amount must be a finite number >= 0, not {amount!r}")
    if cfg is None:
        from finops.config import get_config

        cfg = get_config().budgets
    budgets = [b for b in cfg.items if b.kind == "gpu" and b.team == team]
    if not budgets:
        return SpendDecision(True, f"team {team!r} has no GPU budget")
    own = wh is None
    if wh is None:
        from finops.warehouse import connect

        wh = connect()
    try:
        today = today or datetime.now(UTC).date()
        # several GPU budgets for a team (say one per currency): every one of them must allow it
        for b in budgets:
            spent = _month_to_date(wh, team, b.currency, b.cost_view, today)
            remaining = b.amount - spent
            if spent + cost <= b.amount:
                continue
            detail = (
                f"team {team!r} has spent {spent:,.2f} of its {b.amount:,.2f} {b.currency} GPU budget "
                f"{b.name!r} this month; {cost:,.2f} more would exceed it"
            )
            if override:
                log.warning("GPU budget override by %s: %s", requested_by or "(unnamed)", detail)
                return SpendDecision(
                    True,
                    f"override: {detail}",
                    b.name,
                    b.amount,
                    spent,
                    remaining,
                    b.currency,
                    overridden=True,
                )
            return SpendDecision(
                False,
                f"{detail} (pass override=True to start it anyway)",
                b.name,
                b.amount,
                spent,
                remaining,
                b.currency,
            )
        b = budgets[0]
        spent = _month_to_date(wh, team, b.currency, b.cost_view, today)
        return SpendDecision(
            True, f"within GPU budget {b.name!r}", b.name, b.amount, spent, b.amount - spent, b.currency
        )
    finally:
        if own:
            wh.close()

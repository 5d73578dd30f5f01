"""Budgets per team / project / account: thresholds on actual and forecast spend, alerts
before the overspend, and the guard cost-aware jobs ask before they spend on GPUs.

settings.py  the `budgets:` section of finops.yaml (validated with the rest of the file)
evaluate.py  PURE: which thresholds a month's actual / forecast crossed
store.py     edge: warehouse -> actual + forecast per budget -> budget_status, budget_alerts -> emit()
render.py    crossing -> AlertEvent
guard.py     allows_gpu_spend(): may this team start a GPU job of this cost now?

Kept import-light: finops.config imports the settings models from here.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from finops.budgets.guard import SpendDecision


def allows_gpu_spend(
    team: str, amount: Decimal | float | str, override: bool = False, **kw: Any
) -> SpendDecision:
    """May `team` start a GPU job expected to cost `amount` this month? See finops.budgets.guard."""
    from finops.budgets.guard import allows_gpu_spend as check

    return check(team, amount, override, **kw)

"""Budget crossings -> AlertEvent (plain data; each sink escapes for its own medium)."""

from __future__ import annotations

from finops.alerts.events import AlertEvent
from finops.budgets.evaluate import Crossing, share
from finops.budgets.settings import Budget
from finops.forecast.series import ForecastRow


def budget_event(b: Budget, row: ForecastRow, crossed: list[Crossing]) -> AlertEvent:
    """One alert for the highest threshold newly crossed on one basis (the others are listed)."""
    top = max(crossed, key=lambda c: c.threshold_pct)
    cur = b.currency
    scope = f"{b.scope} {b.scope_value}" + (" (GPU)" if b.kind == "gpu" else "")
    if top.basis == "forecast":
        title = f"Budget {b.name}: month-end forecast at {share(row.forecast, b.amount)} % of {b.amount:,.2f} {cur}"
        summary = (
            f"{scope} is forecast to spend {row.forecast:,.2f} {cur} in {row.period} (80 % interval "
            f"{row.lo80:,.2f} - {row.hi80:,.2f}), against a budget of {b.amount:,.2f} {cur}; "
            f"{row.to_date:,.2f} spent so far with {row.days_left} days to go."
        )
    else:
        title = f"Budget {b.name}: {share(row.to_date, b.amount)} % of {b.amount:,.2f} {cur} spent"
        summary = f"{scope} has spent {row.to_date:,.2f} {cur} of its {b.amount:,.2f} {cur} budget for {row.period}."
    facts: dict[str, object] = {
        "Budget": b.name,
        "Scope": scope,
        "Month": row.period,
        "Budget amount": f"{b.amount:,.2f} {cur}",
        "Spent so far": f"{row.to_date:,.2f} {cur} (through {row.as_of.isoformat()})",
        "Month-end forecast": f"{row.forecast:,.2f} {cur}",
        "80 % interval": f"{row.lo80:,.2f} - {row.hi80:,.2f} {cur}",
        "95 % interval": f"{row.lo95:,.2f} - {row.hi95:,.2f} {cur}",
        "Thresholds crossed": ", ".join(f"{c.basis} {c.threshold_pct} %" for c in crossed),
    }
    from finops.ui.links import view_url

    link = view_url("budgets", budget=b.name)
    return AlertEvent(
        kind="budget",
        title=title,
        severity="critical" if top.threshold_pct >= 100 else "warning",
        team=b.route_team,
        summary=summary,
        facts=facts,
        dedup_key=f"budget:{b.name}:{row.period}:{top.basis}:{top.threshold_pct}",
        links={"Budget vs actual vs forecast": link} if link else {},
    )

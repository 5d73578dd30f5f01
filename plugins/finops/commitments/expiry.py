"""Expiry calendar: every commitment with its end date, what it covers, and what the bill
would be the day after it ends (pure: no warehouse, no cloud).

focus_costs carries no commitment end date (FOCUS 1.2 has none), so the commitments come
from the caller: the provider's own inventory (AWS savingsPlan/EndTime and
reservation/EndTime, Azure reservation orders, GCP commitments API). What each commitment
covers comes from `finops.commitments.usage.utilisation` over a recent window."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from finops.commitments.usage import Utilisation

DEFAULT_WARN_DAYS = (30, 7)


@dataclass(frozen=True)
class Commitment:
    """One commitment as its provider's inventory lists it."""

    provider: str
    commitment_id: str
    end: date  # last day it applies (inclusive)
    description: str = ""  # what it covers, as the provider says (family, region, scope)


@dataclass(frozen=True)
class ExpiryEntry:
    commitment: Commitment
    days_left: int  # 0 = ends today; negative = already ended
    alert: int | None  # the tightest warn window it is inside (e.g. 7 or 30), None outside all
    days_observed: int  # days of usage behind the daily figures (0: none seen)
    daily_commitment_cost: Decimal  # what it costs per day now (used + unused, EffectiveCost)
    daily_on_demand_cost: Decimal  # the covered usage at list price: the bill per day after it ends
    daily_utilisation: Decimal | None

    @property
    def daily_increase(self) -> Decimal:
        """How much more per day the same usage costs once the commitment has ended."""
        return self.daily_on_demand_cost - self.daily_commitment_cost


def _check_warn_days(warn_days: Sequence[int]) -> tuple[int, ...]:
    if not warn_days or any(not isinstance(d, int) or isinstance(d, bool) or d < 0 for d in warn_days):
        raise ValueError(
            f"commitments.expiry.warn_days {list(warn_days)!r}: give whole days >= 0, e.g. [30, 7]"
        )
    return tuple(sorted(set(warn_days)))


def expiry_calendar(
    commitments: Iterable[Commitment],
    recent: Iterable[Utilisation],
    today: date,
    warn_days: Sequence[int] = DEFAULT_WARN_DAYS,
) -> list[ExpiryEntry]:
    """One entry per commitment, soonest end first. `recent`: day-grain `utilisation` rows
    of a recent window; a commitment's daily figures are the average over the days it
    appears in (a commitment with no rows gets zeros and days_observed 0)."""
    windows = _check_warn_days(warn_days)
    by_id: dict[tuple[str, str], list[Utilisation]] = {}
    for u in recent:
        if len(u.period) != 10:
            raise ValueError(f"expiry_calendar needs day-grain utilisation rows, got period {u.period!r}")
        by_id.setdefault((u.provider, u.commitment_id), []).append(u)
    out = []
    for c in commitments:
        rows = by_id.get((c.provider, c.commitment_id), [])
        n = len({u.period for u in rows})
        used = sum((u.used_cost for u in rows), Decimal(0))
        total = sum((u.total_cost for u in rows), Decimal(0))
        listed = sum((u.covered_list for u in rows), Decimal(0))
        left = (c.end - today).days
        out.append(
            ExpiryEntry(
                commitment=c,
                days_left=left,
                alert=next((w for w in windows if 0 <= left <= w), None),
                days_observed=n,
                daily_commitment_cost=total / n if n else Decimal(0),
                daily_on_demand_cost=listed / n if n else Decimal(0),
                daily_utilisation=used / total
                if total and all(u.utilisation is not None for u in rows)
                else None,
            )
        )
    return sorted(out, key=lambda e: (e.commitment.end, e.commitment.provider, e.commitment.commitment_id))


def alerts_due(
    entries: Iterable[ExpiryEntry], utilisation_floor: Mapping[str, Decimal] | Decimal | None = None
) -> Iterator[ExpiryEntry]:
    """The entries to alert on: inside a warn window, or (with a floor) whose daily
    utilisation is under it; a Mapping gives a floor per provider."""
    for e in entries:
        floor = (
            utilisation_floor.get(e.commitment.provider)
            if isinstance(utilisation_floor, Mapping)
            else utilisation_floor
        )
        low = floor is not None and e.daily_utilisation is not None and e.daily_utilisation < floor
        if e.alert is not None or low:
            yield e

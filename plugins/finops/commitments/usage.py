"""Commitment coverage and utilisation from FOCUS Usage rows (pure: no warehouse, no cloud).

Definitions (docs/commitments.md says the same with examples):
- covered: a Usage row with CommitmentDiscountStatus 'Used' (AWS SP covered usage and its
  negation, RI discounted usage, Azure reservation / savings-plan usage, GCP CUD-covered usage).
- eligible on-demand: a Usage row at PricingCategory 'Standard' with an instance type
  (x_instance_type), of a (provider, ServiceName) that has covered usage in the same input.
  Spot ('Dynamic') and instance-less usage (storage, egress) are not eligible.
- coverage = covered ListCost / (covered ListCost + eligible ListCost): both sides at the
  on-demand price, as AWS's coverage report. ListCost is 0 on AWS negation rows, so covered
  usage counts once.
- used commitment = EffectiveCost of covered rows; unused = EffectiveCost of 'Unused' rows;
  utilisation = used / (used + unused), only for providers whose export carries unused
  commitment (AWS, Azure amortised): GCP's billing export has no unused rows, so None there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Literal

from finops.commitments.family import instance_family

Grain = Literal["day", "month"]
# providers whose FOCUS rows carry CommitmentDiscountStatus 'Unused' (finops.focus.aws_cur_mapping,
# finops.focus.azure_cost amortised); GCP bills unused CUD only inside its fee, per project.
UNUSED_REPORTED = frozenset({"aws", "azure"})
ZERO = Decimal(0)


@dataclass(frozen=True)
class CommitmentLine:
    """One aggregated group of FOCUS Usage rows (see finops.commitments.query)."""

    provider: str
    account: str
    currency: str
    day: date
    service_name: str
    instance_type: str | None
    pricing_category: str | None
    status: str | None  # CommitmentDiscountStatus: 'Used' | 'Unused' | None
    commitment_id: str | None
    commitment_type: str | None
    unit: str | None  # CommitmentDiscountUnit
    effective_cost: Decimal
    list_cost: Decimal
    quantity: Decimal | None  # CommitmentDiscountQuantity
    team: str | None = None  # the showback team of these rows (query.commitment_lines with rules)
    days: int = 1  # an Unused line's charge period in days (an AWS RIFee: the whole month)


@dataclass
class Utilisation:
    """One commitment over one day or month."""

    provider: str
    commitment_id: str
    commitment_type: str | None
    currency: str
    period: str  # YYYY-MM-DD or YYYY-MM
    used_cost: Decimal = ZERO
    unused_cost: Decimal = ZERO
    covered_list: Decimal = ZERO  # on-demand (list) value of the usage it covered
    used_quantity: Decimal = ZERO
    unused_quantity: Decimal = ZERO
    units: set[str] = field(default_factory=set)
    unused_reported: bool | None = None  # None: by provider (UNUSED_REPORTED); GCP fee rows: True

    @property
    def reports_unused(self) -> bool:
        return self.provider in UNUSED_REPORTED if self.unused_reported is None else self.unused_reported

    @property
    def total_cost(self) -> Decimal:
        return self.used_cost + self.unused_cost

    @property
    def net_savings(self) -> Decimal:
        """What the covered usage would have cost on demand minus what the commitment cost
        (used + unused): negative when it cost more than it saved."""
        return self.covered_list - self.total_cost

    @property
    def utilisation(self) -> Decimal | None:
        """used / (used + unused) in money; None where the provider reports no unused rows."""
        if not self.reports_unused or self.total_cost == 0:
            return None
        return self.used_cost / self.total_cost

    @property
    def quantity_utilisation(self) -> Decimal | None:
        """Same in the commitment's own unit (RI hours, SP dollars); None if units differ."""
        total = self.used_quantity + self.unused_quantity
        if not self.reports_unused or len(self.units) != 1 or total == 0:
            return None
        return self.used_quantity / total


@dataclass
class Coverage:
    """Covered vs on-demand-eligible spend of one group (provider/account/family/period)."""

    provider: str
    account: str | None
    family: str | None
    currency: str
    period: str
    team: str | None = None  # only with coverage(by_team=True)
    covered_list: Decimal = ZERO
    covered_effective: Decimal = ZERO
    eligible_list: Decimal = ZERO
    eligible_effective: Decimal = ZERO
    unused_cost: Decimal = ZERO

    @property
    def coverage(self) -> Decimal | None:
        """covered / (covered + eligible), both at on-demand (list) price; None if neither."""
        total = self.covered_list + self.eligible_list
        return None if total == 0 else self.covered_list / total


def _period(d: date, grain: Grain) -> str:
    if grain not in ("day", "month"):
        raise ValueError(f"commitments grain {grain!r}: use 'day' or 'month'")
    return d.isoformat() if grain == "day" else f"{d:%Y-%m}"


_SHARE = Decimal("1e-10")  # the tables' DECIMAL(38,10) step


def prorated(ln: CommitmentLine, grain: Grain) -> list[tuple[date, Decimal, Decimal | None]]:
    """(day, effective cost, quantity) parts of a line. At day grain an Unused line billed for
    several days (an AWS RIFee's unused part: one row for the month on its 1st) is spread
    evenly over its days, so a window inside the month sees its share; each day gets the
    share rounded down to 1e-10, the last day the rest, so the parts add up exactly."""
    if grain != "day" or ln.days <= 1:
        return [(ln.day, ln.effective_cost, ln.quantity)]
    n = ln.days

    def split(v: Decimal) -> list[Decimal]:
        share = (v / n).quantize(_SHARE, rounding="ROUND_DOWN")
        return [share] * (n - 1) + [v - share * (n - 1)]

    costs = split(ln.effective_cost)
    qtys: list[Decimal | None] = [None] * n if ln.quantity is None else list(split(ln.quantity))
    return [(date.fromordinal(ln.day.toordinal() + i), costs[i], qtys[i]) for i in range(n)]


def utilisation(lines: Iterable[CommitmentLine], grain: Grain = "month") -> list[Utilisation]:
    """Per commitment and period: used / unused commitment (money and quantity). At day
    grain a multi-day Unused line is prorated over its days (`prorated`)."""
    out: dict[tuple, Utilisation] = {}
    for ln in lines:
        if ln.commitment_id is None or ln.status not in ("Used", "Unused"):
            continue
        for day, cost, quantity in prorated(ln, grain):
            key = (ln.provider, ln.commitment_id, ln.currency, _period(day, grain))
            u = out.get(key)
            if u is None:
                u = out[key] = Utilisation(
                    ln.provider, ln.commitment_id, ln.commitment_type, ln.currency, key[3]
                )
            u.commitment_type = u.commitment_type or ln.commitment_type
            qty = quantity or ZERO
            if ln.status == "Used":
                u.used_cost += cost
                u.covered_list += ln.list_cost
                u.used_quantity += qty
            else:
                u.unused_cost += cost
                u.unused_quantity += qty
            if ln.unit and quantity is not None:
                u.units.add(ln.unit)
    return sorted(out.values(), key=lambda u: (u.provider, u.commitment_id, u.period))


def coverage(
    lines: Iterable[CommitmentLine],
    grain: Grain = "month",
    *,
    by_account: bool = True,
    by_family: bool = True,
    by_team: bool = False,
) -> list[Coverage]:
    """Covered vs eligible on-demand spend per provider (and account, family, team) and period.
    by_team needs lines carrying their team (query.commitment_lines(..., rules=...)).

    Unused commitment has no instance behind it: its cost lands in the family-less group
    (family None) of the commitment owner's account."""
    lines = list(lines)
    covered_services = {(ln.provider, ln.service_name) for ln in lines if ln.status == "Used"}
    out: dict[tuple, Coverage] = {}
    for ln in lines:
        eligible = (
            ln.status is None
            and ln.pricing_category == "Standard"
            and bool(ln.instance_type)
            and (ln.provider, ln.service_name) in covered_services
        )
        if not eligible and ln.status not in ("Used", "Unused"):
            continue
        fam = instance_family(ln.provider, ln.instance_type) if by_family and ln.status != "Unused" else None
        for day, cost, _ in (
            prorated(ln, grain) if ln.status == "Unused" else [(ln.day, ln.effective_cost, None)]
        ):
            key = (
                ln.provider,
                ln.account if by_account else None,
                fam,
                ln.currency,
                _period(day, grain),
                ln.team if by_team else None,
            )
            c = out.get(key)
            if c is None:
                c = out[key] = Coverage(*key)
            if ln.status == "Used":
                c.covered_list += ln.list_cost
                c.covered_effective += cost
            elif ln.status == "Unused":
                c.unused_cost += cost
            else:
                c.eligible_list += ln.list_cost
                c.eligible_effective += cost
    return sorted(
        out.values(), key=lambda c: (c.provider, c.account or "", c.team or "", c.family or "", c.period)
    )

"""Purchase advice for commitments (pure: no warehouse, no Airflow, no cloud). ADVICE ONLY:
nothing here or anywhere in finops.commitments buys anything.

Model (a newsvendor problem). The usage a commitment could cover is a distribution of hourly
on-demand spend `u` (the last N days, each weekday weighted equally so a window with five
Mondays and four Sundays does not tilt the result). A commitment covering `k` $/h of
on-demand usage at discount `d` costs `k * (1 - d)` every hour, used or not; usage above `k`
is paid on demand. Expected hourly cost:

    cost(k) = k * (1 - d) + E[max(0, u - k)]

which is convex and piecewise linear in `k`, smallest where P(u <= k) reaches `d`: the
d-quantile of the usage. It is evaluated exactly (Decimal) at every sample value, with sorted
samples and prefix sums (bench/commitments.py times it).

Payment options change only the discount and when money is paid: `upfront_share` of the
term's commitment is paid on day one (0 no upfront, about half partial, 1 all upfront), the
rest monthly. No time value of money is applied (the upfront is not discounted)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from fractions import Fraction
from typing import Literal

Payment = Literal["no_upfront", "partial_upfront", "all_upfront"]
PAYMENTS: tuple[Payment, ...] = ("no_upfront", "partial_upfront", "all_upfront")
UPFRONT_SHARE: dict[Payment, Decimal] = {
    "no_upfront": Decimal(0),
    "partial_upfront": Decimal("0.5"),
    "all_upfront": Decimal(1),
}
HOURS_PER_YEAR = Decimal(8760)
HOURS_PER_MONTH = HOURS_PER_YEAR / 12  # 730
DISCLAIMER = "Advice only: nothing is purchased. Check the provider's own quote before buying."
ZERO = Decimal(0)
ONE = Decimal(1)


@dataclass(frozen=True)
class Sample:
    """One hour-rate observation: on-demand $/h not yet covered, seen at `at`."""

    at: date | datetime
    rate: Decimal


@dataclass(frozen=True)
class Offer:
    """One way to buy: product, term and payment option at a discount off on-demand."""

    provider: str
    product: str  # savings_plan | reserved_instance | resource_cud | spend_cud | reservation | ...
    term_years: int
    payment: Payment
    discount: Decimal  # 0.3 = the commitment prices on-demand usage 30 % lower
    step: Decimal | None = None  # commitment granularity in on-demand $/h (one instance's rate for an RI)
    rate_source: str = "default"  # config | price_data:<family or all> | default (finops.commitments.rates)

    def __post_init__(self) -> None:
        if not (ZERO <= self.discount < ONE):
            raise ValueError(f"{self.provider} {self.product} discount {self.discount}: must be in [0, 1)")
        if self.term_years not in (1, 3):
            raise ValueError(f"{self.provider} {self.product} term {self.term_years}: 1 or 3 years")
        if self.payment not in PAYMENTS:
            raise ValueError(f"{self.provider} {self.product} payment {self.payment!r}: one of {PAYMENTS}")


@dataclass(frozen=True)
class Outcome:
    """What one commitment level does against one usage distribution."""

    on_demand_hourly: Decimal  # expected $/h with no commitment: E[u]
    committed_hourly: Decimal  # expected $/h with it: k(1-d) + E[max(0, u-k)]
    utilisation: Decimal | None  # E[min(u, k)] / k; None for k = 0

    @property
    def savings_hourly(self) -> Decimal:
        return self.on_demand_hourly - self.committed_hourly


@dataclass(frozen=True)
class Advice:
    offer: Offer
    scope: str  # what it would cover (family, "compute", ...)
    currency: str
    covers_on_demand_hourly: Decimal  # k: on-demand $/h the commitment covers
    commitment_hourly: Decimal  # k * (1 - d): what the provider calls the hourly commitment
    upfront: Decimal  # paid on day one
    monthly_recurring: Decimal  # paid each month of the term
    expected: Outcome
    drop: Outcome  # the same commitment if usage falls by `drop_share`
    drop_share: Decimal
    samples: int
    disclaimer: str = DISCLAIMER

    @property
    def term_hours(self) -> Decimal:
        return HOURS_PER_YEAR * self.offer.term_years

    @property
    def expected_savings_term(self) -> Decimal:
        return self.expected.savings_hourly * self.term_hours

    @property
    def expected_savings_monthly(self) -> Decimal:
        return self.expected.savings_hourly * HOURS_PER_MONTH

    @property
    def savings_share(self) -> Decimal | None:
        od = self.expected.on_demand_hourly
        return None if od == 0 else self.expected.savings_hourly / od

    @property
    def drop_savings_term(self) -> Decimal:
        """Savings over the term if usage falls by drop_share (negative: it loses money)."""
        return self.drop.savings_hourly * self.term_hours

    @property
    def break_even_utilisation(self) -> Decimal:
        """The commitment saves money once more than this share of it is used: 1 - d."""
        return ONE - self.offer.discount

    @property
    def break_even_months(self) -> int | None:
        """Months of expected savings until the upfront is earned back (0: nothing upfront;
        None: it never is). Savings counted here are gross of the upfront, i.e. on-demand
        cost avoided minus the recurring part actually paid."""
        if self.covers_on_demand_hourly == 0:
            return None
        if self.upfront == 0:
            return 0 if self.expected.savings_hourly > 0 else None
        amortised = self.upfront / self.term_hours
        gross = (self.expected.savings_hourly + amortised) * HOURS_PER_MONTH
        if gross <= 0:
            return None
        months = int((self.upfront / gross).to_integral_value(ROUND_CEILING))
        return months if months <= 12 * self.offer.term_years else None


def _dec(f: Fraction) -> Decimal:
    """An exact fraction as the nearest Decimal (one rounding, at the very end)."""
    return Decimal(f.numerator) / Decimal(f.denominator)


class Distribution:
    """Weekday-weighted empirical distribution of hourly rates, with prefix sums for
    E[max(0, u - k)] and E[min(u, k)] at any k. Kept in exact fractions (weights are 1/7ths),
    so results are exact until the one conversion to Decimal."""

    def __init__(self, samples: Iterable[Sample], scale: Decimal = ONE):
        by_day: dict[int, list[Fraction]] = {}
        f_scale = Fraction(scale)
        for s in samples:
            if s.rate < 0:
                raise ValueError(f"usage sample at {s.at}: negative rate {s.rate}")
            by_day.setdefault(s.at.weekday(), []).append(Fraction(s.rate) * f_scale)
        if not by_day:
            raise ValueError("no usage samples: nothing to advise on")
        # each weekday present weighs 1/len(by_day); inside it, each sample equally
        pairs = sorted(
            (rate, Fraction(1, len(by_day) * len(rates))) for rates in by_day.values() for rate in rates
        )
        self.n = len(pairs)
        self.values = [v for v, _ in pairs]
        self._w_suffix: list[Fraction] = [Fraction(0)] * (self.n + 1)  # Σ w over i >= j
        self._wu_suffix: list[Fraction] = [Fraction(0)] * (self.n + 1)  # Σ w*u over i >= j
        for j in range(self.n - 1, -1, -1):
            v, w = pairs[j]
            self._w_suffix[j] = self._w_suffix[j + 1] + w
            self._wu_suffix[j] = self._wu_suffix[j + 1] + w * v
        self._mean = self._wu_suffix[0]

    @property
    def mean(self) -> Decimal:
        return _dec(self._mean)

    def _excess(self, k: Fraction) -> Fraction:
        j = bisect_right(self.values, k)
        return self._wu_suffix[j] - k * self._w_suffix[j]

    def excess(self, k: Decimal) -> Decimal:
        """E[max(0, u - k)]."""
        return _dec(self._excess(Fraction(k)))

    def cost(self, k: Decimal, discount: Decimal) -> Fraction:
        """Exact expected hourly cost with k of on-demand usage committed."""
        fk = Fraction(k)
        return fk * (1 - Fraction(discount)) + self._excess(fk)

    def outcome(self, k: Decimal, discount: Decimal) -> Outcome:
        fk = Fraction(k)
        over = self._excess(fk)
        covered = self._mean - over  # E[min(u, k)]
        return Outcome(
            on_demand_hourly=_dec(self._mean),
            committed_hourly=_dec(fk * (1 - Fraction(discount)) + over),
            utilisation=None if fk == 0 else _dec(covered / fk),
        )


def _on_grid(k: Decimal, step: Decimal | None, rounding: str) -> Decimal:
    if step is None or step <= 0:
        return k
    return (k / step).to_integral_value(rounding) * step


def best_commitment(dist: Distribution, offer: Offer) -> Decimal:
    """k minimising k(1-d) + E[max(0, u-k)]: checked at 0 and at every sample value (on the
    offer's step grid, both neighbours), ties to the smaller commitment."""
    candidates = {ZERO}
    for f in set(dist.values):
        v = _dec(f)
        candidates.add(_on_grid(v, offer.step, ROUND_FLOOR))
        candidates.add(_on_grid(v, offer.step, ROUND_CEILING))
    return min(sorted(candidates), key=lambda k: dist.cost(k, offer.discount))


def advise(
    samples: Sequence[Sample],
    offers: Iterable[Offer],
    *,
    scope: str,
    currency: str,
    drop_share: Decimal = Decimal("0.2"),
    commitment_hourly: Decimal | None = None,
) -> list[Advice]:
    """One Advice per offer: the best hourly commitment (or, for a "what if we buy X" run,
    `commitment_hourly` = X, the $/h the provider would bill, covering X / (1 - d) of
    on-demand usage), its cost, savings and the risk if usage falls by `drop_share`. Sorted
    by expected savings over the term, best first."""
    if not (ZERO <= drop_share < ONE):
        raise ValueError(f"drop_share {drop_share}: must be in [0, 1)")
    if commitment_hourly is not None and commitment_hourly < 0:
        raise ValueError(f"commitment_hourly {commitment_hourly}: must be >= 0")
    dist = Distribution(samples)
    dropped = Distribution(samples, ONE - drop_share)
    out = []
    for offer in offers:
        k = (
            best_commitment(dist, offer)
            if commitment_hourly is None
            else commitment_hourly / (ONE - offer.discount)
        )
        hourly = k * (ONE - offer.discount) if commitment_hourly is None else commitment_hourly
        total = hourly * HOURS_PER_YEAR * offer.term_years
        upfront = total * UPFRONT_SHARE[offer.payment]
        out.append(
            Advice(
                offer=offer,
                scope=scope,
                currency=currency,
                covers_on_demand_hourly=k,
                commitment_hourly=hourly,
                upfront=upfront,
                monthly_recurring=(total - upfront) / (12 * offer.term_years),
                expected=dist.outcome(k, offer.discount),
                drop=dropped.outcome(k, offer.discount),
                drop_share=drop_share,
                samples=dist.n,
            )
        )
    return sorted(out, key=lambda a: (-a.expected_savings_term, a.offer.term_years, a.offer.payment))


def daily_samples(daily: Mapping[date, Decimal], days: Sequence[date]) -> list[Sample]:
    """Daily on-demand spend -> hourly-rate samples (spend / 24), one per day of `days`; a day
    with no spend is a sample of 0 (usage that stopped must pull the advice down)."""
    return [Sample(d, daily.get(d, ZERO) / 24) for d in days]


@dataclass(frozen=True)
class CapacityBlockAdvice:
    """An AWS Capacity Block offering against on-demand for the same instance-hours."""

    offering_id: str
    instance_type: str
    instance_count: int
    hours: int
    upfront_fee: Decimal
    currency: str
    per_instance_hour: Decimal
    on_demand_per_instance_hour: Decimal | None  # latest on-demand price in the warehouse
    start: str | None = None
    disclaimer: str = DISCLAIMER

    @property
    def saving_vs_on_demand(self) -> Decimal | None:
        """On-demand cost of the same instance-hours minus the block's fee (negative: the block
        costs more, the price of guaranteed capacity)."""
        if self.on_demand_per_instance_hour is None:
            return None
        return self.on_demand_per_instance_hour * self.instance_count * self.hours - self.upfront_fee


def price_capacity_block(
    offering_id: str,
    instance_type: str,
    count: int,
    hours: int,
    upfront_fee: Decimal,
    currency: str,
    start: str | None,
    on_demand: Mapping[str, Decimal],
) -> CapacityBlockAdvice | None:
    """One offering priced per instance-hour against `on_demand` (instance type -> $/h from
    the price history); None for an offering of no instance-hours."""
    if count <= 0 or hours <= 0:
        return None
    return CapacityBlockAdvice(
        offering_id=offering_id,
        instance_type=instance_type,
        instance_count=count,
        hours=hours,
        upfront_fee=upfront_fee,
        currency=currency,
        per_instance_hour=upfront_fee / (count * hours),
        on_demand_per_instance_hour=on_demand.get(instance_type),
        start=start,
    )


def by_price(blocks: Iterable[CapacityBlockAdvice | None]) -> list[CapacityBlockAdvice]:
    """Cheapest per instance-hour first (offering id breaks ties); Nones left out."""
    return sorted((b for b in blocks if b is not None), key=lambda a: (a.per_instance_hour, a.offering_id))


def capacity_blocks(
    offerings: Iterable[Mapping[str, object]], on_demand: Mapping[str, Decimal]
) -> list[CapacityBlockAdvice]:
    """EC2 DescribeCapacityBlockOfferings `CapacityBlockOfferings` items (UpfrontFee is a
    string, CapacityBlockDurationHours an int) priced per instance-hour against `on_demand`
    (instance type -> $/h from the price history). Cheapest per instance-hour first."""
    return by_price(
        price_capacity_block(
            str(o.get("CapacityBlockOfferingId", "")),
            str(o["InstanceType"]),
            int(str(o["InstanceCount"])),
            int(str(o["CapacityBlockDurationHours"])),
            Decimal(str(o["UpfrontFee"])),
            str(o.get("CurrencyCode") or "USD"),
            None if o.get("StartDate") is None else str(o.get("StartDate")),
            on_demand,
        )
        for o in offerings
    )

"""Fleet advice: the cheapest mix of an always-on on-demand base and a spot burst layer that
serves a traffic profile within the P99 target, with its cost per month.

Pure (Decimal money, no Airflow, no warehouse). The model:
- a day has `peak_hours` at `peak_rps`, `offpeak_hours` at `offpeak_rps`, the rest idle;
  a month is `days_per_month` such days (default 365 / 12: 730 hours);
- an instance's capacity is its measured requests/s at the best batch meeting the P99 target
  (serving_cost: GPUs x per-GPU figure) times `max_utilisation`: the benchmark drives batches
  back to back, so a server run at 100% of that rate queues requests and breaks its P99;
- the base: b on-demand instances of one type, on all month; alone it must carry
  `guaranteed_rps` (default: the off-peak rate), so losing every spot instance still keeps that
  much traffic within the SLA;
- the burst: spot instances of one type, started for each period only as many as the traffic
  beyond the base needs: ceil((rps - b x cap_base) / cap_spot), billed for that period's hours.
  Without a spot offer (none priced, or `allow_spot=False`) the base carries the peak alone.
Every (base, burst) pair in one currency (and, by default, one provider and region) is tried
for every base size from the minimum to what carries the peak alone; the cheapest wins (ties:
fewer instances). Spot interruptions are not priced in: keep `guaranteed_rps` at the traffic
that must never degrade.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from typing import Any

from finops.exceptions import FinopsError
from finops.gpubench.serving_cost import CostInputError, cents, to_decimal

DAYS_PER_MONTH = Decimal(365) / Decimal(12)


class FleetError(FinopsError, ValueError):
    """No fleet can serve the traffic (bad traffic, no offer meeting the SLA, no on-demand base)."""


class SlaUnattainable(FleetError):
    """No priced offer has a batch size meeting the P99 target."""


@dataclass(frozen=True)
class Traffic:
    peak_rps: Decimal
    peak_hours: Decimal  # per day
    offpeak_rps: Decimal
    offpeak_hours: Decimal  # per day
    guaranteed_rps: Decimal | None = None  # None: the off-peak rate
    days_per_month: Decimal = DAYS_PER_MONTH
    max_utilisation: Decimal = Decimal("0.8")

    @classmethod
    def of(cls, peak_rps: Any, peak_hours: Any, offpeak_rps: Any, offpeak_hours: Any, **kw: Any) -> Traffic:
        """Traffic from plain numbers (validated)."""
        conv = {k: to_decimal(v, k) for k, v in kw.items() if v is not None}
        t = cls(
            to_decimal(peak_rps, "peak_rps"),
            to_decimal(peak_hours, "peak_hours"),
            to_decimal(offpeak_rps, "offpeak_rps"),
            to_decimal(offpeak_hours, "offpeak_hours"),
            **conv,
        )
        t.validate()
        return t

    @property
    def guaranteed(self) -> Decimal:
        return self.offpeak_rps if self.guaranteed_rps is None else self.guaranteed_rps

    def validate(self) -> None:
        for name in ("peak_rps", "peak_hours", "offpeak_rps", "offpeak_hours"):
            if getattr(self, name) < 0:
                raise FleetError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.peak_hours + self.offpeak_hours > 24:
            raise FleetError(
                f"peak + off-peak hours are {self.peak_hours + self.offpeak_hours} a day, more than 24"
            )
        if self.guaranteed < 0:
            raise FleetError(f"guaranteed_rps must be >= 0, got {self.guaranteed}")
        if not 0 < self.max_utilisation <= 1:
            raise FleetError(f"max_utilisation must be in (0, 1], got {self.max_utilisation}")
        if self.days_per_month <= 0:
            raise FleetError(f"days_per_month must be > 0, got {self.days_per_month}")


@dataclass(frozen=True)
class CapacityOffer:
    """One priced offer with its serving capacity at the SLA (requests/s per instance)."""

    provider: str
    region: str
    instance_type: str
    pricing_model: str  # "ondemand" | "spot"
    price_per_hour: Decimal
    requests_per_s: Decimal | None  # None: no batch size met the P99 target on this type
    currency: str = "USD"
    dtype: str | None = None
    batch: int | None = None

    @property
    def label(self) -> str:
        return f"{self.provider} {self.region} {self.instance_type} {self.pricing_model}"


@dataclass(frozen=True)
class FleetPlan:
    base: CapacityOffer | None
    base_count: int
    burst: CapacityOffer | None
    burst_peak_count: int
    burst_offpeak_count: int
    base_cost: Decimal  # per month, cents
    burst_cost: Decimal
    monthly_cost: Decimal
    currency: str
    ondemand_only_cost: Decimal | None = None  # the cheapest plan without spot, for comparison
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        def off(o: CapacityOffer | None) -> dict[str, Any] | None:
            return (
                None
                if o is None
                else {
                    "provider": o.provider,
                    "region": o.region,
                    "instance_type": o.instance_type,
                    "pricing_model": o.pricing_model,
                    "price_per_hour": str(o.price_per_hour),
                    "requests_per_s": None if o.requests_per_s is None else str(o.requests_per_s),
                    "dtype": o.dtype,
                    "batch": o.batch,
                }
            )

        return {
            "base": off(self.base),
            "base_count": self.base_count,
            "burst": off(self.burst),
            "burst_peak_count": self.burst_peak_count,
            "burst_offpeak_count": self.burst_offpeak_count,
            "base_cost": str(self.base_cost),
            "burst_cost": str(self.burst_cost),
            "monthly_cost": str(self.monthly_cost),
            "currency": self.currency,
            "ondemand_only_cost": None if self.ondemand_only_cost is None else str(self.ondemand_only_cost),
            "notes": list(self.notes),
        }


def _ceil(x: Decimal) -> int:
    return int(x.to_integral_value(rounding=ROUND_CEILING)) if x > 0 else 0


def _cost(
    t: Traffic, base: CapacityOffer, b: int, burst: CapacityOffer | None
) -> tuple[Decimal, Decimal, int, int] | None:
    """(base cost, burst cost, burst at peak, burst off-peak) per month, unrounded; None when
    `b` base instances plus this burst cannot carry the traffic (no burst and b too small)."""
    assert base.requests_per_s is not None
    cap_b = base.requests_per_s * t.max_utilisation
    counts = []
    for rps in (t.peak_rps, t.offpeak_rps):
        rest = rps - b * cap_b
        if rest <= 0:
            counts.append(0)
        elif burst is None or burst.requests_per_s is None:
            return None
        else:
            counts.append(_ceil(rest / (burst.requests_per_s * t.max_utilisation)))
    hours = 24 * t.days_per_month
    base_cost = b * base.price_per_hour * hours
    burst_cost = Decimal(0)
    if burst is not None:
        burst_cost = (
            burst.price_per_hour * t.days_per_month * (counts[0] * t.peak_hours + counts[1] * t.offpeak_hours)
        )
    return base_cost, burst_cost, counts[0], counts[1]


def plan_fleet(
    traffic: Traffic,
    offers: Iterable[CapacityOffer],
    *,
    allow_spot: bool = True,
    same_region: bool = True,
    max_instances: int = 10_000,
) -> FleetPlan:
    """The cheapest base + burst fleet for `traffic` (see the module doc). Raises
    SlaUnattainable when no offer meets the P99 target, FleetError when no on-demand offer can
    carry the guaranteed base."""
    traffic.validate()
    all_offers = list(offers)
    for o in all_offers:
        if o.price_per_hour < 0:
            raise CostInputError(f"{o.label}: price per hour must be >= 0, got {o.price_per_hour}")
    if traffic.peak_rps == 0 and traffic.offpeak_rps == 0:
        cur = all_offers[0].currency if all_offers else "USD"
        return FleetPlan(
            None,
            0,
            None,
            0,
            0,
            Decimal("0.00"),
            Decimal("0.00"),
            Decimal("0.00"),
            cur,
            Decimal("0.00"),
            ["no traffic: no instance needed"],
        )
    usable = [o for o in all_offers if o.requests_per_s is not None and o.requests_per_s > 0]
    if not usable:
        raise SlaUnattainable(
            "no offer meets the P99 target at any batch size"
            + (
                f" ({len(all_offers)} offers checked: "
                + ", ".join(sorted({o.instance_type for o in all_offers}))
                + ")"
                if all_offers
                else " (no priced, benchmarked offer at all)"
            )
        )
    ondemand = [o for o in usable if o.pricing_model == "ondemand"]
    spot = [o for o in usable if o.pricing_model == "spot"] if allow_spot else []
    notes = []
    if not spot:
        notes.append("spot unavailable: on-demand only" if allow_spot else "spot not allowed: on-demand only")
    need_base = traffic.guaranteed > 0
    if not ondemand:
        if need_base:
            raise FleetError(
                f"no on-demand offer meets the P99 target: nothing can carry the guaranteed "
                f"{traffic.guaranteed} req/s (set guaranteed_rps=0 to run on spot alone)"
            )
        base_candidates: list[CapacityOffer | None] = [None]
    else:
        base_candidates = list(ondemand)
    best: tuple[tuple[Decimal, int, str], FleetPlan] | None = None
    best_od: Decimal | None = None
    for base in base_candidates:
        bursts: list[CapacityOffer | None] = [None] + [
            s
            for s in spot
            if s.currency == (base.currency if base else s.currency)
            and (not same_region or base is None or (s.provider, s.region) == (base.provider, base.region))
        ]
        if base is None:
            b_range = range(0, 1)
        else:
            assert base.requests_per_s is not None
            cap = base.requests_per_s * traffic.max_utilisation
            b_min = _ceil(traffic.guaranteed / cap)
            b_max = max(_ceil(traffic.peak_rps / cap), _ceil(traffic.offpeak_rps / cap), b_min)
            if b_max > max_instances:
                notes.append(
                    f"{base.label}: needs {b_max} instances, more than max_instances={max_instances}"
                )
                b_max = max(b_min, max_instances)
            b_range = range(b_min, b_max + 1)
        for burst in bursts:
            for b in b_range:
                if base is None:
                    if burst is None:
                        continue
                    got = _cost(traffic, burst, 0, burst)
                    got = None if got is None else (Decimal(0), got[1], got[2], got[3])
                else:
                    got = _cost(traffic, base, b, burst)
                if got is None:
                    continue
                base_cost, burst_cost, s_peak, s_off = got
                if b + max(s_peak, s_off) > max_instances:
                    continue
                total = cents(base_cost + burst_cost)
                cur = (base or burst).currency  # type: ignore[union-attr]
                plan = FleetPlan(
                    base,
                    b,
                    burst if (s_peak or s_off) else None,
                    s_peak,
                    s_off,
                    cents(base_cost),
                    cents(burst_cost),
                    total,
                    cur,
                )
                key = (total, b + max(s_peak, s_off), (base or burst).label)  # type: ignore[union-attr]
                if best is None or key < best[0]:
                    best = (key, plan)
                if burst is None and (best_od is None or total < best_od):
                    best_od = total
    if best is None:
        raise FleetError(
            "no mix of the offers carries the traffic within max_instances=" + str(max_instances)
        )
    plan = best[1]
    return FleetPlan(
        plan.base,
        plan.base_count,
        plan.burst,
        plan.burst_peak_count,
        plan.burst_offpeak_count,
        plan.base_cost,
        plan.burst_cost,
        plan.monthly_cost,
        plan.currency,
        best_od,
        notes,
    )


def capacity_offers(
    matrix_rows: Sequence[Mapping[str, Any]], model: str, dtypes: Iterable[str] | None = None
) -> list[CapacityOffer]:
    """One CapacityOffer per priced (provider, region, instance type, pricing model) from
    serving_cost.cost_matrix rows of `model`: the precision with the highest requests/s among
    `dtypes` (all when None); requests_per_s None when no precision met the P99 target."""
    allowed = set(dtypes) if dtypes is not None else None
    best: dict[tuple[str, str, str, str], CapacityOffer] = {}
    for r in matrix_rows:
        if r["model"] != model or (allowed is not None and r["dtype"] not in allowed):
            continue
        key = (r["provider"], r["region"], r["instance_type"], r["pricing_model"])
        rps = None if r.get("requests_per_s") is None else to_decimal(r["requests_per_s"], "requests/s")
        cand = CapacityOffer(
            *key,
            to_decimal(r["price_per_hour"], "price per hour"),
            rps,
            r.get("currency") or "USD",
            r["dtype"],
            r.get("batch"),
        )
        cur = best.get(key)
        if cur is None or (rps is not None and (cur.requests_per_s is None or rps > cur.requests_per_s)):
            best[key] = cand
    return list(best.values())

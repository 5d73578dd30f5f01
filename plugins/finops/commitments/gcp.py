"""GCP resource-CUD utilisation from the billing export alone (pure: no warehouse, no cloud).

GCP's export has no unused-commitment rows: the whole CUD fee is billed as `Commitment v1:
<resource> in <region group> for <N> Year` SKUs, and the usage it covers carries a CUD credit.
Utilisation is therefore measured in the commitment's own unit: of the committed quantity the
fee bills (its PricingQuantity, e.g. 72 GPU-hours a day for 3 A100s), how much did credited
usage consume (their PricingQuantity, same unit, same billing account, region and resource).

used cost = fee x used / committed, unused cost = fee - used cost. A fee matches the usage
whose description holds every word of the fee's resource ("A100 GPU" -> "Nvidia Tesla A100
GPU running in Americas"; "Cpu" matches "Core", "Memory" matches "Ram").

Spend-based CUDs (legacy credit model) bill a fee (`Commitment - dollar based v1: <product>
for <N> year(s)`) = the hourly commitment at on-demand value x (1 - discount), and put a
COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE credit on the covered usage that offsets its on-demand
cost. In FOCUS that credit is ContractedCost - EffectiveCost of the covered row (ContractedCost
nets every credit but the commitment ones, EffectiveCost all of them). The export carries
neither the commitment's on-demand value nor its discount, so the discount comes from
config (`commitments.discounts.gcp.spend_cud`): on-demand commitment = fee / (1 - discount),
utilisation = credited / that, used cost = credited x (1 - discount) capped at the fee.

Spend-based CUDs on Google's multiprice model (every account since 2026-01-21; the legacy model
above stays for VMware Engine, NetApp and Backup CUDs) bill the covered usage at the CUD price
(its consumption_model names the CUD) and the commitment, in discounted dollars, as a $1 fee
SKU whose FEE_UTILIZATION_OFFSET credit takes off what that usage consumed. In FOCUS
(finops.focus.gcp_billing) the fee row is 'Unused' with ContractedCost = the fee and
EffectiveCost = the fee not offset, so `new_spend_cud_utilisation` needs no configured
discount: utilisation = (fee - unused) / fee, savings = covered list - (covered paid + unused)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from finops.commitments.usage import Grain, Utilisation, _period

_FEE = re.compile(
    r"^commitment(?:\s+v\d+)?:\s*(.*?)(?:\s+in\s+.+?)?(?:\s+for\s+\d+\s+years?)?\s*$", re.IGNORECASE
)
_SPEND_FEE = re.compile(r"^commitment\s*-\s*dollar[\s-]+based", re.IGNORECASE)
_TERM = re.compile(r"\bfor\s+(\d+)\s+years?\b", re.IGNORECASE)
_SYNONYMS = {"cpu": "core", "vcpu": "core", "memory": "ram"}
ZERO = Decimal(0)


@dataclass(frozen=True)
class CudFee:
    billing_account: str
    currency: str
    day: date
    region: str
    description: str  # the fee SKU's description
    unit: str | None  # PricingUnit
    cost: Decimal  # EffectiveCost of the fee
    quantity: Decimal  # committed quantity billed (PricingQuantity)
    service: str = ""  # ServiceName of the fee row


@dataclass(frozen=True)
class CudCovered:
    billing_account: str
    currency: str
    day: date
    region: str
    description: str  # the usage SKU's description
    commitment_id: str | None  # the credit id
    category: str | None  # CommitmentDiscountCategory: Usage (resource) | Spend
    unit: str | None
    quantity: Decimal
    list_cost: Decimal
    service: str = ""  # ServiceName
    credited: Decimal = ZERO  # what the CUD credits took off: ContractedCost - EffectiveCost


@dataclass
class CudUtilisation:
    billing_account: str
    region: str
    resource: str  # e.g. "A100 GPU"
    unit: str | None
    currency: str
    period: str
    fee: Decimal = ZERO
    committed_quantity: Decimal = ZERO
    used_quantity: Decimal = ZERO
    covered_list: Decimal = ZERO  # on-demand value of the usage it covered

    @property
    def utilisation(self) -> Decimal | None:
        return None if self.committed_quantity == 0 else self.used_quantity / self.committed_quantity

    @property
    def used_cost(self) -> Decimal:
        u = self.utilisation
        return ZERO if u is None else self.fee * min(u, Decimal(1))

    @property
    def unused_cost(self) -> Decimal:
        return self.fee - self.used_cost


def is_spend_fee(description: str) -> bool:
    """`Commitment - dollar based v1: ...` (a spend-based CUD's fee), not a resource CUD's."""
    return bool(_SPEND_FEE.match(description.strip()))


def fee_term_years(description: str) -> int:
    """`... for 3 years` -> 3; 1 when the SKU names no term."""
    m = _TERM.search(description)
    return int(m.group(1)) if m else 1


def fee_resource(description: str) -> str:
    """`Commitment v1: A100 GPU in Americas for 1 Year` -> `A100 GPU`."""
    m = _FEE.match(description.strip())
    return (m.group(1) if m else description).strip()


def _words(text: str) -> set[str]:
    return {_SYNONYMS.get(w, w) for w in re.findall(r"[a-z0-9]+", text.lower())}


def matches(resource: str, usage_description: str) -> bool:
    want = _words(resource)
    return bool(want) and want <= _words(usage_description)


def cud_utilisation(
    fees: Iterable[CudFee], covered: Iterable[CudCovered], grain: Grain = "month"
) -> list[CudUtilisation]:
    """Per (billing account, region, resource, unit, currency) and period. Covered usage
    that no fee matches is not counted (it shows as covered in `usage.coverage` still)."""
    out: dict[tuple, CudUtilisation] = {}
    resources: dict[tuple, set[str]] = {}  # (account, region, unit, currency) -> fee resources
    for f in fees:
        if is_spend_fee(f.description):
            continue
        res = fee_resource(f.description)
        key = (f.billing_account, f.region, res, f.unit, f.currency, _period(f.day, grain))
        u = out.get(key) or out.setdefault(key, CudUtilisation(*key))
        u.fee += f.cost
        u.committed_quantity += f.quantity
        resources.setdefault((f.billing_account, f.region, f.unit, f.currency), set()).add(res)
    for c in covered:
        if c.category == "Spend":
            continue
        for res in sorted(resources.get((c.billing_account, c.region, c.unit, c.currency), ())):
            if matches(res, c.description):
                key = (c.billing_account, c.region, res, c.unit, c.currency, _period(c.day, grain))
                u = out.get(key) or out.setdefault(key, CudUtilisation(*key))
                u.used_quantity += c.quantity
                u.covered_list += c.list_cost
                break
    return sorted(out.values(), key=lambda u: (u.billing_account, u.region, u.resource, u.period))


@dataclass
class SpendCudUtilisation:
    """One spend-based CUD scope (billing account, service, region; region "" = the fee names
    none and covers every region) over a day or month."""

    billing_account: str
    service: str
    region: str
    currency: str
    period: str
    term_years: int
    discount: Decimal  # share off on-demand (config: commitments.discounts.gcp.spend_cud)
    fee: Decimal = ZERO
    credited: Decimal = ZERO  # on-demand cost the DOLLAR_BASE credits offset
    covered_list: Decimal = ZERO

    @property
    def commitment_on_demand(self) -> Decimal:
        """The commitment at on-demand value: what the fee buys at full price."""
        return self.fee / (1 - self.discount)

    @property
    def utilisation(self) -> Decimal | None:
        c = self.commitment_on_demand
        return None if c == 0 else self.credited / c

    @property
    def used_cost(self) -> Decimal:
        return min(self.credited * (1 - self.discount), self.fee)

    @property
    def unused_cost(self) -> Decimal:
        return self.fee - self.used_cost


def spend_cud_utilisation(
    fees: Iterable[CudFee],
    covered: Iterable[CudCovered],
    discount: Callable[[int], Decimal],
    grain: Grain = "month",
) -> list[SpendCudUtilisation]:
    """Spend-based CUDs per (billing account, service, region, currency) and period. A fee
    without a region covers its service in every region; covered usage goes to the fee of
    its own region first. `discount(term_years)` gives the share off on-demand. Covered
    usage no fee matches is left out (it shows as covered in `usage.coverage` still)."""
    out: dict[tuple, SpendCudUtilisation] = {}
    scopes: set[tuple] = set()
    for f in fees:
        if not is_spend_fee(f.description):
            continue
        years = fee_term_years(f.description)
        key = (f.billing_account, f.service, f.region, f.currency, _period(f.day, grain))
        u = out.get(key)
        if u is None:
            u = out[key] = SpendCudUtilisation(*key, years, discount(years))
        u.fee += f.cost
        scopes.add(key[:4])
    for c in covered:
        if c.category != "Spend":
            continue
        for region in (c.region, ""):
            scope = (c.billing_account, c.service, region, c.currency)
            if scope in scopes:
                key = (*scope, _period(c.day, grain))
                u = out.get(key)
                if u is None:  # credits on a day the fee is not billed (a fee row spanning days)
                    years = next(x.term_years for k, x in out.items() if k[:4] == scope)
                    u = out[key] = SpendCudUtilisation(*key, years, discount(years))
                u.credited += c.credited
                u.covered_list += c.list_cost
                break
    return sorted(out.values(), key=lambda u: (u.billing_account, u.service, u.region, u.period))


# -- spend-based CUDs on the multiprice model (finops.focus.gcp_billing: FEE_UTILIZATION_OFFSET) --


@dataclass(frozen=True)
class SpendCudLine:
    """A focus_costs group of one new-model spend-based CUD (CommitmentDiscountCategory
    'Spend'): its fee rows (status 'Unused': ContractedCost = the fee, EffectiveCost = what
    the offset left) or the usage it discounted (status 'Used', at the CUD price)."""

    billing_account: str
    currency: str
    day: date
    commitment_id: str  # the CUD's subscription.instance_id
    status: str  # 'Used' | 'Unused'
    name: str  # CommitmentDiscountName: the fee SKU / the consumption model
    contracted: Decimal
    effective: Decimal
    list_cost: Decimal


@dataclass
class NewSpendCudUtilisation:
    """One new-model spend-based CUD over a day or month. The commitment is discounted
    dollars billed as a $1 fee SKU; the FEE_UTILIZATION_OFFSET credit takes off what the
    discounted usage consumed."""

    billing_account: str
    commitment_id: str
    currency: str
    period: str
    name: str = ""
    fee: Decimal = ZERO  # the commitment billed (ContractedCost of the fee rows)
    unused_cost: Decimal = ZERO  # the fee the offset did not take off (their EffectiveCost)
    covered_effective: Decimal = ZERO  # the covered usage at the CUD price
    covered_contracted: Decimal = ZERO  # ... at the default (negotiated on-demand) price
    covered_list: Decimal = ZERO  # ... at list price

    @property
    def used_cost(self) -> Decimal:
        """The offset: the part of the fee the covered usage consumed."""
        return self.fee - self.unused_cost

    @property
    def utilisation(self) -> Decimal | None:
        return None if self.fee == 0 else self.used_cost / self.fee

    @property
    def paid(self) -> Decimal:
        """What the covered usage and the commitment cost: the usage at the CUD price plus
        the fee not offset."""
        return self.covered_effective + self.unused_cost

    @property
    def savings(self) -> Decimal:
        """List cost of the covered usage minus what was paid for it (negative: the unused
        commitment cost more than the discount saved)."""
        return self.covered_list - self.paid


def new_spend_cud_utilisation(
    lines: Iterable[SpendCudLine], grain: Grain = "month"
) -> list[NewSpendCudUtilisation]:
    """Per new-model CUD (billing account, subscription, currency) and period. Only ids with
    a fee row in the input are new-model CUDs: legacy CUD-credited usage (also 'Spend',
    'Used', keyed by the credit id) never has one and is left out."""
    lines = list(lines)
    fees = {(ln.billing_account, ln.commitment_id, ln.currency) for ln in lines if ln.status == "Unused"}
    out: dict[tuple, NewSpendCudUtilisation] = {}
    for ln in lines:
        scope = (ln.billing_account, ln.commitment_id, ln.currency)
        if scope not in fees:
            continue
        key = (*scope, _period(ln.day, grain))
        u = out.get(key) or out.setdefault(key, NewSpendCudUtilisation(*key))
        if ln.status == "Unused":
            u.fee += ln.contracted
            u.unused_cost += ln.effective
            u.name = u.name or ln.name
        else:
            u.covered_effective += ln.effective
            u.covered_contracted += ln.contracted
            u.covered_list += ln.list_cost
    return sorted(out.values(), key=lambda u: (u.billing_account, u.commitment_id, u.period))


def new_model_ids(lines: Iterable[SpendCudLine]) -> set[str]:
    """The commitment ids that are new-model CUDs (they have a fee row)."""
    return {ln.commitment_id for ln in lines if ln.status == "Unused"}


def cud_row(
    commitment_id: str,
    currency: str,
    period: str,
    used_cost: Decimal,
    unused_cost: Decimal,
    covered_list: Decimal,
    used_quantity: Decimal,
    unused_quantity: Decimal,
    units: set[str],
) -> Utilisation:
    """A GCP CUD's Utilisation row: its unused part is measured from the fee, so it is always
    reported (`unused_reported`), unlike the credit rows alone (see `usage.utilisation`)."""
    return Utilisation(
        provider="gcp",
        commitment_id=commitment_id,
        commitment_type="Committed Use Discount",
        currency=currency,
        period=period,
        used_cost=used_cost,
        unused_cost=unused_cost,
        covered_list=covered_list,
        used_quantity=used_quantity,
        unused_quantity=unused_quantity,
        units=units,
        unused_reported=True,
    )


def new_spend_cud_rows(lines: Iterable[SpendCudLine]) -> list[Utilisation]:
    """Day-grain Utilisation rows of the new-model CUDs (id `gcp-spend-cud:<subscription>`):
    used = the offset, unused = the fee not offset, quantities in discounted dollars."""
    return [
        cud_row(
            f"gcp-spend-cud:{s.commitment_id}",
            s.currency,
            s.period,
            s.used_cost,
            s.unused_cost,
            s.covered_list,
            s.used_cost,
            s.unused_cost,
            {s.currency},
        )
        for s in new_spend_cud_utilisation(lines, "day")
    ]

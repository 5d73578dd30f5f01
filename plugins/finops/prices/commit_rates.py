"""Commitment rates from the providers' price data, set against the on-demand rate of the same
SKU: the discount the purchase advice (finops.commitments.rates) uses where it has one.

- AWS Reserved Instances: Pricing API `get_products` entries carry `terms.Reserved` next to
  `terms.OnDemand`; each standard offer (LeaseContractLength 1yr / 3yr, PurchaseOption No /
  Partial / All Upfront) costs upfront fee / term hours + its hourly fee.
- AWS Compute Savings Plans: Savings Plans API `DescribeSavingsPlansOfferingRates` rates per
  instance type and region (unit Hrs), against the Pricing API's on-demand price.
- Azure: Retail Prices items of `type` Reservation (`unitPrice` is the whole term's price,
  `reservationTerm` "1 Year" / "3 Years") and the `savingsPlan` array of Consumption items
  (hourly prices; api-version 2023-01-01-preview), against the Linux Consumption price of the
  same SKU and region. Azure prices monthly and upfront payment alike, so both get the rate.
- GCP resource CUDs: Billing Catalog SKUs of usageType Commit1Yr / Commit3Yr ("Commitment v1:
  A2 Cpu in Americas for 1 Year", "... A100 GPU ...") composed into machine shapes exactly as
  the on-demand SKUs are (vCPUs x core + GiB x RAM + GPUs x GPU).

Pure: parsing and arithmetic only; the jobs pass in the API answers."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from finops.commitments.family import instance_family
from finops.prices import gcp
from finops.prices.gpu_models import normalise_gpu
from finops.prices.records import MAX_PRICE_PER_HOUR, CatalogEntry, PriceRecord

log = logging.getLogger(__name__)

HOURS_PER_YEAR = Decimal(8760)
MAX_DISCOUNT = Decimal("0.9")  # the deepest published commitment discounts are near 80 %
AWS_RI_SOURCE = "aws:pricing.get_products:Reserved"
AWS_SP_SOURCE = "aws:savingsplans.describe_savings_plans_offering_rates"
AZURE_SOURCE = "azure:retail_prices"
GCP_SOURCE = "gcp:cloudbilling.skus:commit"
AWS_PAYMENTS = {
    "No Upfront": "no_upfront",
    "Partial Upfront": "partial_upfront",
    "All Upfront": "all_upfront",
}
_AWS_TERMS = {"1yr": 1, "3yr": 3}
_SP_SECONDS = {31536000: 1, 94608000: 3}
_AZURE_TERMS = {"1 Year": 1, "3 Years": 3}
_GCP_USAGE = {"Commit1Yr": 1, "Commit3Yr": 3}
_GCP_COMMIT = re.compile(
    r"^Commitment v1: (?:(?P<series>[A-Z]\d{1,2}[A-Z]?) (?P<part>Cpu|Ram)|(?:Nvidia )?(?P<gpu>[A-Za-z0-9 ]{1,40}?) GPU)"
    r" in [A-Za-z .,/-]{1,60} for (?P<years>[13]) Years?$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class CommitmentRate:
    """One commitment offer's effective hourly rate next to the on-demand rate it replaces."""

    provider: str
    product: str  # reserved_instance | savings_plan | reservation | resource_cud
    term_years: int
    payment: str  # no_upfront | partial_upfront | all_upfront
    region: str
    instance_type: str
    on_demand_hourly: Decimal
    commitment_hourly: Decimal
    source: str
    observed_at: datetime
    currency: str = "USD"
    sku: str | None = None

    @property
    def family(self) -> str:
        return instance_family(self.provider, self.instance_type) or self.instance_type

    @property
    def discount(self) -> Decimal:
        return 1 - self.commitment_hourly / self.on_demand_hourly

    @property
    def usable(self) -> bool:
        """A discount the advice can use: in (0, MAX_DISCOUNT). A commitment dearer than on
        demand says nothing about what a purchase would save; one at 90 % off or more is a
        unit mistake (a term price read as hourly), not an offer."""
        return self.on_demand_hourly > 0 and 0 < self.discount < MAX_DISCOUNT


def _dec(value: Any) -> Decimal | None:
    try:
        d = Decimal(str(value))
    except (InvalidOperation, ValueError, TypeError):
        return None
    return d if d.is_finite() and d >= 0 else None


# --------------------------------------------------------------------------- AWS


def aws_reserved(doc_or_raw: str | Mapping[str, Any], on_demand: PriceRecord) -> list[CommitmentRate]:
    """The standard RI offers of one get_products entry (the one `on_demand` was parsed from)."""
    try:
        doc = json.loads(doc_or_raw) if isinstance(doc_or_raw, str) else doc_or_raw
        reserved = doc["terms"].get("Reserved") or {}
    except (ValueError, KeyError, TypeError, AttributeError):
        return []
    out = []
    for term in reserved.values() if isinstance(reserved, dict) else []:
        attrs = term.get("termAttributes") or {}
        years = _AWS_TERMS.get(str(attrs.get("LeaseContractLength")))
        payment = AWS_PAYMENTS.get(str(attrs.get("PurchaseOption")))
        if years is None or payment is None or attrs.get("OfferingClass") != "standard":
            continue
        upfront, hourly, ok = Decimal(0), Decimal(0), True
        for dim in (term.get("priceDimensions") or {}).values():
            price = _dec((dim.get("pricePerUnit") or {}).get("USD"))
            if price is None:
                ok = False
            elif dim.get("unit") == "Quantity":
                upfront += price
            elif dim.get("unit") in ("Hrs", "Hours"):
                hourly += price
        if not ok:
            continue
        out.append(
            CommitmentRate(
                provider="aws",
                product="reserved_instance",
                term_years=years,
                payment=payment,
                region=on_demand.region,
                instance_type=on_demand.instance_type,
                on_demand_hourly=on_demand.price_per_hour,
                commitment_hourly=upfront / (HOURS_PER_YEAR * years) + hourly,
                source=AWS_RI_SOURCE,
                observed_at=on_demand.observed_at,
                sku=str(term.get("offerTermCode") or "")[:40] or None,
            )
        )
    return out


def aws_savings_plan_rates(
    results: Iterable[Mapping[str, Any]], on_demand: Mapping[tuple[str, str], PriceRecord]
) -> list[CommitmentRate]:
    """DescribeSavingsPlansOfferingRates `searchResults` (Compute plans, hourly EC2 rates) ->
    rates against `on_demand` ((region, instance type) -> the Pricing API's price)."""
    out = []
    for r in results:
        offer = r.get("savingsPlanOffering") or {}
        props = {p.get("name"): p.get("value") for p in r.get("properties") or [] if isinstance(p, dict)}
        years = _SP_SECONDS.get(int(offer.get("durationSeconds") or 0))
        payment = AWS_PAYMENTS.get(str(offer.get("paymentOption")))
        rate = _dec(r.get("rate"))
        od = on_demand.get((str(props.get("region")), str(props.get("instanceType"))))
        if (
            years is None
            or payment is None
            or rate is None
            or od is None
            or offer.get("planType") != "Compute"
            or r.get("unit") != "Hrs"
            or str(props.get("tenancy") or "shared").lower() != "shared"
        ):
            continue
        out.append(
            CommitmentRate(
                provider="aws",
                product="savings_plan",
                term_years=years,
                payment=payment,
                region=od.region,
                instance_type=od.instance_type,
                on_demand_hourly=od.price_per_hour,
                commitment_hourly=rate,
                source=AWS_SP_SOURCE,
                observed_at=od.observed_at,
                currency=str(offer.get("currency") or "USD"),
                sku=str(offer.get("offeringId") or "")[:64] or None,
            )
        )
    return out


def fetch_savings_plan_rates(
    savingsplans: Any, region: str, on_demand: Iterable[PriceRecord], max_pages: int = 500
) -> list[CommitmentRate]:
    """Compute Savings Plans rates for the on-demand records' instance types in one region."""
    od = {(r.region, r.instance_type): r for r in on_demand if r.region == region}
    types = sorted({t for _, t in od})
    if not types:
        return []
    kwargs: dict[str, Any] = {
        "savingsPlanTypes": ["Compute"],
        "products": ["EC2"],
        "serviceCodes": ["AmazonEC2"],
        "operations": ["RunInstances"],
        "filters": [
            {"name": "region", "values": [region]},
            {"name": "instanceType", "values": types},
            {"name": "tenancy", "values": ["shared"]},
            {"name": "productDescription", "values": ["Linux/UNIX"]},
        ],
        "maxResults": 1000,
    }
    out: list[CommitmentRate] = []
    seen: set[str] = set()
    for _ in range(max_pages):
        page = savingsplans.describe_savings_plans_offering_rates(**kwargs)
        out += aws_savings_plan_rates(page.get("searchResults") or [], od)
        token = page.get("nextToken")
        if not token or token in seen:
            break
        seen.add(token)
        kwargs["nextToken"] = token
    return out


# --------------------------------------------------------------------------- Azure


def azure_rates(items: Iterable[Mapping[str, Any]], on_demand: Iterable[PriceRecord]) -> list[CommitmentRate]:
    """Reservation items and Consumption items' savingsPlan arrays -> rates against the Linux
    Consumption price (finops.prices.azure.parse_item) of the same SKU and region."""
    od = {
        (r.region, r.instance_type.casefold()): r
        for r in on_demand
        if r.provider == "azure" and r.pricing_model == "ondemand"
    }
    found: dict[tuple[str, int, str, str], CommitmentRate] = {}

    def add(rec: PriceRecord, product: str, years: int, hourly: Decimal, sku: str | None) -> None:
        for payment in ("no_upfront", "all_upfront"):  # Azure prices both alike
            rate = CommitmentRate(
                provider="azure",
                product=product,
                term_years=years,
                payment=payment,
                region=rec.region,
                instance_type=rec.instance_type,
                on_demand_hourly=rec.price_per_hour,
                commitment_hourly=hourly,
                source=AZURE_SOURCE,
                observed_at=rec.observed_at,
                currency=rec.currency,
                sku=sku,
            )
            key = (product, years, payment, f"{rec.region}|{rec.instance_type}")
            if key not in found or hourly < found[key].commitment_hourly:
                found[key] = rate

    for item in items:
        sku, region = item.get("armSkuName"), item.get("armRegionName")
        rec = od.get((str(region), str(sku).casefold()))
        if (
            rec is None
            or item.get("serviceName") != "Virtual Machines"
            or item.get("currencyCode", "USD") != rec.currency
        ):
            continue
        kind = item.get("type")
        if kind == "Reservation":
            years = _AZURE_TERMS.get(str(item.get("reservationTerm")))
            total = _dec(item.get("unitPrice", item.get("retailPrice")))
            if years is None or total is None or total == 0:
                continue
            add(
                rec,
                "reservation",
                years,
                total / (HOURS_PER_YEAR * years),
                str(item.get("skuId") or "") or None,
            )
        elif kind == "Consumption" and str(item.get("meterId") or "") == _meter(rec):
            for sp in item.get("savingsPlan") or []:
                years = _AZURE_TERMS.get(str((sp or {}).get("term")))
                hourly = _dec((sp or {}).get("unitPrice", (sp or {}).get("retailPrice")))
                if years is not None and hourly is not None and 0 < hourly < MAX_PRICE_PER_HOUR:
                    add(rec, "savings_plan", years, hourly, str(item.get("skuId") or "") or None)
    return sorted(
        found.values(), key=lambda r: (r.product, r.term_years, r.payment, r.region, r.instance_type)
    )


def _meter(rec: PriceRecord) -> str:
    """The meterId the on-demand record was parsed from (its details JSON)."""
    try:
        return str(json.loads(rec.details or "{}").get("meterId") or "")
    except ValueError:
        return ""


def azure_reservation_filter(region: str) -> str:
    """The OData $filter of one region's VM reservation prices (region validated by the caller)."""
    return f"serviceName eq 'Virtual Machines' and priceType eq 'Reservation' and armRegionName eq '{region}'"


# --------------------------------------------------------------------------- GCP


def gcp_commit_component(sku: Mapping[str, Any]) -> tuple[int, gcp.Component] | None:
    """(term years, the per-unit committed price) of one Commit1Yr / Commit3Yr SKU, or None."""
    cat = sku.get("category")
    if not isinstance(cat, dict) or cat.get("resourceFamily") != "Compute":
        return None
    years = _GCP_USAGE.get(str(cat.get("usageType")))
    desc = sku.get("description")
    m = _GCP_COMMIT.match(desc) if isinstance(desc, str) and len(desc) <= 200 else None
    if years is None or m is None or int(m.group("years")) != years:
        return None
    if m.group("gpu"):
        model = normalise_gpu(m.group("gpu"))
        if model is None:
            return None
        kind, name = "gpu", model
    else:
        kind, name = ("core" if m.group("part").lower() == "cpu" else "ram"), m.group("series").upper()
    # the on-demand parser reads the price and regions the same way: reuse it with the
    # description and usage type it knows
    probe = dict(sku)
    probe["category"] = {**cat, "usageType": "OnDemand"}
    probe["description"] = (
        f"{m.group('gpu')} GPU running in Americas"
        if kind == "gpu"
        else f"{name} Instance {'Core' if kind == 'core' else 'Ram'} running in Americas"
    )
    comp = gcp.parse_sku(probe)
    if comp is None or comp.kind != kind:
        return None
    return years, gcp.Component(kind, name, "ondemand", comp.regions, comp.price, comp.currency, comp.sku_id)


def gcp_rates(
    commit_skus: Iterable[Mapping[str, Any]],
    on_demand: Iterable[PriceRecord],
    series: Iterable[str],
    specs: Iterable[CatalogEntry] | None = None,
) -> list[CommitmentRate]:
    """Resource-CUD rates per machine shape and region: the shape priced from the commitment
    SKUs (gcp.compose, as on demand) against its on-demand price."""
    by_term: dict[int, list[gcp.Component]] = {}
    for s in commit_skus:
        parsed = gcp_commit_component(s)
        if parsed is not None:
            by_term.setdefault(parsed[0], []).append(parsed[1])
    od = {
        (r.region, r.instance_type): r
        for r in on_demand
        if r.provider == "gcp" and r.pricing_model == "ondemand"
    }
    regions = sorted({r for r, _ in od})
    series = list(series)
    out = []
    for years, comps in sorted(by_term.items()):
        for rec in gcp.compose(comps, regions, series, specs):
            base = od.get((rec.region, rec.instance_type))
            if base is None or rec.currency != base.currency:
                continue
            out.append(
                CommitmentRate(
                    provider="gcp",
                    product="resource_cud",
                    term_years=years,
                    payment="no_upfront",
                    region=rec.region,
                    instance_type=rec.instance_type,
                    on_demand_hourly=base.price_per_hour,
                    commitment_hourly=rec.price_per_hour,
                    source=GCP_SOURCE,
                    observed_at=base.observed_at,
                    currency=base.currency,
                    sku=rec.sku,
                )
            )
    return out


def is_commitment_sku(sku: Mapping[str, Any]) -> bool:
    cat = sku.get("category")
    return isinstance(cat, dict) and str(cat.get("usageType")) in _GCP_USAGE

"""The rows every fetcher produces, independent of the warehouse and of any cloud SDK."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Literal

PricingModel = Literal["spot", "ondemand"]
# how a fetch's scope matches instance types: a case-insensitive prefix, or the type itself
TypeMatch = Literal["prefix", "exact"]
PROVIDERS = ("aws", "azure", "gcp", "lambda")
# No instance costs this much an hour; anything above is a parse accident or a hostile row.
MAX_PRICE_PER_HOUR = Decimal(100_000)


def utcnow() -> datetime:
    """Naive UTC, the warehouse's timestamp convention."""
    return datetime.now(UTC).replace(tzinfo=None)


def naive_utc(ts: datetime) -> datetime:
    return ts.astimezone(UTC).replace(tzinfo=None) if ts.tzinfo else ts


@dataclass(frozen=True)
class PriceRecord:
    """One price point for one instance type in one place.

    observed_at is the provider's own timestamp where it has one (AWS spot history: when the
    price took effect); for snapshot APIs (Azure, GCP, Lambda, AWS Pricing) it is the fetch time,
    and the store keeps a new point only when the price changed.
    """

    provider: str
    pricing_model: PricingModel
    region: str
    instance_type: str
    price_per_hour: Decimal
    observed_at: datetime
    source: str
    zone: str = ""
    currency: str = "USD"
    os: str = "linux"
    product: str | None = None
    sku: str | None = None
    effective_from: datetime | None = None
    details: str | None = None  # JSON text: provider extras (capacity, components)


CatalogSource = Literal["api", "static", "api+static"]


@dataclass(frozen=True)
class CatalogEntry:
    """One instance type's specs. gpu_count GPUs of which the VM gets gpu_count / gpu_divisor
    (a partitioned size: 1 / 6 of an A10). source: `api` (the provider's spec API said all of
    it), `static` (the table in gpu_models: the API call was refused or is not configured),
    `api+static` (the API, with fields it does not give filled from the table). gpu_name is the
    provider's own GPU name; with gpu_model None it marks drift."""

    provider: str
    instance_type: str
    gpu_model: str | None
    gpu_count: int | None
    gpu_memory_gib: float | None
    vcpus: int | None
    memory_gib: float | None
    interconnect: str | None = None
    source: str = "api"
    updated_at: datetime = field(default_factory=utcnow)
    gpu_divisor: int = 1
    gpu_name: str | None = None

    @property
    def is_drift(self) -> bool:
        """An API lists a GPU here that the catalog cannot classify (model unknown), or a GPU
        model without a count (a GPU family's size the API gives no `GPUs` for)."""
        if self.source == "static":
            return False
        return (self.gpu_model is None and (bool(self.gpu_count) or bool(self.gpu_name))) or (
            self.gpu_model is not None and self.gpu_count is None
        )


@dataclass(frozen=True)
class Offering:
    """One (instance type, region, zone) a spec API lists as offered; `restriction` is set where
    the provider lists the type there but not for this subscription (Azure restrictions)."""

    provider: str
    region: str
    zone: str
    instance_type: str
    source: str
    restriction: str | None = None


@dataclass(frozen=True)
class PlacementScore:
    """An AWS Spot Placement Score (1-10, higher = less likely to be interrupted / more capacity)."""

    provider: str
    region: str
    instance_type: str
    score: int
    observed_at: datetime
    zone_id: str = ""
    target_capacity: int = 1
    single_az: bool = True

"""GCP Compute Engine prices from the Cloud Billing Catalog API.

`GET /v1/services/6F81-5844-456A/skus` lists SKUs (paged by `nextPageToken`); a GPU machine
is billed as vCPUs x core SKU + GiB x RAM SKU + GPUs x GPU SKU of its series in its region,
with usageType OnDemand or Preemptible (spot). Prices are `units` + `nanos` / 1e9.
Machine shapes come from the Compute API (gcp_compute: vCPUs, RAM, GPUs per machine type, and
the zones offering it); the static table in gpu_models stands in when that call is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from finops.prices.catalog import static_entries
from finops.prices.gpu_models import KNOWN_INSTANCES, normalise_gpu
from finops.prices.http import HttpClient, PriceSourceError
from finops.prices.records import MAX_PRICE_PER_HOUR, CatalogEntry, PriceRecord, utcnow

SOURCE = "gcp:cloudbilling.skus"
COMPUTE_SERVICE = "6F81-5844-456A"
USAGE = {"OnDemand": "ondemand", "Preemptible": "spot"}
_REGION = re.compile(r"^[a-z]+-[a-z]+\d{1,2}$")
_WHERE = r"running in [A-Za-z .,/-]{1,60}"
_CORE_RAM = re.compile(
    rf"^(?:Spot Preemptible )?(?P<series>[A-Z]\d{{1,2}}[A-Z]?) (?:Predefined )?Instance (?P<part>Core|Ram) {_WHERE}$"
)
_GPU = re.compile(
    rf"^(?:Spot Preemptible )?(?:Nvidia )?(?P<gpu>[A-Za-z0-9 ]{{1,40}}?) GPU(?: attached to Spot Preemptible VMs)? {_WHERE}$"
)
_UNITS = {"core": "h", "ram": "GiBy.h", "gpu": "h"}


@dataclass(frozen=True)
class Component:
    """A per-unit hourly price: (series core | series ram | gpu model) in some regions."""

    kind: str  # core | ram | gpu
    name: str  # series (A2, G2, ...) for core / ram; canonical GPU model for gpu
    pricing_model: str
    regions: tuple[str, ...]
    price: Decimal
    currency: str
    sku_id: str


def unit_price(rate: dict[str, Any]) -> Decimal | None:
    """`{units: "1", nanos: 234000000}` -> Decimal('1.234'). Bad shapes -> None."""
    money = rate.get("unitPrice") if isinstance(rate, dict) else None
    if not isinstance(money, dict):
        return None
    try:
        units = int(money.get("units") or 0)
        nanos = int(money.get("nanos") or 0)
    except (TypeError, ValueError):
        return None
    if units < 0 or nanos < 0 or nanos >= 1_000_000_000 or units >= MAX_PRICE_PER_HOUR:
        return None
    return Decimal(units) + Decimal(nanos) / Decimal(1_000_000_000)


def parse_sku(sku: dict[str, Any]) -> Component | None:
    """One catalog SKU -> a priced component, or None for anything else (commitments, licences, ...)."""
    cat = sku.get("category") if isinstance(sku, dict) else None
    if not isinstance(cat, dict) or cat.get("resourceFamily") != "Compute":
        return None
    model = USAGE.get(str(cat.get("usageType")))
    desc = sku.get("description")
    if model is None or not isinstance(desc, str) or len(desc) > 200:
        return None
    if m := _CORE_RAM.match(desc):
        kind, name = m.group("part").lower(), m.group("series")
    elif m := _GPU.match(desc):
        gpu = normalise_gpu(m.group("gpu"))
        if gpu is None:
            return None
        kind, name = "gpu", gpu
    else:
        return None
    infos = sku.get("pricingInfo") or []
    if not isinstance(infos, list) or not infos:
        return None
    info = max(
        (i for i in infos if isinstance(i, dict)), key=lambda i: str(i.get("effectiveTime", "")), default=None
    )
    expr = (info or {}).get("pricingExpression") or {}
    if expr.get("usageUnit") != _UNITS[kind]:
        return None
    rates = [r for r in expr.get("tieredRates") or [] if isinstance(r, dict)]
    first = [r for r in rates if float(r.get("startUsageAmount") or 0) == 0]
    price = unit_price(first[-1]) if first else None
    if price is None or price == 0:
        return None
    regions = tuple(r for r in sku.get("serviceRegions") or [] if isinstance(r, str) and _REGION.match(r))
    currency = str(first[-1]["unitPrice"].get("currencyCode") or "USD")
    return Component(kind, name, model, regions, price, currency, str(sku.get("skuId") or "")[:40])


def iter_skus(
    client: HttpClient,
    base_url: str,
    service_id: str = COMPUTE_SERVICE,
    currency: str = "USD",
    max_pages: int = 500,
) -> Iterator[dict[str, Any]]:
    url = f"{base_url.rstrip('/')}/v1/services/{service_id}/skus"
    token: str | None = None
    seen: set[str] = set()
    for _ in range(max_pages):
        params = {"currencyCode": currency, "pageSize": "5000"}
        if token:
            params["pageToken"] = token
        doc = client.get_json(url, params)
        if not isinstance(doc, dict):
            raise PriceSourceError("GCP Billing Catalog: response is not a JSON object")
        yield from (s for s in doc.get("skus") or [] if isinstance(s, dict))
        token = doc.get("nextPageToken") or None
        if not token or not isinstance(token, str):
            return
        if token in seen:  # the rest is unknown: a partial listing would look like withdrawn prices
            raise PriceSourceError("GCP Billing Catalog: nextPageToken repeats; the listing is incomplete")
        seen.add(token)
    raise PriceSourceError(f"GCP Billing Catalog: more than {max_pages} pages")


def _pick(components: list[Component], kind: str, name: str, model: str, region: str) -> Component | None:
    """The most specific SKU (fewest regions) for this part in this region."""
    cands = [
        c
        for c in components
        if c.kind == kind and c.name == name and c.pricing_model == model and region in c.regions
    ]
    return min(cands, key=lambda c: (len(c.regions), c.price)) if cands else None


def static_specs() -> list[CatalogEntry]:
    """The static table's GCP shapes: the stand-in when the Compute API call is refused."""
    return static_entries("gcp", [t for (p, t) in KNOWN_INSTANCES if p == "gcp"])


def compose(
    components: list[Component],
    regions: Iterable[str],
    series: Iterable[str],
    specs: Iterable[CatalogEntry] | None = None,
    offered: set[tuple[str, str]] | None = None,
) -> list[PriceRecord]:
    """Instance prices as GCP bills them: vCPUs x core + GiB x RAM + GPUs x GPU, for each shape
    in `specs` (the Compute API's; the static table's by default). With `offered` ((region,
    machine type) pairs), a shape is priced only in the regions that offer it."""
    now = utcnow()
    wanted = {s.lower() for s in series}
    out: list[PriceRecord] = []
    shapes = sorted(static_specs() if specs is None else specs, key=lambda e: e.instance_type)
    for spec in shapes:
        mtype = spec.instance_type
        fam = mtype.split("-", 1)[0]
        if fam not in wanted or not (spec.vcpus and spec.memory_gib and spec.gpu_count and spec.gpu_model):
            continue
        for region in regions:
            if offered is not None and (region, mtype) not in offered:
                continue
            for model in ("ondemand", "spot"):
                core = _pick(components, "core", fam.upper(), model, region)
                ram = _pick(components, "ram", fam.upper(), model, region)
                gpu = _pick(components, "gpu", spec.gpu_model or "", model, region)
                if not (core and ram and gpu):
                    continue
                price = (
                    core.price * spec.vcpus
                    + ram.price * Decimal(str(spec.memory_gib))
                    + gpu.price * spec.gpu_count
                )
                out.append(
                    PriceRecord(
                        provider="gcp",
                        pricing_model=model,
                        region=region,
                        instance_type=mtype,
                        price_per_hour=price,
                        observed_at=now,
                        source=SOURCE,
                        currency=core.currency,
                        product=f"{fam.upper()} {spec.vcpus} vCPU + {spec.memory_gib} GiB + {spec.gpu_count}x {spec.gpu_model}",
                        sku=",".join((core.sku_id, ram.sku_id, gpu.sku_id)),
                        details=json.dumps(
                            {"core": str(core.price), "ram_gib": str(ram.price), "gpu": str(gpu.price)}
                        ),
                    )
                )
    return out


def check_region(region: str) -> str:
    if not isinstance(region, str) or not _REGION.match(region):
        raise ValueError(f"not a GCP region name: {region!r}")
    return region


def fetch(
    client: HttpClient,
    base_url: str,
    regions: Iterable[str],
    series: Iterable[str],
    service_id: str = COMPUTE_SERVICE,
    currency: str = "USD",
    max_pages: int = 500,
    specs: Iterable[CatalogEntry] | None = None,
    offered: set[tuple[str, str]] | None = None,
    commits: list[dict[str, Any]] | None = None,
) -> list[PriceRecord]:
    """`commits` collects the listing's Commit1Yr / Commit3Yr SKUs (finops.prices.commit_rates)."""
    regions = [check_region(r) for r in regions]
    comps = []
    for s in iter_skus(client, base_url, service_id, currency, max_pages):
        cat = s.get("category")
        if commits is not None and isinstance(cat, dict) and str(cat.get("usageType")).startswith("Commit"):
            commits.append(s)
        elif c := parse_sku(s):
            comps.append(c)
    return compose(comps, regions, series, specs, offered)

"""Azure VM sizes and where they are offered, from the Resource SKUs API (ARM, authenticated).

`GET /subscriptions/{id}/providers/Microsoft.Compute/skus?api-version=2021-07-01&$filter=location
eq '<region>'`, paged by `nextLink`. Each `virtualMachines` SKU carries `capabilities`
(name / value strings: `vCPUs`, `MemoryGB`, `GPUs`), its `family`, `locationInfo` (the zones
per location) and `restrictions` (type `Location` or `Zone`, with a `reasonCode` such as
`NotAvailableForSubscription`).

What the API does not say, and where it comes from instead (gpu_models):
- the GPU model: the VM family names it (`StandardNVADSA10v5Family` -> A10), else the size name;
- the GPU count for a few sizes listed without a `GPUs` capability (ND MI300X v5, ND GB200 v6);
- the fraction of a partitioned size: `GPUs` says 1 for Standard_NV6ads_A10_v5, which gets 1/6;
- GPU memory and the interconnect.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from finops.prices.azure import region_filter
from finops.prices.catalog import complete
from finops.prices.gpu_models import (
    AZURE_MISSING_GPU_COUNT,
    azure_family_gpu,
    azure_gpu_divisor,
    gpu_from_instance_name,
)
from finops.prices.http import HttpClient, PriceSourceError, same_origin
from finops.prices.records import CatalogEntry, Offering

SOURCE = "azure:resource_skus"
API_VERSION = "2021-07-01"
_SUB = re.compile(r"^[0-9a-fA-F-]{36}$")
_SIZE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,99}$")
_ZONE = re.compile(r"^[A-Za-z0-9-]{1,10}$")


def skus_url(base_url: str, subscription: str) -> str:
    if not isinstance(subscription, str) or not _SUB.match(subscription):
        raise ValueError(f"not an Azure subscription id: {subscription!r}")
    return f"{base_url.rstrip('/')}/subscriptions/{subscription}/providers/Microsoft.Compute/skus"


def location_filter(region: str) -> str:
    region_filter(region)  # validates the name
    return f"location eq '{region}'"


def iter_skus(
    client: HttpClient, base_url: str, subscription: str, region: str, max_pages: int = 500
) -> Iterator[dict[str, Any]]:
    url = skus_url(base_url, subscription)
    query: dict[str, str] | None = {"api-version": API_VERSION, "$filter": location_filter(region)}
    seen: set[str] = set()
    for _ in range(max_pages):
        doc = client.get_json(url, query)
        if not isinstance(doc, dict) or not isinstance(doc.get("value", []), list):
            raise PriceSourceError("Azure Resource SKUs: response has no `value` list")
        yield from (s for s in doc.get("value") or [] if isinstance(s, dict))
        link = doc.get("nextLink")
        if not link or not isinstance(link, str):
            return
        if not same_origin(link, base_url):
            raise PriceSourceError(
                "Azure Resource SKUs: nextLink points off the ARM host; refusing to follow"
            )
        if link in seen:
            raise PriceSourceError("Azure Resource SKUs: nextLink repeats; the listing is incomplete")
        seen.add(link)
        url, query = link, None
    raise PriceSourceError(f"Azure Resource SKUs: more than {max_pages} pages")


def _caps(sku: dict[str, Any]) -> dict[str, str]:
    return {
        str(c.get("name")): str(c.get("value"))
        for c in sku.get("capabilities") or []
        if isinstance(c, dict) and isinstance(c.get("name"), str)
    }


def _num(value: str | None) -> float | None:
    try:
        f = float(value) if value is not None else None
    except ValueError:
        return None
    return f if f is not None and 0 <= f < 1e6 else None


def parse_sku(sku: dict[str, Any]) -> CatalogEntry | None:
    """A virtualMachines SKU -> its catalog entry; None for sizes without a GPU (neither a
    `GPUs` capability nor a GPU family)."""
    name, family = sku.get("name"), str(sku.get("family") or "")[:100]
    if sku.get("resourceType") != "virtualMachines" or not isinstance(name, str) or not _SIZE.match(name):
        return None
    caps = _caps(sku)
    gpus = _num(caps.get("GPUs"))
    model = azure_family_gpu(family) or gpu_from_instance_name("azure", name)
    count = int(gpus) if gpus else None
    if count is None and model:
        # the SKU says no GPU count: the table's, else kept without one (a drift entry, not dropped)
        count = AZURE_MISSING_GPU_COUNT.get(name.casefold())
    elif not count:
        return None
    vcpus, mem = _num(caps.get("vCPUs")), _num(caps.get("MemoryGB"))
    entry = CatalogEntry(
        provider="azure",
        instance_type=name,
        gpu_model=model,
        gpu_count=count,
        gpu_memory_gib=None,
        vcpus=int(vcpus) if vcpus else None,
        memory_gib=mem,
        gpu_divisor=azure_gpu_divisor(name),
        gpu_name=family or None,
    )
    done = complete(entry)
    if caps.get("GPUs") is None and count is not None:  # the count itself came from the static table
        done = replace(done, source="api+static")
    return done


def offerings(sku: dict[str, Any], region: str) -> list[Offering]:
    """The zones of `region` listing this size, each with its restriction (None = usable)."""
    name = str(sku.get("name"))
    loc_restricted: str | None = None
    zone_restricted: dict[str, str] = {}
    for r in sku.get("restrictions") or []:
        if not isinstance(r, dict):
            continue
        info = r.get("restrictionInfo") or {}
        locs = {str(x).lower() for x in (info.get("locations") or r.get("values") or [])}
        if region not in locs:
            continue
        reason = str(r.get("reasonCode") or "Restricted")[:60]
        if r.get("type") == "Zone":
            zone_restricted.update({str(z): reason for z in info.get("zones") or []})
        else:
            loc_restricted = reason
    out: list[Offering] = []
    for li in sku.get("locationInfo") or []:
        if not isinstance(li, dict) or str(li.get("location", "")).lower() != region:
            continue
        zones = [str(z) for z in li.get("zones") or [] if _ZONE.match(str(z))] or [""]
        for z in sorted(zones):
            out.append(Offering("azure", region, z, name, SOURCE, loc_restricted or zone_restricted.get(z)))
    return out


def fetch_specs(
    client: HttpClient,
    base_url: str,
    subscription: str,
    region: str,
    prefixes: Iterable[str],
    max_pages: int = 500,
) -> tuple[list[CatalogEntry], list[Offering]]:
    """GPU sizes matching the armSkuName prefixes in one region, and where they are offered."""
    prefixes = [p.lower() for p in prefixes]
    entries: dict[str, CatalogEntry] = {}
    offers: list[Offering] = []
    for sku in iter_skus(client, base_url, subscription, region, max_pages):
        name = sku.get("name")
        if not isinstance(name, str) or not name.lower().startswith(tuple(prefixes)):
            continue
        entry = parse_sku(sku)
        if entry is None:
            continue
        entries.setdefault(entry.instance_type, entry)
        offers += offerings(sku, region)
    return sorted(entries.values(), key=lambda e: e.instance_type), offers

"""Lambda Cloud on-demand prices and specs from `GET /api/v1/instance-types` (no spot tier).

Lambda prices do not vary by region, so each instance type gets one `global` price row; the
regions that have capacity at fetch time ride along in `details`.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from finops.prices.catalog import complete
from finops.prices.gpu_models import normalise_gpu
from finops.prices.http import HttpClient, PriceSourceError
from finops.prices.records import MAX_PRICE_PER_HOUR, CatalogEntry, PriceRecord, utcnow

SOURCE = "lambda:instance-types"
PATH = "/api/v1/instance-types"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_]{0,63}$")
_MEM = re.compile(r"(\d{2,3})\s*GB", re.I)


def _interconnect(desc: str, count: int | None) -> str | None:
    if "SXM" in desc.upper():
        return "NVLink (SXM)" if (count or 0) > 1 else "SXM"
    if "PCIE" in desc.upper():
        return "PCIe"
    return None


def parse(doc: Any) -> tuple[list[PriceRecord], list[CatalogEntry]]:
    """The instance-types document -> (price rows, catalog rows). Odd entries are skipped."""
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), dict):
        raise PriceSourceError("Lambda Cloud: response has no `data` object")
    now = utcnow()
    prices: list[PriceRecord] = []
    catalog: list[CatalogEntry] = []
    for key, entry in sorted(doc["data"].items()):
        it = entry.get("instance_type") if isinstance(entry, dict) else None
        if not isinstance(it, dict):
            continue
        name = it.get("name", key)
        cents = it.get("price_cents_per_hour")
        if (
            not isinstance(name, str)
            or not _NAME.match(name)
            or isinstance(cents, bool)
            or not isinstance(cents, int)
        ):
            continue
        if cents <= 0 or cents >= MAX_PRICE_PER_HOUR * 100:
            continue
        raw_specs = it.get("specs")
        specs: dict[str, Any] = raw_specs if isinstance(raw_specs, dict) else {}
        gdesc = str(it.get("gpu_description") or "")[:200]
        m = _MEM.search(gdesc)
        gmem = float(m.group(1)) if m else None
        count = specs.get("gpus") if isinstance(specs.get("gpus"), int) else None
        regions = [
            r["name"]
            for r in (entry.get("regions_with_capacity_available") or [])
            if isinstance(r, dict)
            and isinstance(r.get("name"), str)
            and _NAME.match(r["name"].replace("-", "_"))
        ]
        prices.append(
            PriceRecord(
                provider="lambda",
                pricing_model="ondemand",
                region="global",
                instance_type=name,
                price_per_hour=Decimal(cents) / 100,
                observed_at=now,
                source=SOURCE,
                product=str(it.get("description") or "")[:200] or None,
                details=json.dumps({"regions_with_capacity": regions}),
            )
        )
        catalog.append(
            complete(
                CatalogEntry(
                    provider="lambda",
                    instance_type=name,
                    gpu_model=normalise_gpu(gdesc, gmem),
                    gpu_count=count,
                    gpu_memory_gib=gmem,
                    vcpus=specs.get("vcpus") if isinstance(specs.get("vcpus"), int) else None,
                    memory_gib=float(specs["memory_gib"])
                    if isinstance(specs.get("memory_gib"), int | float)
                    else None,
                    interconnect=_interconnect(gdesc, count),
                    gpu_name=gdesc or None,
                )
            )
        )
    return prices, catalog


def fetch(client: HttpClient, base_url: str) -> tuple[list[PriceRecord], list[CatalogEntry]]:
    return parse(client.get_json(base_url.rstrip("/") + PATH))

"""Azure VM prices from the public Retail Prices API (no auth).

One listing per region: `serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and
armRegionName eq '<region>'`, followed through `NextPageLink`. The API's paging quirks are
handled: the last page's link may be null, missing or an empty string, a trailing page may
come back with no Items but a link, and a link is never followed off the API's own host; a
link that repeats fails the fetch (a partial listing would make the rest look withdrawn).
Rows kept: hourly Linux (no ' Windows' product) pay-as-you-go and Spot (' Spot' in skuName);
Low Priority rows are dropped (a retired tier).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from finops.prices.http import HttpClient, PriceSourceError, same_origin
from finops.prices.records import MAX_PRICE_PER_HOUR, PriceRecord, naive_utc, utcnow

SOURCE = "azure:retail_prices"
_REGION = re.compile(r"^[a-z][a-z0-9]{1,39}$")
_CURRENCY = re.compile(r"^[A-Z]{3}$")
_SKU = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,99}$")


def region_filter(region: str) -> str:
    """The OData $filter for one region. The region is validated, never spliced in raw."""
    if not isinstance(region, str) or not _REGION.match(region):
        raise ValueError(f"not an Azure region name: {region!r}")
    return f"serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and armRegionName eq '{region}'"


def iter_pages(
    client: HttpClient, base_url: str, params: dict[str, str], max_pages: int = 500
) -> Iterator[list[dict[str, Any]]]:
    """Yield each page's Items, following NextPageLink until it is empty."""
    url: str | None = base_url
    query: dict[str, str] | None = params
    seen: set[str] = set()
    for _ in range(max_pages):
        assert url is not None
        doc = client.get_json(url, query)
        if not isinstance(doc, dict):
            raise PriceSourceError("Azure Retail Prices: response is not a JSON object")
        items = doc.get("Items") or []
        if not isinstance(items, list):
            raise PriceSourceError("Azure Retail Prices: Items is not a list")
        yield [i for i in items if isinstance(i, dict)]
        link = doc.get("NextPageLink")
        if not link or not isinstance(link, str) or not link.strip() or not items:
            return
        if not same_origin(link, base_url):
            raise PriceSourceError(
                "Azure Retail Prices: NextPageLink points off the API host; refusing to follow"
            )
        if link in seen:  # the rest is unknown: a partial listing would look like withdrawn prices
            raise PriceSourceError("Azure Retail Prices: NextPageLink repeats; the listing is incomplete")
        seen.add(link)
        url, query = link, None  # the link carries the filter and $skip
    raise PriceSourceError(f"Azure Retail Prices: more than {max_pages} pages; raise prices.http.max_pages")


def _price(value: Any) -> Decimal | None:
    try:
        d = Decimal(str(value))
    except (InvalidOperation, ValueError, TypeError):
        return None
    return d if d.is_finite() and 0 < d < MAX_PRICE_PER_HOUR else None


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return naive_utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        return None


def parse_item(item: dict[str, Any], prefixes: Iterable[str], observed_at: datetime) -> PriceRecord | None:
    """One Retail Prices item -> a spot / on-demand Linux price, or None when it is not one."""
    sku = item.get("armSkuName")
    sku_name = str(item.get("skuName") or "")
    product = str(item.get("productName") or "")
    meter = str(item.get("meterName") or "")
    if not isinstance(sku, str) or not _SKU.match(sku):
        return None
    if not any(sku.lower().startswith(p.lower()) for p in prefixes):
        return None
    if item.get("type") != "Consumption" or item.get("serviceName") != "Virtual Machines":
        return None
    if item.get("unitOfMeasure") != "1 Hour" or "Windows" in product:
        return None
    if "Low Priority" in sku_name or "Low Priority" in meter:
        return None
    if item.get("isPrimaryMeterRegion") is False:
        return None
    tier = item.get("tierMinimumUnits", 0)
    if isinstance(tier, int | float) and tier > 0:
        return None
    price = _price(item.get("retailPrice", item.get("unitPrice")))
    region = item.get("armRegionName")
    currency = item.get("currencyCode", "USD")
    if price is None or not isinstance(region, str) or not _REGION.match(region):
        return None
    if not isinstance(currency, str) or not _CURRENCY.match(currency):
        return None
    spot = " Spot" in sku_name or meter.endswith(" Spot")
    return PriceRecord(
        provider="azure",
        pricing_model="spot" if spot else "ondemand",
        region=region,
        instance_type=sku,
        price_per_hour=price,
        observed_at=observed_at,
        source=SOURCE,
        currency=currency,
        product=product[:200] or None,
        sku=str(item.get("skuId") or "")[:100] or None,
        effective_from=_when(item.get("effectiveStartDate")),
        details=json.dumps({"meterId": str(item.get("meterId") or "")[:64], "skuName": sku_name[:100]}),
    )


def fetch_region(
    client: HttpClient,
    base_url: str,
    region: str,
    prefixes: Iterable[str],
    api_version: str = "2023-01-01-preview",
    currency: str = "USD",
    max_pages: int = 500,
    raw: list[dict[str, Any]] | None = None,
) -> list[PriceRecord]:
    """All spot and on-demand Linux VM prices in one region for the given armSkuName prefixes.
    `raw` collects the items of those SKUs (their savingsPlan arrays: finops.prices.commit_rates)."""
    if not _CURRENCY.match(currency):
        raise ValueError(f"not a currency code: {currency!r}")
    prefixes = list(prefixes)
    params = {"api-version": api_version, "$filter": region_filter(region)}
    if currency != "USD":
        params["currencyCode"] = f"'{currency}'"
    now = utcnow()
    out: dict[tuple[str, str], PriceRecord] = {}
    for items in iter_pages(client, base_url, params, max_pages=max_pages):
        for item in items:
            rec = parse_item(item, prefixes, now)
            if rec is None or rec.region != region:
                continue
            if raw is not None and rec.pricing_model == "ondemand":
                raw.append(item)
            key = (rec.instance_type, rec.pricing_model)
            # several meters can price one SKU: keep the cheapest, deterministic across runs
            if key not in out or rec.price_per_hour < out[key].price_per_hour:
                out[key] = rec
    return sorted(out.values(), key=lambda r: (r.instance_type, r.pricing_model))

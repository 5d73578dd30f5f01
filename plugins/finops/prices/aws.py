"""AWS prices through boto3 clients made by the Amazon provider's hooks.

- spot history: `describe_spot_price_history` (Linux/UNIX, one paginated call per region and
  instance family, StartTime = the stored watermark), points keep AWS's own Timestamp;
- on-demand: the Pricing API `get_products` (Linux, Shared tenancy, no pre-installed
  software, CapacityStatus Used), PriceList entries are JSON strings;
- specs: `describe_instance_types` (GpuInfo); where offered: `describe_instance_type_offerings`
  per availability zone;
- interruption risk: `get_spot_placement_scores` (1-10 per region / AZ).

Functions take a boto3 client so tests drive them with `botocore.stub.Stubber` or moto;
`clients()` builds the real ones from an Airflow AWS connection.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from finops.prices.catalog import complete, static_entries
from finops.prices.gpu_models import KNOWN_INSTANCES, normalise_gpu
from finops.prices.records import (
    MAX_PRICE_PER_HOUR,
    CatalogEntry,
    Offering,
    PlacementScore,
    PriceRecord,
    TypeMatch,
    naive_utc,
    utcnow,
)

log = logging.getLogger(__name__)

SPOT_SOURCE = "aws:describe_spot_price_history"
PRICING_SOURCE = "aws:pricing.get_products"
OFFERINGS_SOURCE = "aws:describe_instance_type_offerings"
PRODUCT_DESCRIPTION = "Linux/UNIX"
_FAMILY = re.compile(r"^[a-z][a-z0-9-]{0,15}$")
_TYPE = re.compile(r"^[a-z][a-z0-9-]{0,15}\.[a-z0-9-]{1,24}$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z0-9]+){1,3}-\d{1,2}$")


def check_region(region: str) -> str:
    if not isinstance(region, str) or not _REGION.match(region):
        raise ValueError(f"not an AWS region name: {region!r}")
    return region


def type_pattern(family_or_type: str) -> str:
    """`p5` -> `p5.*` (the instance-type filter takes wildcards); `g5.xlarge` stays as is."""
    if _TYPE.match(family_or_type):
        return family_or_type
    if _FAMILY.match(family_or_type):
        return f"{family_or_type}.*"
    raise ValueError(f"not an AWS instance family or type: {family_or_type!r}")


def type_scope(family_or_type: str) -> tuple[TypeMatch, str]:
    """The instance types a family filter asks for, as a coverage scope: `p5` -> ("prefix", "p5.")
    (never p5e), `g5.xlarge` -> ("exact", "g5.xlarge")."""
    pattern = type_pattern(family_or_type)
    return ("prefix", pattern[:-1]) if pattern.endswith(".*") else ("exact", pattern)


def _decimal(value: Any) -> Decimal | None:
    try:
        d = Decimal(str(value))
    except (InvalidOperation, ValueError, TypeError):
        return None
    return d if d.is_finite() and 0 <= d < MAX_PRICE_PER_HOUR else None


@dataclass
class SpotHistory:
    records: list[PriceRecord]
    max_timestamp: datetime | None
    pages: int


def fetch_spot_history(
    ec2: Any,
    region: str,
    family: str,
    start_time: datetime,
    end_time: datetime | None = None,
) -> SpotHistory:
    """Every spot price point since `start_time` for one family in one region (all AZs)."""
    kwargs: dict[str, Any] = {
        "StartTime": start_time,
        "ProductDescriptions": [PRODUCT_DESCRIPTION],
        "Filters": [{"Name": "instance-type", "Values": [type_pattern(family)]}],
    }
    if end_time is not None:
        kwargs["EndTime"] = end_time
    fetched = utcnow()
    out: list[PriceRecord] = []
    newest: datetime | None = None
    pages = 0
    for page in ec2.get_paginator("describe_spot_price_history").paginate(**kwargs):
        pages += 1
        for item in page.get("SpotPriceHistory", []):
            price = _decimal(item.get("SpotPrice"))
            itype = item.get("InstanceType")
            ts = item.get("Timestamp")
            if (
                price is None
                or not isinstance(itype, str)
                or not _TYPE.match(itype)
                or not isinstance(ts, datetime)
            ):
                log.warning("skipping malformed spot price item in %s: %r", region, item)
                continue
            ts = naive_utc(ts)
            newest = ts if newest is None or ts > newest else newest
            out.append(
                PriceRecord(
                    provider="aws",
                    pricing_model="spot",
                    region=region,
                    zone=str(item.get("AvailabilityZone") or ""),
                    instance_type=itype,
                    price_per_hour=price,
                    observed_at=ts,
                    source=SPOT_SOURCE,
                    product=str(item.get("ProductDescription") or PRODUCT_DESCRIPTION),
                    details=json.dumps({"fetched_at": fetched.isoformat()}),
                )
            )
    return SpotHistory(out, newest, pages)


def fetch_instance_types(ec2: Any, families: Iterable[str]) -> list[CatalogEntry]:
    """Specs (GPU model / count / memory, vCPUs, RAM) for the families' instance types."""
    patterns = [type_pattern(f) for f in families]
    if not patterns:
        return []
    out: list[CatalogEntry] = []
    pages = ec2.get_paginator("describe_instance_types").paginate(
        Filters=[{"Name": "instance-type", "Values": patterns}]
    )
    for page in pages:
        for it in page.get("InstanceTypes", []):
            itype = it.get("InstanceType", "")
            if not _TYPE.match(itype):
                continue
            gpus = (it.get("GpuInfo") or {}).get("Gpus") or []
            g = gpus[0] if gpus else {}
            mem_mib = (g.get("MemoryInfo") or {}).get("SizeInMiB")
            mem_gib = round(mem_mib / 1024, 1) if isinstance(mem_mib, int | float) else None
            name = " ".join(str(x) for x in (g.get("Manufacturer"), g.get("Name")) if x)[:100] or None
            count = sum(int(x.get("Count") or 0) for x in gpus) or None
            divisor = _divisor(g.get("GpuPartitionSize"))
            if divisor > 1:  # g6f: Count 0, one logical GPU that is a slice; MemoryInfo is the slice's
                count = int(g.get("LogicalGpuCount") or 1)
                mem_gib = round(mem_gib * divisor, 1) if mem_gib is not None else None
            out.append(
                complete(
                    CatalogEntry(
                        provider="aws",
                        instance_type=itype,
                        gpu_model=normalise_gpu(g.get("Name"), mem_gib) if g else None,
                        gpu_count=count,
                        gpu_divisor=divisor,
                        gpu_memory_gib=mem_gib,
                        vcpus=(it.get("VCpuInfo") or {}).get("DefaultVCpus"),
                        memory_gib=round(((it.get("MemoryInfo") or {}).get("SizeInMiB") or 0) / 1024, 1)
                        or None,
                        gpu_name=name,
                    )
                )
            )
    return out


def _divisor(partition: Any) -> int:
    """GpuPartitionSize 0.125 -> 8 (an eighth of a GPU); 1, absent or odd -> 1."""
    if isinstance(partition, int | float) and not isinstance(partition, bool) and 0 < partition < 1:
        return max(1, round(1 / partition))
    return 1


def static_instance_types(families: Iterable[str]) -> list[CatalogEntry]:
    """The static table's types of these families: the stand-in when describe_instance_types is
    refused (an IAM policy without ec2:DescribeInstanceTypes)."""
    scopes = [type_scope(f) for f in families]
    types = [
        t
        for (p, t) in KNOWN_INSTANCES
        if p == "aws" and any(t.startswith(v) if m == "prefix" else t == v for m, v in scopes)
    ]
    return static_entries("aws", types)


def fetch_offerings(ec2: Any, region: str, instance_types: Iterable[str]) -> list[Offering]:
    """(type, zone) pairs the region offers for these types (describe_instance_type_offerings,
    asked for the exact types describe_instance_types listed, 100 per call)."""
    types = sorted({t for t in instance_types if _TYPE.match(t)})
    out: list[Offering] = []
    for i in range(0, len(types), 100):
        out += _offerings(ec2, region, types[i : i + 100])
    return out


def _offerings(ec2: Any, region: str, types: list[str]) -> list[Offering]:
    out: list[Offering] = []
    pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": types}]
    )
    for page in pages:
        for o in page.get("InstanceTypeOfferings", []):
            itype, zone = o.get("InstanceType"), o.get("Location")
            if (
                isinstance(itype, str)
                and _TYPE.match(itype)
                and isinstance(zone, str)
                and zone.startswith(region)
            ):
                out.append(Offering("aws", region, zone, itype, OFFERINGS_SOURCE))
    return out


def pricing_filters(region: str, instance_type: str) -> list[dict[str, str]]:
    """The get_products filters for Linux, shared tenancy, no pre-installed software, capacity Used."""
    terms = {
        "ServiceCode": "AmazonEC2",
        "regionCode": region,
        "instanceType": instance_type,
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
    }
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in terms.items() if k != "ServiceCode"]


def parse_price_list_item(raw: str | dict[str, Any], observed_at: datetime) -> PriceRecord | None:
    """One PriceList entry (a JSON string) -> an on-demand hourly USD price, or None."""
    try:
        doc = json.loads(raw) if isinstance(raw, str) else raw
        attrs = doc["product"]["attributes"]
        terms = doc["terms"]["OnDemand"]
    except (ValueError, KeyError, TypeError):
        log.warning("skipping malformed PriceList entry")
        return None
    itype, region = attrs.get("instanceType", ""), attrs.get("regionCode", "")
    if not _TYPE.match(itype) or not _REGION.match(region) or attrs.get("operatingSystem") != "Linux":
        return None
    for term in terms.values():
        for dim in (term.get("priceDimensions") or {}).values():
            if dim.get("unit") not in ("Hrs", "Hours"):
                continue
            price = _decimal((dim.get("pricePerUnit") or {}).get("USD"))
            if price is None or price == 0:
                continue
            return PriceRecord(
                provider="aws",
                pricing_model="ondemand",
                region=region,
                instance_type=itype,
                price_per_hour=price,
                observed_at=observed_at,
                source=PRICING_SOURCE,
                product=str(attrs.get("operation") or "RunInstances"),
                sku=str(doc["product"].get("sku") or "") or None,
                effective_from=_iso(term.get("effectiveDate")),
            )
    return None


def _iso(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return naive_utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        return None


def fetch_ondemand(
    pricing: Any, region: str, instance_types: Iterable[str], docs: list[Any] | None = None
) -> list[PriceRecord]:
    """On-demand Linux prices for the given types in one region (one paginated query per type).
    `docs` collects each price's PriceList entry (its Reserved terms: finops.prices.commit_rates)."""
    now = utcnow()
    out: list[PriceRecord] = []
    for itype in sorted(set(instance_types)):
        pages = pricing.get_paginator("get_products").paginate(
            ServiceCode="AmazonEC2", Filters=pricing_filters(region, itype), FormatVersion="aws_v1"
        )
        hit = next(
            (
                (r, raw)
                for page in pages
                for raw in page.get("PriceList", [])
                for r in (parse_price_list_item(raw, now),)
                if r is not None and r.instance_type == itype and r.region == region
            ),
            None,
        )
        if hit is not None:
            out.append(hit[0])
            if docs is not None:
                docs.append(hit[1])
    return out


def fetch_placement_scores(
    ec2: Any, regions: list[str], instance_type: str, target_capacity: int = 1, single_az: bool = True
) -> list[PlacementScore]:
    """Spot Placement Scores for one instance type across regions (the API scores the set)."""
    observed = utcnow().replace(minute=0, second=0, microsecond=0)  # same-hour re-runs dedupe
    out: list[PlacementScore] = []
    for page in _placement_pages(ec2, regions, instance_type, target_capacity, single_az):
        for s in page.get("SpotPlacementScores", []):
            score = s.get("Score")
            region = s.get("Region")
            if not isinstance(score, int) or not isinstance(region, str):
                continue
            out.append(
                PlacementScore(
                    provider="aws",
                    region=region,
                    zone_id=str(s.get("AvailabilityZoneId") or ""),
                    instance_type=instance_type,
                    score=score,
                    observed_at=observed,
                    target_capacity=target_capacity,
                    single_az=single_az,
                )
            )
    return out


def _placement_pages(
    ec2: Any, regions: list[str], instance_type: str, target_capacity: int, single_az: bool
) -> Iterator[dict[str, Any]]:
    kwargs: dict[str, Any] = {
        "InstanceTypes": [instance_type],
        "TargetCapacity": target_capacity,
        "TargetCapacityUnitType": "units",
        "SingleAvailabilityZone": single_az,
        "RegionNames": regions,
    }
    seen: set[str] = set()
    while True:
        page = ec2.get_spot_placement_scores(**kwargs)
        yield page
        token = page.get("NextToken")
        if not token or token in seen:
            return
        seen.add(token)
        kwargs["NextToken"] = token


def savingsplans_client(conn_id: str) -> Any:
    """The Savings Plans API client (a global endpoint, us-east-1) from the AWS connection."""
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

    return AwsBaseHook(aws_conn_id=conn_id, region_name="us-east-1", client_type="savingsplans").conn


def clients(conn_id: str, region: str, pricing_region: str = "us-east-1") -> tuple[Any, Any]:
    """(ec2 client for `region`, pricing client) from the Airflow AWS connection."""
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
    from airflow.providers.amazon.aws.hooks.ec2 import EC2Hook

    ec2 = EC2Hook(aws_conn_id=conn_id, region_name=region, api_type="client_type").conn
    pricing = AwsBaseHook(aws_conn_id=conn_id, region_name=pricing_region, client_type="pricing").conn
    return ec2, pricing

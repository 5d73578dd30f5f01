"""AWS Capacity Blocks for ML: what `DescribeCapacityBlockOfferings` offers for the configured
GPU instance types, count and duration. READ ONLY: the job describes offerings and never
calls PurchaseCapacityBlock; the advice prices them against on-demand (finops.commitments.advice
.capacity_blocks)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from finops.prices.records import naive_utc, utcnow

log = logging.getLogger(__name__)

SOURCE = "aws:describe_capacity_block_offerings"
_TYPE = re.compile(r"^[a-z][a-z0-9-]{0,15}\.[a-z0-9-]{1,24}$")
_ID = re.compile(r"^[A-Za-z0-9-]{1,64}$")


@dataclass(frozen=True)
class CapacityBlockOffering:
    region: str
    offering_id: str
    instance_type: str
    availability_zone: str | None
    instance_count: int
    start_date: datetime | None
    end_date: datetime | None
    duration_hours: int
    upfront_fee: Decimal
    currency: str
    tenancy: str | None
    fetched_at: datetime

    def as_item(self) -> dict[str, object]:
        """The API's item shape, for finops.commitments.advice.capacity_blocks."""
        return {
            "CapacityBlockOfferingId": self.offering_id,
            "InstanceType": self.instance_type,
            "AvailabilityZone": self.availability_zone,
            "InstanceCount": self.instance_count,
            "StartDate": self.start_date,
            "EndDate": self.end_date,
            "CapacityBlockDurationHours": self.duration_hours,
            "UpfrontFee": str(self.upfront_fee),
            "CurrencyCode": self.currency,
            "Tenancy": self.tenancy,
        }


def parse_offering(
    item: Mapping[str, Any], region: str, fetched_at: datetime
) -> CapacityBlockOffering | None:
    """One `CapacityBlockOfferings` item (boto3's parsed shape) -> an offering, or None."""
    itype, oid = item.get("InstanceType"), item.get("CapacityBlockOfferingId")
    try:
        count = int(item.get("InstanceCount") or 0)
        hours = int(item.get("CapacityBlockDurationHours") or 0)
        fee = Decimal(str(item.get("UpfrontFee")))
    except (InvalidOperation, ValueError, TypeError):
        return None
    if (
        not isinstance(itype, str)
        or not _TYPE.match(itype)
        or not isinstance(oid, str)
        or not _ID.match(oid)
        or count <= 0
        or hours <= 0
        or not fee.is_finite()
        or fee < 0
    ):
        return None
    start, end = item.get("StartDate"), item.get("EndDate")
    return CapacityBlockOffering(
        region=region,
        offering_id=oid,
        instance_type=itype,
        availability_zone=str(item.get("AvailabilityZone") or "") or None,
        instance_count=count,
        start_date=naive_utc(start) if isinstance(start, datetime) else None,
        end_date=naive_utc(end) if isinstance(end, datetime) else None,
        duration_hours=hours,
        upfront_fee=fee,
        currency=str(item.get("CurrencyCode") or "USD")[:3],
        tenancy=str(item.get("Tenancy") or "") or None,
        fetched_at=fetched_at,
    )


def fetch_offerings(
    ec2: Any,
    region: str,
    instance_types: Iterable[str],
    instance_count: int,
    duration_hours: int,
    window_days: int | None = None,
) -> list[CapacityBlockOffering]:
    """The offerings of each instance type for `instance_count` instances over `duration_hours`
    (one paginated call per type; the region is the client's). Describe only."""
    now = utcnow()
    out: list[CapacityBlockOffering] = []
    for itype in sorted(set(instance_types)):
        if not _TYPE.match(itype):
            raise ValueError(f"not an AWS instance type: {itype!r}")
        kwargs: dict[str, Any] = {
            "InstanceType": itype,
            "InstanceCount": instance_count,
            "CapacityDurationHours": duration_hours,
        }
        if window_days:
            kwargs["StartDateRange"] = now
            kwargs["EndDateRange"] = now + timedelta(days=window_days)
        for page in ec2.get_paginator("describe_capacity_block_offerings").paginate(**kwargs):
            for item in page.get("CapacityBlockOfferings", []):
                o = parse_offering(item, region, now)
                if o is None:
                    log.warning("skipping malformed Capacity Block offering in %s: %r", region, item)
                else:
                    out.append(o)
    return out

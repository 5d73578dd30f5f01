"""Deterministic Lambda Cloud sample: true instance lifetimes, the API responses our polls
would see (real /api/v1/instances and /api/v1/instance-types shapes), and expected totals.

A poll schedule with an outage is part of the sample so tests see the gap rule at work.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

INSTANCE_TYPES: dict[str, dict[str, Any]] = {
    "gpu_1x_a100_sxm4": {
        "description": "1x A100 (40 GB SXM4)",
        "gpu_description": "A100 (40 GB SXM4)",
        "price_cents_per_hour": 129,
        "specs": {"vcpus": 30, "memory_gib": 200, "storage_gib": 512, "gpus": 1},
    },
    "gpu_8x_h100_sxm5": {
        "description": "8x H100 (80 GB SXM5)",
        "gpu_description": "H100 (80 GB SXM5)",
        "price_cents_per_hour": 2392,
        "specs": {"vcpus": 208, "memory_gib": 1800, "storage_gib": 22528, "gpus": 8},
    },
    "gpu_1x_a10": {
        "description": "1x A10 (24 GB PCIe)",
        "gpu_description": "A10 (24 GB PCIe)",
        "price_cents_per_hour": 75,
        "specs": {"vcpus": 30, "memory_gib": 200, "storage_gib": 1400, "gpus": 1},
    },
}
REGIONS = {"us-east-1": "Virginia, USA", "us-west-1": "California, USA"}


def instance_types_response() -> dict[str, Any]:
    return {
        "data": {
            name: {
                "instance_type": {"name": name, **spec},
                "regions_with_capacity_available": [
                    {"name": r, "description": d} for r, d in REGIONS.items()
                ],
            }
            for name, spec in INSTANCE_TYPES.items()
        }
    }


def instance_json(iid: str, name: str, itype: str, region: str, status: str) -> dict[str, Any]:
    return {
        "id": iid,
        "name": name,
        "ip": "203.0.113.10",
        "private_ip": "10.0.0.10",
        "status": status,
        "ssh_key_names": ["ops"],
        "file_system_names": [],
        "hostname": f"{iid[:8]}.cloud.lambdalabs.com",
        "region": {"name": region, "description": REGIONS[region]},
        "instance_type": {"name": itype, **INSTANCE_TYPES[itype]},
        "is_reserved": False,
    }


@dataclass
class TrueInstance:
    iid: str
    name: str
    itype: str
    region: str
    booted: datetime  # becomes active
    terminated: datetime | None  # gone from the API after this


@dataclass
class LambdaSample:
    period: str
    instances: list[TrueInstance]
    polls: list[datetime]
    responses: list[dict[str, Any]] = field(default_factory=list)  # one /instances body per poll

    def response_at(self, t: datetime) -> dict[str, Any]:
        data = []
        for i in self.instances:
            if t < i.booted - timedelta(minutes=5):
                continue
            if i.terminated is not None and t >= i.terminated + timedelta(minutes=10):
                continue  # no longer listed
            if t < i.booted:
                status = "booting"
            elif i.terminated is not None and t >= i.terminated:
                status = "terminated"
            else:
                status = "active"
            data.append(instance_json(i.iid, i.name, i.itype, i.region, status))
        return {"data": data}


def generate(period: str = "2026-10") -> LambdaSample:
    y, m = (int(x) for x in period.split("-"))
    t0 = datetime(y, m, 1, tzinfo=UTC)
    inst = [
        TrueInstance(
            "0920582c7ff041399e34823a0be62549",
            "train-llm",
            "gpu_8x_h100_sxm5",
            "us-east-1",
            t0 + timedelta(hours=2, minutes=3),
            t0 + timedelta(hours=9, minutes=47),
        ),
        TrueInstance(
            "1a2b3c4d5e6f47089abc0123456789ab",
            "notebook",
            "gpu_1x_a10",
            "us-west-1",
            t0 + timedelta(hours=1, minutes=30),
            None,
        ),
        TrueInstance(
            "ffeeddccbbaa49988776655443322110",
            "eval",
            "gpu_1x_a100_sxm4",
            "us-east-1",
            t0 + timedelta(hours=11, minutes=20),
            t0 + timedelta(hours=13, minutes=5),
        ),
    ]
    # polls every 30 min for 16 h, with an outage between 05:00 and 08:00
    polls = [t0 + timedelta(minutes=30 * k) for k in range(33) if not (10 <= k < 16)]
    s = LambdaSample(period, inst, polls)
    s.responses = [s.response_at(t) for t in polls]
    return s


def expected_total(intervals: list[tuple[datetime, datetime, int]]) -> Decimal:
    """Σ round(whole minutes x cents/6000, 10): what the converter must reproduce exactly."""
    total = Decimal(0)
    for start, end, cents in intervals:
        m0 = int(start.timestamp() // 60)
        m1 = int(end.timestamp() // 60)
        if m1 > m0:
            total += (Decimal(m1 - m0) * Decimal(cents) / Decimal(6000)).quantize(
                Decimal("1e-10"), ROUND_HALF_UP
            )
    return total

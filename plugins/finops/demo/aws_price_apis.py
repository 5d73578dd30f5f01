"""A local fake of AWS's price APIs, speaking their wire shapes, for the demo's price stage and
the prices tests (tests/prices/test_commit_rates.py):

- Pricing `GetProducts` (JSON 1.1, `X-Amz-Target: AWSPriceListService.GetProducts`): one
  PriceList entry per instance type with its OnDemand term and its Reserved terms (real offer
  term codes; a convertible one the fetchers must skip);
- Savings Plans `DescribeSavingsPlansOfferingRates` (REST-JSON, `nextToken` paging), Compute
  plans plus an EC2 Instance plan and a dedicated-tenancy rate the fetchers must skip;
- EC2 `DescribeCapacityBlockOfferings` and, when `spot_history` is on, `DescribeSpotPriceHistory`
  (Query API XML); every other EC2 action is handed to a moto server.

Moto serves neither the Pricing nor the Savings Plans API, has no DescribeCapacityBlockOfferings,
and its spot history is one placeholder price dated 2006. The prices here are synthetic round
numbers (tests check each discount by hand), not AWS's.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs

from werkzeug import Request, Response

from finops.demo.emulators import airflow_connection

# Real offer term codes of standard / convertible RIs (the convertible one must be ignored).
RI_TERMS = {
    # code: (LeaseContractLength, OfferingClass, PurchaseOption)
    "4NA7Y494T4": ("1yr", "standard", "No Upfront"),
    "HU7G6KETJZ": ("1yr", "standard", "Partial Upfront"),
    "6QCMYABX3D": ("1yr", "standard", "All Upfront"),
    "BPH4J8HBKS": ("3yr", "standard", "No Upfront"),
    "38NPMPTW36": ("3yr", "standard", "Partial Upfront"),
    "NQ3QZPMQV9": ("3yr", "standard", "All Upfront"),
    "7NE97W5U4E": ("1yr", "convertible", "No Upfront"),
}
# p5.48xlarge, on demand 50.00: (upfront, hourly) per code. Effective hourly and discount:
# 1y NU 35.00 (30 %), 1y PU 140,160 / 8760 + 17 = 33 (34 %), 1y AU 280,320 / 8760 = 32 (36 %),
# 3y NU 28 (44 %), 3y PU 315,360 / 26,280 + 14 = 26 (48 %), 3y AU 657,000 / 26,280 = 25 (50 %).
P5_RI = {
    "4NA7Y494T4": ("0", "35.00"),
    "HU7G6KETJZ": ("140160", "17.00"),
    "6QCMYABX3D": ("280320", "0.00"),
    "BPH4J8HBKS": ("0", "28.00"),
    "38NPMPTW36": ("315360", "14.00"),
    "NQ3QZPMQV9": ("657000", "0.00"),
    "7NE97W5U4E": ("0", "30.00"),
}
# p4d.24xlarge, on demand 32.77: 1y NU 21.3005 -> 35 % off; nothing else offered
P4D_RI = {"4NA7Y494T4": ("0", "21.3005")}
# g5.2xlarge, on demand 1.212: 1y NU 0.7636 (37 %), 1y AU 6,370.272 / 8760 = 0.7272 (40 %),
# 3y NU 0.5454 (55 %), 3y AU 12,742.776 / 26,280 = 0.4849 (60 %, rounded)
G5_RI = {
    "4NA7Y494T4": ("0", "0.7636"),
    "6QCMYABX3D": ("6370.272", "0.00"),
    "BPH4J8HBKS": ("0", "0.5454"),
    "NQ3QZPMQV9": ("12742.776", "0.00"),
}
ON_DEMAND: dict[str, tuple[str, dict[str, tuple[str, str]]]] = {
    "p5.48xlarge": ("50.00", P5_RI),
    "p4d.24xlarge": ("32.77", P4D_RI),
    "g5.2xlarge": ("1.212", G5_RI),
}
# Compute Savings Plans rates: p5 25 / 28 / 30 % (1y NU / PU / AU), 40 / 43 / 45 % (3y); p4d 25 %
# (1y NU); g5 27 % (1y NU), 47 % (3y NU)
SP_RATES = [
    ("p5.48xlarge", 31536000, "No Upfront", "37.5"),
    ("p5.48xlarge", 31536000, "Partial Upfront", "36.0"),
    ("p5.48xlarge", 31536000, "All Upfront", "35.0"),
    ("p5.48xlarge", 94608000, "No Upfront", "30.0"),
    ("p5.48xlarge", 94608000, "Partial Upfront", "28.5"),
    ("p5.48xlarge", 94608000, "All Upfront", "27.5"),
    ("p4d.24xlarge", 31536000, "No Upfront", "24.5775"),
    ("g5.2xlarge", 31536000, "No Upfront", "0.88476"),
    ("g5.2xlarge", 94608000, "No Upfront", "0.64236"),
]
SPOT_SHARE = {"p5.48xlarge": "0.38", "p4d.24xlarge": "0.35", "g5.2xlarge": "0.41"}  # of on demand
_XMLNS = "http://ec2.amazonaws.com/doc/2016-11-15/"


def price_list_entry(itype: str, region: str = "us-east-1") -> str:
    """A get_products PriceList entry (JSON string) with its OnDemand and Reserved terms."""
    usd, ri = ON_DEMAND[itype]
    sku = "SKU" + itype.replace(".", "").upper()[:9]

    def dim(code: str, rate: str, unit: str, price: str, desc: str) -> dict:
        return {
            "unit": unit, "endRange": "Inf", "beginRange": "0", "appliesTo": [], "description": desc,
            "rateCode": f"{sku}.{code}.{rate}", "pricePerUnit": {"USD": price},
        }  # fmt: skip

    reserved = {}
    for code, (upfront, hourly) in ri.items():
        lease, cls, option = RI_TERMS[code]
        dims = {f"{sku}.{code}.6YS6EN2CT7": dim(code, "6YS6EN2CT7", "Hrs", hourly, f"{itype} reserved hour")}
        if option != "No Upfront":
            dims[f"{sku}.{code}.2TG2D8R56U"] = dim(code, "2TG2D8R56U", "Quantity", upfront, "Upfront Fee")
        reserved[f"{sku}.{code}"] = {
            "priceDimensions": dims, "sku": sku, "effectiveDate": "2025-06-01T00:00:00Z", "offerTermCode": code,
            "termAttributes": {"LeaseContractLength": lease, "OfferingClass": cls, "PurchaseOption": option},
        }  # fmt: skip
    doc = {
        "product": {
            "productFamily": "Compute Instance",
            "attributes": {
                "instanceType": itype, "regionCode": region, "operatingSystem": "Linux", "tenancy": "Shared",
                "preInstalledSw": "NA", "capacitystatus": "Used", "operation": "RunInstances",
                "usagetype": f"BoxUsage:{itype}", "servicecode": "AmazonEC2",
            },
            "sku": sku,
        },
        "serviceCode": "AmazonEC2",
        "terms": {
            "OnDemand": {
                f"{sku}.JRTCKXETXF": {
                    "priceDimensions": {
                        f"{sku}.JRTCKXETXF.6YS6EN2CT7": dim("JRTCKXETXF", "6YS6EN2CT7", "Hrs", usd, "On Demand")
                    },
                    "sku": sku, "effectiveDate": "2025-06-01T00:00:00Z", "offerTermCode": "JRTCKXETXF",
                    "termAttributes": {},
                }
            },
            "Reserved": reserved,
        },
        "version": "20251101000000",
        "publicationDate": "2025-11-01T00:00:00Z",
    }  # fmt: skip
    return json.dumps(doc)


def sp_result(
    itype: str, seconds: int, option: str, rate: str, plan: str = "Compute", tenancy: str = "shared"
) -> dict:
    """One `searchResults` item of DescribeSavingsPlansOfferingRates."""
    return {
        "savingsPlanOffering": {
            "offeringId": f"{abs(hash((itype, seconds, option, plan))) % 10**8:08d}-0000-4000-8000-000000000000",
            "paymentOption": option, "planType": plan, "durationSeconds": seconds, "currency": "USD",
            "planDescription": f"{seconds // 31536000} year {option} {plan} Savings Plan",
        },
        "rate": rate, "unit": "Hrs", "productType": "EC2", "serviceCode": "AmazonEC2",
        "usageType": f"USE1-BoxUsage:{itype}", "operation": "RunInstances",
        "properties": [
            {"name": "region", "value": "us-east-1"}, {"name": "instanceType", "value": itype},
            {"name": "instanceFamily", "value": itype.split(".")[0]}, {"name": "productDescription", "value": "Linux/UNIX"},
            {"name": "tenancy", "value": tenancy},
        ],
    }  # fmt: skip


def _xml(action: str, body: str) -> str:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<{action}Response xmlns="{_XMLNS}">'
        f"<requestId>9f7a1c2e-0000-4000-8000-000000000001</requestId>{body}</{action}Response>"
    )


def _items(items: list[dict]) -> str:
    return "".join("<item>" + "".join(f"<{k}>{v}</{k}>" for k, v in i.items()) + "</item>" for i in items)


def capacity_block_xml(items: list[dict], token: str | None = None) -> str:
    nxt = f"<nextToken>{token}</nextToken>" if token else ""
    return _xml(
        "DescribeCapacityBlockOfferings",
        f"<capacityBlockOfferingSet>{_items(items)}</capacityBlockOfferingSet>{nxt}",
    )


def block(
    oid: str,
    fee: str,
    day: int,
    az: str = "us-east-1a",
    hours: int = 24,
    count: int = 1,
    start: datetime | None = None,
) -> dict:
    """One CapacityBlockOffering item as the Query API's XML names its fields (starting on
    2026-12-`day` 11:30 UTC, or at `start`)."""
    begin = start or datetime(2026, 12, day, 11, 30, tzinfo=UTC)
    end = begin + timedelta(hours=hours)
    return {
        "capacityBlockOfferingId": oid, "instanceType": "p5.48xlarge", "availabilityZone": az,
        "instanceCount": count, "startDate": begin.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "endDate": end.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "capacityBlockDurationHours": hours,
        "upfrontFee": fee, "currencyCode": "USD", "tenancy": "default",
    }  # fmt: skip


def spot_history(itype: str, region: str, start: datetime, now: datetime) -> list[dict]:
    """Six-hourly points since `start` (at most 7 days) in two zones of `region`, moving a few
    per cent around SPOT_SHARE of on demand, as DescribeSpotPriceHistory's XML names them."""
    from decimal import Decimal

    od, share = Decimal(ON_DEMAND[itype][0]), Decimal(SPOT_SHARE[itype])
    t = max(start, now - timedelta(days=7)).replace(minute=0, second=0, microsecond=0)
    out = []
    k = 0
    while t <= now:
        for z, zone in enumerate(("a", "b")):
            wiggle = Decimal(1) + Decimal((k * 7 + z * 3) % 9 - 4) / 100
            out.append(
                {
                    "instanceType": itype,
                    "productDescription": "Linux/UNIX",
                    "spotPrice": f"{(od * share * wiggle).quantize(Decimal('0.000001'))}",
                    "timestamp": t.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                    "availabilityZone": f"{region}{zone}",
                }
            )
        t += timedelta(hours=6)
        k += 1
    return out


class AwsPriceApis:
    """The fake on a pytest_httpserver.HTTPServer; `moto` is the moto server that answers every
    other EC2 action. `calls` records (action, parameters) of what it served itself."""

    def __init__(self, server: Any, moto: str, region: str = "us-east-1", spot: bool = False) -> None:
        self.server, self.moto, self.region, self.spot = server, moto, region, spot
        self.calls: list[tuple[str, dict]] = []
        self.sp_results = [sp_result(*r) for r in SP_RATES] + [
            sp_result("p5.48xlarge", 31536000, "No Upfront", "20.0", plan="EC2Instance"),  # not Compute
            sp_result("p5.48xlarge", 31536000, "No Upfront", "1.0", tenancy="dedicated"),
        ]
        self.blocks: list[dict] = []
        self.refuse_sp = False
        server.expect_request("/DescribeSavingsPlansOfferingRates").respond_with_handler(self._sp)
        server.expect_request("/").respond_with_handler(self._root)

    @property
    def url(self) -> str:
        return str(self.server.url_for("/")).rstrip("/")

    def client(self, service: str, region: str = "us-east-1") -> Any:
        import boto3

        return boto3.client(
            service,
            region_name=region,
            endpoint_url=self.url,
            aws_access_key_id="test",
            aws_secret_access_key="test",
        )

    def _root(self, req: Request) -> Response:
        target = req.headers.get("X-Amz-Target", "")
        if target == "AWSPriceListService.GetProducts":
            body = json.loads(req.get_data())
            self.calls.append(("GetProducts", body))
            itype = next(f["Value"] for f in body["Filters"] if f["Field"] == "instanceType")
            region = next(f["Value"] for f in body["Filters"] if f["Field"] == "regionCode")
            docs = [price_list_entry(itype, region)] if itype in ON_DEMAND else []
            out = {"FormatVersion": "aws_v1", "PriceList": docs}
            return Response(json.dumps(out), 200, content_type="application/x-amz-json-1.1")
        form = parse_qs(req.get_data(as_text=True))
        action = form.get("Action", [""])[0]
        if action == "DescribeCapacityBlockOfferings":
            self.calls.append((action, {k: v[0] for k, v in form.items()}))
            want = form["InstanceType"][0]
            token = form.get("NextToken", [""])[0]
            items = [b for b in self.blocks if b["instanceType"] == want]
            page, rest = (items[:2], "page-2") if not token else (items[2:], None)
            return Response(
                capacity_block_xml(page, rest if len(items) > 2 else None), 200, content_type="text/xml"
            )
        if action == "DescribeSpotPriceHistory" and self.spot:
            return self._spot_history(form)
        self.calls.append((action, {}))
        return self._forward(req)

    def _spot_history(self, form: dict[str, list[str]]) -> Response:
        params = {k: v[0] for k, v in form.items()}
        self.calls.append(("DescribeSpotPriceHistory", params))
        patterns = [v for k, v in params.items() if k.startswith("Filter.1.Value.")]
        start = datetime.fromisoformat(params.get("StartTime", "2026-01-01T00:00:00").replace("Z", "+00:00"))
        start = start if start.tzinfo else start.replace(tzinfo=UTC)
        now = datetime.now(UTC)
        items = [
            p
            for itype in sorted(ON_DEMAND)
            if any(itype == pat or (pat.endswith(".*") and itype.startswith(pat[:-1])) for pat in patterns)
            for p in spot_history(itype, self.region, start, now)
        ]
        body = f"<spotPriceHistorySet>{_items(items)}</spotPriceHistorySet><nextToken/>"
        return Response(_xml("DescribeSpotPriceHistory", body), 200, content_type="text/xml")

    def _forward(self, req: Request) -> Response:
        import requests

        fwd = requests.post(
            self.moto + "/",
            data=req.get_data(),
            headers={k: v for k, v in req.headers.items() if k.lower() not in ("host", "content-length")},
            timeout=60,
        )
        return Response(fwd.content, fwd.status_code, content_type=fwd.headers.get("Content-Type"))

    def _sp(self, req: Request) -> Response:
        body = json.loads(req.get_data())
        self.calls.append(("DescribeSavingsPlansOfferingRates", body))
        if self.refuse_sp:
            err = {
                "message": "User is not authorized to perform: savingsplans:DescribeSavingsPlansOfferingRates"
            }
            return Response(
                json.dumps(err),
                403,
                content_type="application/json",
                headers={"x-amzn-ErrorType": "AccessDeniedException"},
            )
        filters = {f["name"]: set(f["values"]) for f in body.get("filters", [])}
        rows = [
            r
            for r in self.sp_results
            if r["savingsPlanOffering"]["planType"] in body.get("savingsPlanTypes", ["Compute"])
            and all(p["value"] in filters[p["name"]] for p in r["properties"] if p["name"] in filters)
        ]
        start = int(body.get("nextToken") or 0)
        page = rows[start : start + 4]
        out = {"searchResults": page, "nextToken": str(start + 4) if start + 4 < len(rows) else None}
        return Response(json.dumps(out), 200, content_type="application/json")


def aws_connection(endpoint: str) -> dict[str, Any]:
    """An AWS connection whose every client (EC2, Pricing, Savings Plans) goes to `endpoint`."""
    return {
        "conn_type": "aws",
        "login": "test",
        "password": "test",
        "extra": {"endpoint_url": endpoint, "region_name": "us-east-1"},
    }


@contextlib.contextmanager
def aws_price_apis(moto: str, conn_id: str | None = None) -> Iterator[AwsPriceApis]:
    """The fake on a free loopback port, with spot history and two Capacity Block offerings
    for p5.48xlarge starting 3 and 10 days from now; `AIRFLOW_CONN_<conn_id>` points at it."""
    from pytest_httpserver import HTTPServer

    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    try:
        apis = AwsPriceApis(server, moto, spot=True)
        day = datetime.now(UTC).replace(hour=11, minute=30, second=0, microsecond=0)
        apis.blocks = [
            block("cb-demo-0001", "733.44", 0, start=day + timedelta(days=3)),
            block("cb-demo-0002", "1320.00", 0, az="us-east-1b", start=day + timedelta(days=10)),
        ]
        with airflow_connection(conn_id, aws_connection(apis.url)):
            yield apis
    finally:
        server.clear()
        if server.is_running():
            server.stop()

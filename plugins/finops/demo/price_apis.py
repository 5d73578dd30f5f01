"""Local fakes of the public price APIs, speaking their documented shapes, for the demo's
price history stage and the prices tests (tests/fixtures/prices.py):

- Azure Retail Prices API (`/api/retail/prices`, OData `$filter` on armRegionName, `$skip`
  paging via an absolute NextPageLink; the last page's link is null or "");
- Cloud Billing Catalog for Compute Engine (`/v1/services/6F81-5844-456A/skus`, `nextPageToken`);
- Compute Engine `aggregated/machineTypes` and `aggregated/acceleratorTypes` (the GPU catalog's
  specs and zones; Azure Resource SKUs need an Azure AD token, which no local fake can issue
  to azure-identity, so the demo's Azure specs come from the static table).

Each has `.fail(status, retry_after=None)` to inject failures before the next answers, and
`.requests` (the paths + queries it served). The catalogs include the odd entries the real
APIs serve (other OS / reservation / dev-test rows, hostile and malformed strings), which the
price fetchers must skip. They are served by pytest-httpserver (a werkzeug server that runs
outside pytest too). Lambda Cloud's price list is `/api/v1/instance-types` of the Lambda API
fake in finops.demo.emulators.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, ClassVar
from urllib.parse import urlencode, urlsplit

from werkzeug import Request, Response

from finops.demo.emulators import airflow_connection


@dataclass
class PriceApiEmulator:
    """Base of the price API fakes: `server` is a pytest_httpserver.HTTPServer (started by
    `price_apis()` in the demo, by the `httpserver` fixture in tests)."""

    server: Any
    path: ClassVar[str]
    failures: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return self.server.url_for("").rstrip("/")

    def fail(self, status: int, retry_after: str | None = None, times: int = 1) -> None:
        for _ in range(times):
            self.failures.append((status, {"Retry-After": retry_after} if retry_after else {}))

    def handle(self, req: Request) -> Response:
        raise NotImplementedError

    def rewrite(self, edit: Callable[[bytes], bytes]) -> None:
        """From now on serve every answer with its body passed through `edit` (a broken or hostile server)."""

        def edited(req: Request) -> Response:
            resp = self.handle(req)
            return Response(edit(resp.get_data()), resp.status_code, content_type="application/json")

        self.server.clear()
        self.server.expect_request(self.path).respond_with_handler(edited)

    def _failure(self) -> Response | None:
        if self.failures:
            status, headers = self.failures.pop(0)
            return Response(
                json.dumps({"error": {"code": str(status), "message": "injected"}}),
                status,
                headers,
                content_type="application/json",
            )
        return None


# --------------------------------------------------------------------------- Azure Retail Prices


def prices_azure_item(
    arm_sku: str | None, sku_name: str, price: float | str, region: str = "eastus", **over: Any
) -> dict:
    """One Retail Prices API item; a None SKU or a string price is a malformed value to skip."""
    series = re.sub(r"^Standard_", "", str(arm_sku)).replace("_", "")
    item = {
        "currencyCode": "USD",
        "tierMinimumUnits": 0.0,
        "retailPrice": price,
        "unitPrice": price,
        "armRegionName": region,
        "location": {"eastus": "US East", "westus2": "US West 2"}.get(region, region),
        "effectiveStartDate": "2024-05-01T00:00:00Z",
        "meterId": "5f1b1a36-8a0b-5c3e-9a57-"
        + hashlib.md5(f"{arm_sku}|{sku_name}|{region}".encode()).hexdigest()[:12],
        "meterName": sku_name,
        "productId": "DZH318Z08M9Z",
        "skuId": "DZH318Z08M9Z/00F4",
        "availabilityId": None,
        "productName": f"Virtual Machines {series} Series",
        "skuName": sku_name,
        "serviceName": "Virtual Machines",
        "serviceId": "DZH313Z7MMC8",
        "serviceFamily": "Compute",
        "unitOfMeasure": "1 Hour",
        "type": "Consumption",
        "isPrimaryMeterRegion": True,
        "armSkuName": arm_sku,
    }
    item.update(over)
    return item


def _savings_plan(on_demand: float, one_year: str, three_years: str) -> list[dict]:
    """A Consumption item's savingsPlan array: hourly prices per term, as the API lists them."""
    one = float(Decimal(str(on_demand)) * Decimal(one_year))
    three = float(Decimal(str(on_demand)) * Decimal(three_years))
    return [
        {"unitPrice": three, "retailPrice": three, "term": "3 Years"},
        {"unitPrice": one, "retailPrice": one, "term": "1 Year"},
    ]


def prices_azure_catalog() -> list[dict]:
    """Realistic Retail Prices items for two regions, with the rows that must be dropped."""
    items = []
    for region, f in (("eastus", 1.0), ("westus2", 1.1)):
        items += [
            # savingsPlan (hourly, api-version 2023-01-01-preview): 25 % / 45 % off on demand
            prices_azure_item(
                "Standard_NC24ads_A100_v4",
                "NC24ads A100 v4",
                round(3.673 * f, 4),
                region,
                savingsPlan=_savings_plan(round(3.673 * f, 4), "0.75", "0.55"),
            ),
            prices_azure_item(
                "Standard_NC24ads_A100_v4", "NC24ads A100 v4 Spot", round(0.7346 * f, 4), region
            ),
            prices_azure_item(
                "Standard_NC24ads_A100_v4", "NC24ads A100 v4 Low Priority", round(0.7346 * f, 4), region
            ),
            prices_azure_item(
                "Standard_NC24ads_A100_v4",
                "NC24ads A100 v4",
                round(5.145 * f, 4),
                region,
                productName="Virtual Machines NCadsA100v4 Series Windows",
            ),
            # reservations: unitPrice is the whole term's (40 % / 60 % off on demand)
            prices_azure_item(
                "Standard_NC24ads_A100_v4",
                "NC24ads A100 v4",
                round(19305.288 * f, 4),
                region,
                type="Reservation",
                reservationTerm="1 Year",
                unitOfMeasure="1 Hour",
            ),
            prices_azure_item(
                "Standard_NC24ads_A100_v4",
                "NC24ads A100 v4",
                round(38610.576 * f, 4),
                region,
                type="Reservation",
                reservationTerm="3 Years",
                unitOfMeasure="1 Hour",
            ),
            prices_azure_item(
                "Standard_NC24ads_A100_v4",
                "NC24ads A100 v4",
                round(3.2 * f, 4),
                region,
                type="DevTestConsumption",
            ),
            prices_azure_item(
                "Standard_ND96isr_H100_v5",
                "ND96isr H100 v5",
                round(98.32 * f, 4),
                region,
                savingsPlan=_savings_plan(round(98.32 * f, 4), "0.8", "0.6"),
            ),
            prices_azure_item(
                "Standard_ND96isr_H100_v5", "ND96isr H100 v5 Spot", round(39.33 * f, 4), region
            ),
            prices_azure_item("Standard_NC4as_T4_v3", "NC4as T4 v3", round(0.526 * f, 4), region),
            prices_azure_item("Standard_NC4as_T4_v3", "NC4as T4 v3 Spot", round(0.0526 * f, 4), region),
            prices_azure_item("Standard_D2s_v5", "D2s v5", round(0.096 * f, 4), region),  # not a GPU family
        ]
    # hostile / unknown strings: must be skipped, never reach SQL or crash the parse
    items += [
        prices_azure_item("Standard_NC'; DROP TABLE spot_prices;--", "NC evil", 1.0),
        prices_azure_item("Standard_NC<script>alert(1)</script>", "NC xss Spot", 1.0),
        prices_azure_item("Standard_NC6_Promo", "NC6 Promo", "NaN"),
        prices_azure_item("Standard_NC6_Neg", "NC6 Neg", -3),
        prices_azure_item("Standard_NC12_Unit", "NC12", 1.0, unitOfMeasure="1/Month"),
        prices_azure_item("Standard_NC40ads_H100_v5", "NC40ads H100 v5", "1e999"),
        prices_azure_item(None, "NC null sku", 1.0),
        prices_azure_item("Standard_NC40ads_H100_v5", "NC40ads H100 v5", 6.98, armRegionName="east us; drop"),
    ]
    return items


@dataclass
class AzureRetailEmulator(PriceApiEmulator):
    path: ClassVar[str] = "/api/retail/prices"
    items: list[dict] = field(default_factory=list)
    page_size: int = 4
    last_link: str | None = None  # the real API ends with NextPageLink null; "" is the quirk
    trailing_empty_page: bool = False

    def handle(self, req: Request) -> Response:
        self.requests.append(req.full_path)
        if (r := self._failure()) is not None:
            return r
        flt = req.args.get("$filter", "")
        m = re.search(r"armRegionName eq '([^']*)'", flt)
        rows = [i for i in self.items if not m or i.get("armRegionName") == m.group(1)]
        if t := re.search(r"priceType eq '([^']*)'", flt):
            rows = [i for i in rows if i.get("type") == t.group(1)]
        skip = int(req.args.get("$skip", "0"))
        page = rows[skip : skip + self.page_size]
        nxt = skip + self.page_size
        if nxt < len(rows) or (self.trailing_empty_page and page):
            q = urlencode({"api-version": req.args.get("api-version", ""), "$filter": flt, "$skip": nxt})
            link: str | None = f"{self.base}/api/retail/prices?{q}"
        else:
            link = self.last_link
        body = {
            "BillingCurrency": "USD",
            "CustomerEntityId": "Default",
            "CustomerEntityType": "Retail",
            "Items": page,
            "NextPageLink": link,
            "Count": len(page),
        }
        return Response(json.dumps(body), 200, content_type="application/json")


# --------------------------------------------------------------------------- GCP Billing Catalog


def prices_gcp_sku(
    description: str,
    group: str,
    usage: str,
    units: int,
    nanos: int,
    unit: str = "h",
    regions: tuple[str, ...] = ("us-central1", "us-east4"),
    sku_id: str | None = None,
    family: str = "Compute",
) -> dict:
    h = hashlib.md5((description + usage).encode()).hexdigest().upper()
    sku_id = sku_id or f"{h[:4]}-{h[4:8]}-{h[8:12]}"
    return {
        "name": f"services/6F81-5844-456A/skus/{sku_id}",
        "skuId": sku_id,
        "description": description,
        "category": {
            "serviceDisplayName": "Compute Engine",
            "resourceFamily": family,
            "resourceGroup": group,
            "usageType": usage,
        },
        "serviceRegions": list(regions),
        "pricingInfo": [
            {
                "summary": "",
                "pricingExpression": {
                    "usageUnit": unit,
                    "displayQuantity": 1,
                    "tieredRates": [
                        {
                            "startUsageAmount": 0,
                            "unitPrice": {"currencyCode": "USD", "units": str(units), "nanos": nanos},
                        }
                    ],
                    "usageUnitDescription": "hour" if unit == "h" else "gibibyte hour",
                    "baseUnit": "s" if unit == "h" else "By.s",
                    "baseUnitDescription": "second",
                    "baseUnitConversionFactor": 3600 if unit == "h" else 3865470566400,
                },
                "currencyConversionRate": 1,
                "effectiveTime": "2024-10-01T07:00:00.000Z",
            }
        ],
        "serviceProviderName": "Google",
        "geoTaxonomy": {"type": "MULTI_REGIONAL", "regions": list(regions)},
    }


def prices_gcp_catalog() -> list[dict]:
    s = prices_gcp_sku
    return [
        s("G2 Instance Core running in Americas", "CPU", "OnDemand", 0, 24988000),
        s("G2 Instance Ram running in Americas", "RAM", "OnDemand", 0, 2928000, unit="GiBy.h"),
        s("Nvidia L4 GPU running in Americas", "GPU", "OnDemand", 0, 560000000),
        s("Spot Preemptible G2 Instance Core running in Americas", "CPU", "Preemptible", 0, 9995000),
        s(
            "Spot Preemptible G2 Instance Ram running in Americas",
            "RAM",
            "Preemptible",
            0,
            1171000,
            unit="GiBy.h",
        ),
        s(
            "Nvidia L4 GPU attached to Spot Preemptible VMs running in Americas",
            "GPU",
            "Preemptible",
            0,
            224000000,
        ),
        s("A2 Instance Core running in Americas", "CPU", "OnDemand", 0, 31611000),
        s("A2 Instance Ram running in Americas", "RAM", "OnDemand", 0, 4237000, unit="GiBy.h"),
        s("Nvidia Tesla A100 GPU running in Americas", "GPU", "OnDemand", 2, 933908000),
        s("Nvidia Tesla A100 80GB GPU running in Americas", "GPU", "OnDemand", 3, 927500000),
        s("Spot Preemptible A2 Instance Core running in Americas", "CPU", "Preemptible", 0, 9483000),
        s(
            "Spot Preemptible A2 Instance Ram running in Americas",
            "RAM",
            "Preemptible",
            0,
            1271000,
            unit="GiBy.h",
        ),
        s(
            "Nvidia Tesla A100 GPU attached to Spot Preemptible VMs running in Americas",
            "GPU",
            "Preemptible",
            1,
            173000000,
        ),
        # only in us-central1: a GPU region list narrower than the machine's
        s("Nvidia H100 80GB GPU running in Iowa", "GPU", "OnDemand", 11, 61000000, regions=("us-central1",)),
        s("A3 Instance Core running in Americas", "CPU", "OnDemand", 0, 29563000),
        s("A3 Instance Ram running in Americas", "RAM", "OnDemand", 0, 2571000, unit="GiBy.h"),
        # must be ignored
        s("Commitment v1: G2 Cpu in Americas for 1 Year", "CPU", "Commit1Yr", 0, 15743000),
        s(
            "Licensing Fee for Windows Server on VM with 1 to 2 VCPU",
            "SQL",
            "OnDemand",
            0,
            46000000,
            family="License",
        ),
        s("Nvidia Quantum Flux GPU running in Americas", "GPU", "OnDemand", 9, 0),
        s("Nvidia L4 GPU running in Americas'; DROP TABLE x;--", "GPU", "OnDemand", 0, 1),
        s("G2 Instance Core running in Narnia", "CPU", "OnDemand", 0, 5000000000),  # nanos out of range
        s("G2 Instance Ram running in Americas", "RAM", "OnDemand", 0, 1, unit="GiBy.mo"),  # wrong unit
        {"skuId": "BROKEN", "description": 42, "category": "nope"},
    ]


def prices_gcp_commit_skus() -> list[dict]:
    """Resource-CUD SKUs (Commit1Yr / Commit3Yr) beside prices_gcp_catalog's on-demand ones:
    37 % (1 year) and 55 % (3 years) off for the L4 and A100 GPUs, near that for cores and RAM.
    (The catalog's own "Commitment v1: G2 Cpu ... 1 Year" completes the G2 1-year set.)"""
    s = prices_gcp_sku
    gib = "GiBy.h"
    return [
        s("Commitment v1: G2 Ram in Americas for 1 Year", "RAM", "Commit1Yr", 0, 1845000, unit=gib),
        s("Commitment v1: Nvidia L4 GPU in Americas for 1 Year", "GPU", "Commit1Yr", 0, 352800000),
        s("Commitment v1: G2 Cpu in Americas for 3 Year", "CPU", "Commit3Yr", 0, 11245000),
        s("Commitment v1: G2 Ram in Americas for 3 Year", "RAM", "Commit3Yr", 0, 1318000, unit=gib),
        s("Commitment v1: Nvidia L4 GPU in Americas for 3 Year", "GPU", "Commit3Yr", 0, 252000000),
        s("Commitment v1: A2 Cpu in Americas for 1 Year", "CPU", "Commit1Yr", 0, 19915000),
        s("Commitment v1: A2 Ram in Americas for 1 Year", "RAM", "Commit1Yr", 0, 2669000, unit=gib),
        s("Commitment v1: A100 GPU in Americas for 1 Year", "GPU", "Commit1Yr", 1, 848362000),
        s("Commitment v1: A2 Cpu in Americas for 3 Year", "CPU", "Commit3Yr", 0, 14225000),
        s("Commitment v1: A2 Ram in Americas for 3 Year", "RAM", "Commit3Yr", 0, 1907000, unit=gib),
        s("Commitment v1: A100 GPU in Americas for 3 Year", "GPU", "Commit3Yr", 1, 320258000),
    ]


@dataclass
class GcpCatalogEmulator(PriceApiEmulator):
    path: ClassVar[str] = "/v1/services/6F81-5844-456A/skus"
    skus: list[dict] = field(default_factory=list)
    page_size: int = 5
    api_key: str | None = None

    def handle(self, req: Request) -> Response:
        self.requests.append(req.full_path)
        if (r := self._failure()) is not None:
            return r
        if self.api_key and req.headers.get("X-Goog-Api-Key") != self.api_key:
            return Response(
                json.dumps(
                    {
                        "error": {
                            "code": 403,
                            "message": "The request is missing a valid API key.",
                            "status": "PERMISSION_DENIED",
                        }
                    }
                ),
                403,
                content_type="application/json",
            )
        token = req.args.get("pageToken", "")
        start = int(token.removeprefix("tok-")) if token else 0
        page = self.skus[start : start + self.page_size]
        nxt = start + self.page_size
        body = {"skus": page, "nextPageToken": f"tok-{nxt}" if nxt < len(self.skus) else ""}
        return Response(json.dumps(body), 200, content_type="application/json")


# --------------------------------------------------------------------------- GCP Compute (specs)
DEMO_GCP_PROJECT = "finops-demo"
# accelerator type -> its acceleratorTypes description (https://cloud.google.com/compute/docs/gpus)
_GCP_ACCELERATORS = {
    "nvidia-l4": "NVIDIA L4",
    "nvidia-tesla-a100": "NVIDIA A100 40GB",
    "nvidia-a100-80gb": "NVIDIA A100 80GB",
    "nvidia-h100-80gb": "NVIDIA H100 80GB",
    "nvidia-h100-mega-80gb": "NVIDIA H100 80GB MEGA",
}
# (machine type, vCPUs, memory GB, accelerator type, count, zones): the shapes of the GPU machine
# types documentation; a3-megagpu-8g is one the static table does not know
_GCP_MACHINE_TYPES = [
    ("g2-standard-4", 4, 16, "nvidia-l4", 1, ("us-central1-a", "us-east4-a")),
    ("g2-standard-24", 24, 96, "nvidia-l4", 2, ("us-central1-a", "us-east4-a")),
    ("a2-highgpu-1g", 12, 85, "nvidia-tesla-a100", 1, ("us-central1-a", "us-east4-b")),
    ("a2-ultragpu-1g", 12, 170, "nvidia-a100-80gb", 1, ("us-central1-a",)),
    ("a3-highgpu-8g", 208, 1872, "nvidia-h100-80gb", 8, ("us-central1-a", "us-east4-a")),
    ("a3-megagpu-8g", 208, 1872, "nvidia-h100-mega-80gb", 8, ("us-central1-a",)),
    ("n2-standard-4", 4, 16, None, 0, ("us-central1-a", "us-east4-a")),  # no GPU: not in the catalog
]


def gcp_machine_types(project: str = DEMO_GCP_PROJECT) -> list[dict]:
    """`aggregated/machineTypes` pages (one zone per page, linked by nextPageToken), in the
    documented shape: `items` maps `zones/<zone>` to `{machineTypes: [...]}`."""
    zones = sorted({z for *_, zs in _GCP_MACHINE_TYPES for z in zs})
    pages = []
    for i, zone in enumerate(zones):
        types = []
        for name, cpus, mem_gb, acc, count, zs in _GCP_MACHINE_TYPES:
            if zone not in zs:
                continue
            mt: dict[str, Any] = {
                "kind": "compute#machineType",
                "id": str(int(hashlib.md5(name.encode()).hexdigest()[:15], 16)),
                "creationTimestamp": "1969-12-31T16:00:00.000-08:00",
                "name": name,
                "description": f"{cpus} vCPUs, {mem_gb} GB RAM" + (f", {count} {acc}" if acc else ""),
                "guestCpus": cpus,
                "memoryMb": mem_gb * 1024,
                "imageSpaceGb": 0,
                "maximumPersistentDisks": 128,
                "maximumPersistentDisksSizeGb": "263168",
                "zone": zone,
                "selfLink": f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}/machineTypes/{name}",
                "isSharedCpu": False,
                "architecture": "X86_64",
            }
            if acc:
                mt["accelerators"] = [{"guestAcceleratorType": acc, "guestAcceleratorCount": count}]
            types.append(mt)
        page: dict[str, Any] = {
            "kind": "compute#machineTypeAggregatedList",
            "id": f"projects/{project}/aggregated/machineTypes",
            "items": {f"zones/{zone}": {"machineTypes": types}},
            "selfLink": f"https://www.googleapis.com/compute/v1/projects/{project}/aggregated/machineTypes",
        }
        if i + 1 < len(zones):
            page["nextPageToken"] = f"page-{i + 1}"
        pages.append(page)
    return pages


def gcp_accelerator_types(project: str = DEMO_GCP_PROJECT) -> dict:
    """`aggregated/acceleratorTypes`, one page: every accelerator in every zone listing it."""
    items: dict[str, Any] = {}
    for *_, acc, _count, zones in _GCP_MACHINE_TYPES:
        if acc is None:
            continue
        for zone in zones:
            block = items.setdefault(f"zones/{zone}", {"acceleratorTypes": []})
            if all(a["name"] != acc for a in block["acceleratorTypes"]):
                block["acceleratorTypes"].append(
                    {
                        "kind": "compute#acceleratorType",
                        "name": acc,
                        "description": _GCP_ACCELERATORS[acc],
                        "zone": f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}",
                        "maximumCardsPerInstance": 8,
                    }
                )
    return {"kind": "compute#acceleratorTypeAggregatedList", "items": items}


@dataclass
class GcpComputeEmulator(PriceApiEmulator):
    """Compute Engine `aggregated/machineTypes` (honours `filter=name eq '<RE2>'` on the whole
    name and pages by `pageToken`) and `aggregated/acceleratorTypes`, for the catalog's specs."""

    path: ClassVar[Any] = re.compile(
        r"^/compute/v1/projects/[^/]+/aggregated/(machineTypes|acceleratorTypes)$"
    )
    machine_pages: list[dict] = field(default_factory=gcp_machine_types)
    accelerators: dict = field(default_factory=gcp_accelerator_types)

    def handle(self, req: Request) -> Response:
        self.requests.append(req.full_path)
        if (r := self._failure()) is not None:
            return r
        if req.path.endswith("/acceleratorTypes"):
            return Response(json.dumps(self.accelerators), 200, content_type="application/json")
        token = req.args.get("pageToken")
        idx = next(
            (i + 1 for i, p in enumerate(self.machine_pages) if token and p.get("nextPageToken") == token), 0
        )
        if token and not idx:
            body = {"error": {"code": 400, "message": "Invalid value for field 'pageToken'"}}
            return Response(json.dumps(body), 400, content_type="application/json")
        page = json.loads(json.dumps(self.machine_pages[idx]))
        if m := re.fullmatch(r"name eq '(.+)'", req.args.get("filter", "")):
            rx = re.compile(m.group(1))
            for scope in page["items"].values():
                scope["machineTypes"] = [t for t in scope.get("machineTypes", []) if rx.fullmatch(t["name"])]
        return Response(json.dumps(page), 200, content_type="application/json")


@dataclass
class PriceApis:
    azure: AzureRetailEmulator
    gcp: GcpCatalogEmulator
    gcp_compute: GcpComputeEmulator

    @property
    def azure_url(self) -> str:
        return self.azure.base + self.azure.path


def gcp_http_connection(base: str) -> dict[str, Any]:
    """HTTP connection whose host is the Cloud Billing Catalog's base (no API key: the fake
    does not check one unless asked to)."""
    u = urlsplit(base)
    return {"conn_type": "http", "host": u.hostname, "port": u.port, "schema": u.scheme}


@contextlib.contextmanager
def price_apis(gcp_conn_id: str | None = None) -> Iterator[PriceApis]:
    """Both fakes on one free loopback port; `AIRFLOW_CONN_<gcp_conn_id>` points at the GCP one."""
    from pytest_httpserver import HTTPServer

    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    try:
        apis = PriceApis(
            AzureRetailEmulator(server=server, items=prices_azure_catalog()),
            GcpCatalogEmulator(server=server, skus=prices_gcp_catalog() + prices_gcp_commit_skus()),
            GcpComputeEmulator(server=server),
        )
        for emu in (apis.azure, apis.gcp, apis.gcp_compute):
            server.expect_request(emu.path).respond_with_handler(emu.handle)
        with airflow_connection(gcp_conn_id, gcp_http_connection(apis.gcp.base)):
            yield apis
    finally:
        server.clear()
        if server.is_running():
            server.stop()

"""GCP GPU machine shapes and where they are offered, from the Compute Engine API.

- `GET /compute/v1/projects/{project}/aggregated/machineTypes`: every machine type per zone
  (`items` maps `zones/<zone>` to `{machineTypes: [...]}` or to a `warning` for an empty zone;
  paged by `nextPageToken`). A GPU machine type carries `accelerators`
  `[{guestAcceleratorType, guestAcceleratorCount}]`, `guestCpus` and `memoryMb`.
- `GET /compute/v1/projects/{project}/aggregated/acceleratorTypes`: each accelerator type's
  `description` ("NVIDIA H100 80GB"), the name the GPU model is read from.

A machine type listed in a zone is offered there: that is the availability. Neither call says
GPU memory (except in some descriptions) or the interconnect: `catalog.complete` fills them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from finops.prices.catalog import complete
from finops.prices.gpu_models import normalise_gpu
from finops.prices.http import HttpClient, PriceSourceError
from finops.prices.records import CatalogEntry, Offering

SOURCE = "gcp:compute.machineTypes"
_SERIES = re.compile(r"^[a-z]\d{1,2}[a-z]?$")
_ZONE = re.compile(r"^(?P<region>[a-z]+-[a-z]+\d{1,2})-[a-z]$")
_PROJECT = re.compile(r"^[a-z][a-z0-9\-.:]{4,62}$")
_TYPE = re.compile(r"^[a-z][a-z0-9\-]{1,62}$")
_MEM = re.compile(r"(\d{2,3}) ?GB", re.I)


def check_series(value: str) -> str:
    if not isinstance(value, str) or not _SERIES.match(value):
        raise ValueError(f"not a GCP machine series (a2, a3, a4, g2, ...): {value!r}")
    return value


def series_filter(series: Iterable[str]) -> str:
    """The list filter for the series' machine types (validated names, never spliced raw)."""
    names = sorted({check_series(s) for s in series})
    return f"name eq '({'|'.join(names)})-.*'"


def iter_aggregated(
    client: HttpClient, url: str, key: str, params: dict[str, str], max_pages: int = 500
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(zone, resource) for every resource of an aggregatedList, following nextPageToken."""
    token: str | None = None
    seen: set[str] = set()
    for _ in range(max_pages):
        doc = client.get_json(url, {**params, **({"pageToken": token} if token else {})})
        if not isinstance(doc, dict) or not isinstance(doc.get("items", {}), dict):
            raise PriceSourceError(f"GCP Compute {key}: response has no `items` map")
        for scope, block in sorted((doc.get("items") or {}).items()):
            zone = scope.removeprefix("zones/") if isinstance(scope, str) else ""
            if not _ZONE.match(zone) or not isinstance(block, dict):
                continue
            for res in block.get(key) or []:
                if isinstance(res, dict):
                    yield zone, res
        token = doc.get("nextPageToken") or None
        if not token or not isinstance(token, str):
            return
        if token in seen:
            raise PriceSourceError(f"GCP Compute {key}: nextPageToken repeats; the listing is incomplete")
        seen.add(token)
    raise PriceSourceError(f"GCP Compute {key}: more than {max_pages} pages")


def _project_url(base_url: str, project: str, what: str) -> str:
    if not isinstance(project, str) or not _PROJECT.match(project):
        raise ValueError(f"not a GCP project id: {project!r}")
    return f"{base_url.rstrip('/')}/compute/v1/projects/{project}/aggregated/{what}"


def accelerator_descriptions(
    client: HttpClient, base_url: str, project: str, max_pages: int = 500
) -> dict[str, str]:
    """accelerator type name -> its description ("nvidia-h100-80gb" -> "NVIDIA H100 80GB")."""
    out: dict[str, str] = {}
    url = _project_url(base_url, project, "acceleratorTypes")
    for _zone, acc in iter_aggregated(client, url, "acceleratorTypes", {}, max_pages):
        name, desc = acc.get("name"), acc.get("description")
        if isinstance(name, str) and isinstance(desc, str) and len(desc) <= 200:
            out.setdefault(name, desc)
    return out


def gpu_of(accel_type: str, descriptions: dict[str, str]) -> tuple[str | None, float | None]:
    """(canonical model, memory GiB when the description says it) for an accelerator type."""
    desc = descriptions.get(accel_type) or ""
    m = _MEM.search(desc) or _MEM.search(accel_type.replace("-", " "))
    mem = float(m.group(1)) if m else None
    return normalise_gpu(desc, mem) or normalise_gpu(accel_type, mem), mem


def parse_machine_type(mt: dict[str, Any], descriptions: dict[str, str]) -> CatalogEntry | None:
    """One GPU machine type -> its catalog entry (None when it has no accelerators)."""
    name = mt.get("name")
    accs = [a for a in mt.get("accelerators") or [] if isinstance(a, dict)]
    if not isinstance(name, str) or not _TYPE.match(name) or not accs:
        return None
    kind = str(accs[0].get("guestAcceleratorType") or "")[:100]
    count = sum(
        int(a.get("guestAcceleratorCount") or 0)
        for a in accs
        if isinstance(a.get("guestAcceleratorCount"), int)
    )
    model, mem = gpu_of(kind, descriptions)
    cpus, mem_mb = mt.get("guestCpus"), mt.get("memoryMb")
    return complete(
        CatalogEntry(
            provider="gcp",
            instance_type=name,
            gpu_model=model,
            gpu_count=count or None,
            gpu_memory_gib=mem if model else None,
            vcpus=cpus if isinstance(cpus, int) and not isinstance(cpus, bool) else None,
            memory_gib=round(mem_mb / 1024, 2) if isinstance(mem_mb, int | float) and mem_mb > 0 else None,
            gpu_name=descriptions.get(kind) or kind or None,
        )
    )


def fetch_specs(
    client: HttpClient,
    base_url: str,
    project: str,
    regions: Iterable[str],
    series: Iterable[str],
    max_pages: int = 500,
) -> tuple[list[CatalogEntry], list[Offering]]:
    """The series' GPU machine types (catalog) and the zones of `regions` offering them."""
    series = list(series)
    wanted_regions = set(regions)
    prefixes = tuple(f"{check_series(s)}-" for s in series)
    descriptions = accelerator_descriptions(client, base_url, project, max_pages)
    url = _project_url(base_url, project, "machineTypes")
    entries: dict[str, CatalogEntry] = {}
    offers: list[Offering] = []
    params = {"filter": series_filter(series), "returnPartialSuccess": "true"}
    for zone, mt in iter_aggregated(client, url, "machineTypes", params, max_pages):
        entry = parse_machine_type(mt, descriptions)
        if entry is None or not entry.instance_type.startswith(prefixes):
            continue
        entries.setdefault(entry.instance_type, entry)
        region = _ZONE.match(zone).group("region")  # type: ignore[union-attr]
        if region in wanted_regions:
            offers.append(Offering("gcp", region, zone, entry.instance_type, SOURCE))
    return sorted(entries.values(), key=lambda e: e.instance_type), offers

"""Merging what a spec API said with the static knowledge in gpu_models, and the drift report.

An API entry keeps every field the API gave; the static table fills only what is missing
(interconnect, GPU memory, a GPU count the API leaves out) and the entry's `source` says so
(`api` / `api+static`). When the API call is refused, `static_entries` answers from the table
alone (`static`). Pure: no warehouse, no network.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace

from finops.prices.gpu_models import (
    AWS_FAMILY_INTERCONNECT,
    GCP_PREFIX_INTERCONNECT,
    GPU_MEMORY_GIB,
    gpu_from_instance_name,
    known_instance,
)
from finops.prices.records import CatalogEntry

log = logging.getLogger(__name__)


def _static_interconnect(provider: str, instance_type: str) -> str | None:
    spec = known_instance(provider, instance_type)
    if spec and spec.interconnect:
        return spec.interconnect
    if provider == "aws":
        return AWS_FAMILY_INTERCONNECT.get(instance_type.split(".", 1)[0])
    if provider == "gcp":
        return GCP_PREFIX_INTERCONNECT.get(instance_type)
    return None


def complete(entry: CatalogEntry) -> CatalogEntry:
    """Fill what the API did not say from the static knowledge; mark the source."""
    filled: dict[str, object] = {}
    spec = known_instance(entry.provider, entry.instance_type)
    if entry.gpu_model and entry.gpu_count is None and spec and spec.gpu_count:
        filled["gpu_count"] = spec.gpu_count
    if entry.gpu_model and entry.gpu_memory_gib is None:
        mem = spec.gpu_memory_gib if spec and spec.gpu_model == entry.gpu_model else None
        mem = mem or GPU_MEMORY_GIB.get(entry.gpu_model)
        if mem is not None:
            filled["gpu_memory_gib"] = float(mem)
    if entry.gpu_model and entry.interconnect is None:
        if ic := _static_interconnect(entry.provider, entry.instance_type):
            filled["interconnect"] = ic
    source = "api+static" if filled else "api"
    return replace(entry, **filled, source=source)  # type: ignore[arg-type]


def static_entries(provider: str, types: Iterable[str]) -> list[CatalogEntry]:
    """Catalog rows from the static table alone (the spec API was refused or not configured).
    A type the table does not know gets its GPU model from its name where the name says it."""
    out = []
    for t in sorted(set(types)):
        spec = known_instance(provider, t)
        if spec:
            out.append(
                CatalogEntry(
                    provider,
                    t,
                    spec.gpu_model,
                    spec.gpu_count,
                    spec.gpu_memory_gib,
                    spec.vcpus,
                    spec.memory_gib,
                    spec.interconnect,
                    source="static",
                    gpu_divisor=spec.gpu_divisor,
                )
            )
        elif model := gpu_from_instance_name(provider, t):
            out.append(
                CatalogEntry(
                    provider,
                    t,
                    model,
                    None,
                    GPU_MEMORY_GIB.get(model),
                    None,
                    None,
                    None,
                    source="static",
                )
            )
    return out


def drift(entries: Iterable[CatalogEntry]) -> list[CatalogEntry]:
    """Entries whose GPU the catalog cannot classify (model unknown), sorted."""
    return sorted((e for e in entries if e.is_drift), key=lambda e: (e.provider, e.instance_type))


def log_drift(entries: Iterable[CatalogEntry]) -> list[CatalogEntry]:
    """Write each drift entry to the task log (one line each) and return them."""
    found = drift(entries)
    for e in found:
        log.warning(
            "GPU catalog drift: %s %s lists %s x %r that no rule classifies; add it to gpu_models",
            e.provider,
            e.instance_type,
            e.gpu_count if e.gpu_count is not None else "?",
            e.gpu_name,
        )
    return found

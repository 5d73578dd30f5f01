"""The benchmark suite: run every section under its own time budget, never let one broken
section sink the others, and produce one JSON-able result document (see schema.py).

Standalone (torch + stdlib only; no Airflow): `python -m finops.gpubench --json out.json`.
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

import torch

from finops.gpubench import facts, kernels, profiles, train
from finops.gpubench.schema import SCHEMA_VERSION
from finops.gpubench.timing import Deadline

Section = Callable[[torch.device, profiles.Profile, Deadline], tuple[list[dict], dict]]


def _serving(
    device: torch.device,
    profile: profiles.Profile,
    deadline: Deadline,
    overrides: dict[str, Any] | None = None,
) -> tuple[list[dict], dict]:
    """Imported on use: the serving modules travel in the bootstrap payload only to runs that ask
    for serving (EC2 user data holds 16 KiB; see bootstrap.py)."""
    from finops.gpubench import serving

    return serving.serving(device, profile, deadline, overrides)


SECTIONS: dict[str, Section] = {
    "matmul": kernels.matmul_tflops,
    "memory": kernels.memory_bandwidth,
    "transfer": kernels.host_transfer,
    "training": train.training,
    "serving": _serving,
}
# what a run measures unless told otherwise: serving is asked for (`--serving`), see bootstrap.py
DEFAULT_SECTIONS = ("matmul", "memory", "transfer", "training")


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("--device cuda asked for, but torch sees no CUDA device")
    return torch.device(name)


def _clean(v: Any) -> Any:
    """Strict JSON: non-finite floats become null (json.dumps would write NaN)."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_clean(x) for x in v]
    return v


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def run_suite(
    device: str = "auto",
    quick: bool = False,
    sections: list[str] | None = None,
    context: dict[str, str] | None = None,
    budget_scale: float = 1.0,
    serving_overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run the suite and return the result document (schema.RESULT_SCHEMA).
    serving_overrides: ServingSize fields replacing the profile's (batches, dtypes, P99 targets)."""
    dev = resolve_device(device)
    prof = profiles.pick(dev.type, quick)
    if serving_overrides:
        from finops.gpubench.serving_config import size_for

        size_for(prof.name, serving_overrides)  # bad shapes fail before anything runs
    wanted = sections or list(DEFAULT_SECTIONS)
    started = time.monotonic()
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "suite": "finops.bench",
        "profile": prof.name,
        "quick": quick,
        "started_at": _now(),
        "context": dict(context or {}),
        "device": facts.device_facts(dev),
        "results": [],
        "sections": {},
    }
    for name in wanted:
        fn = partial(_serving, overrides=serving_overrides) if name == "serving" else SECTIONS[name]
        budget = prof.budgets_s.get(name, 10.0) * budget_scale
        t0 = time.monotonic()
        info: dict[str, Any] = {"status": "ok", "budget_s": budget}
        try:
            metrics, details = fn(dev, prof, Deadline.after(budget))
            if "serving" in details:  # the matrix has its own optional key (serving_schema.py)
                doc["serving"] = details.pop("serving")
                details["points"] = len(doc["serving"]["rows"])
            kept = [m for m in metrics if isinstance(m["value"], int | float) and math.isfinite(m["value"])]
            if len(kept) != len(metrics):
                details["dropped_non_finite"] = [m["metric"] for m in metrics if m not in kept]
            for m in kept:
                m["section"] = name
            doc["results"].extend(kept)
            info["details"] = details
            produced = bool(kept) or (name == "serving" and bool(doc["serving"]["rows"]))
            if not produced:
                info["status"] = "skipped"
        except Exception as e:  # noqa: BLE001 - one broken section must not sink the others
            info.update(
                status="error", error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc(limit=5)
            )
        finally:
            if dev.type == "cuda":
                torch.cuda.empty_cache()
        info["seconds"] = time.monotonic() - t0
        doc["sections"][name] = info
    doc["finished_at"] = _now()
    doc["duration_s"] = time.monotonic() - started
    return _clean(doc)


def summary(doc: dict[str, Any]) -> str:
    """A few human lines for the log of the instance."""
    lines = [f"{doc['device'].get('name')} ({doc['profile']}, {doc['duration_s']:.1f} s)"]
    for m in doc["results"]:
        lines.append(f"  {m['metric']:<26} {m['dtype'] or '':<9} {m['value']:>12.4g} {m['unit']}")
    if doc.get("serving"):
        from finops.gpubench.serving import summary_lines

        lines += summary_lines(doc)
    for name, s in doc["sections"].items():
        if s["status"] != "ok":
            lines.append(f"  [{name}] {s['status']}: {s.get('error') or s.get('details', {}).get('skipped')}")
    return "\n".join(lines)

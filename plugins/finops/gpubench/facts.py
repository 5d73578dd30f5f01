"""Device facts: what the numbers were measured on (GPU model, memory, driver, clocks, links).

Standalone (torch + stdlib only): this module is shipped to fresh cloud instances. Every
probe is best effort: a missing `nvidia-smi` or an odd driver never fails the benchmark.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from typing import Any

import torch

# nvidia-smi --query-gpu fields (see `nvidia-smi --help-query-gpu`), in output order.
SMI_FIELDS = (
    "name",
    "memory.total",
    "driver_version",
    "clocks.max.sm",
    "clocks.max.memory",
    "clocks.sm",
    "clocks.mem",
    "power.limit",
    "pcie.link.gen.max",
    "pcie.link.width.max",
    "pcie.link.gen.current",
    "pcie.link.width.current",
    "temperature.gpu",
    "serial",
)


def _run(cmd: list[str], timeout: float = 10.0) -> str | None:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def _num(v: str) -> float | str | None:
    v = v.strip()
    if v in ("", "[N/A]", "N/A", "[Not Supported]"):
        return None
    try:
        return float(v)
    except ValueError:
        return v


def parse_smi_query(text: str) -> list[dict[str, Any]]:
    """Parse `--format=csv,noheader,nounits` output of SMI_FIELDS: one dict per GPU."""
    gpus = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != len(SMI_FIELDS):
            continue
        row = {k: _num(v) for k, v in zip(SMI_FIELDS, parts, strict=True)}
        for k in ("name", "driver_version", "serial"):
            row[k] = parts[SMI_FIELDS.index(k)]
        gpus.append(row)
    return gpus


def parse_nvlink_status(text: str) -> dict[str, Any]:
    """Count active NVLink links and their speed from `nvidia-smi nvlink --status -i 0`."""
    speeds = []
    for line in text.splitlines():
        line = line.strip()
        if line.lower().startswith("link") and "gb/s" in line.lower():
            try:
                speeds.append(float(line.split(":", 1)[1].strip().split()[0]))
            except (IndexError, ValueError):
                continue
    return {"links": len(speeds), "gbps_per_link": speeds[0] if speeds else None, "total_gbps": sum(speeds)}


def nvidia_smi() -> dict[str, Any] | None:
    out = _run(["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits"])
    if out is None:
        return None
    gpus = parse_smi_query(out)
    nv = _run(["nvidia-smi", "nvlink", "--status", "-i", "0"])
    return {"gpus": gpus, "nvlink": parse_nvlink_status(nv) if nv else None}


def device_facts(device: torch.device) -> dict[str, Any]:
    """Facts about `device` (and the host) for the result document."""
    facts: dict[str, Any] = {
        "type": device.type,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "host": platform.node(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "name": None,
        "count": 0,
        "memory_bytes": None,
        "compute_capability": None,
        "cuda_version": getattr(torch.version, "cuda", None),
        "driver_version": None,
        "clocks_mhz": None,
        "interconnect": None,
    }
    if device.type == "cuda":
        idx = device.index or 0
        props = torch.cuda.get_device_properties(idx)
        facts.update(
            name=props.name,
            count=torch.cuda.device_count(),
            memory_bytes=int(props.total_memory),
            compute_capability=f"{props.major}.{props.minor}",
            multiprocessors=props.multi_processor_count,
            l2_cache_bytes=getattr(props, "L2_cache_size", None),
        )
        smi = nvidia_smi()
        if smi and smi["gpus"]:
            g = smi["gpus"][min(idx, len(smi["gpus"]) - 1)]
            facts["driver_version"] = g.get("driver_version")
            facts["clocks_mhz"] = {
                "sm_max": g.get("clocks.max.sm"),
                "mem_max": g.get("clocks.max.memory"),
                "sm": g.get("clocks.sm"),
                "mem": g.get("clocks.mem"),
            }
            facts["power_limit_w"] = g.get("power.limit")
            facts["interconnect"] = {
                "pcie_gen_max": g.get("pcie.link.gen.max"),
                "pcie_width_max": g.get("pcie.link.width.max"),
                "pcie_gen": g.get("pcie.link.gen.current"),
                "pcie_width": g.get("pcie.link.width.current"),
                "nvlink": smi["nvlink"],
            }
            facts["nvidia_smi"] = smi["gpus"]
    else:
        facts.update(name=facts["cpu"] or "cpu", count=1)
        try:
            facts["memory_bytes"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            pass
    return facts

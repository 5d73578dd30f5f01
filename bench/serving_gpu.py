"""Serving figures on one GPU: the benchmark's serving section (ResNet-50-class CNN and a decoder
with a KV cache; fp16 / bf16 / int8 / fp8 where the GPU has them; several batch sizes), bounded
in time, written as the result document (JSON) and a markdown table.

    python3 bench/serving_gpu.py --out DIR [--budget-s 240] [--quick] [--device cuda|cpu]
        [--price-per-hour 3.99 --price-label "lambda gpu_1x_h100_sxm5 on-demand"]

No Airflow, no warehouse: torch + finops.gpubench (PYTHONPATH=plugins). bench/serving_gpu.sh
wraps it for a rented machine. A price turns throughput into $ per 1,000 requests and per 1M
output tokens (finops.gpubench.serving_cost); without one the table shows throughput only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins"))

from finops.gpubench import profiles, serving_cost  # noqa: E402
from finops.gpubench.schema import SCHEMA_VERSION  # noqa: E402
from finops.gpubench.suite import run_suite  # noqa: E402


def _fmt(v: Any, spec: str = ".4g") -> str:
    return "-" if v is None else format(v, spec)


def markdown(doc: dict[str, Any], price: Decimal | None, label: str) -> str:
    sv = doc.get("serving") or {}
    dev = doc["device"]
    lines = [
        f"# Serving benchmark: {dev.get('name')} ({doc['profile']})",
        "",
        f"torch {dev.get('torch_version')}, CUDA {dev.get('cuda_version')}, driver {dev.get('driver_version')}, "
        f"compute capability {dev.get('compute_capability')}; {doc['started_at']} to {doc['finished_at']} "
        f"({doc['duration_s']:.0f} s); schema v{doc['schema_version']}.",
        "",
        f"Method: {json.dumps(sv.get('method', {}))}",
        "",
        "| model | dtype | batch | req/s | out tok/s | P50 ms | P95 ms | P99 ms | peak GiB | samples | P99 ok |"
        + (" $/1k req | $/1M out tok |" if price is not None else ""),
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|" + ("---:|---:|" if price is not None else ""),
    ]
    for r in sv.get("rows", []):
        mem = r.get("peak_memory_bytes")
        cells = [
            r["model"],
            r["dtype"],
            str(r["batch"]),
            _fmt(r["requests_per_s"]),
            _fmt(r["output_tokens_per_s"]),
            _fmt(r["p50_ms"]),
            _fmt(r["p95_ms"]),
            _fmt(r["p99_ms"]),
            _fmt(mem / 2**30 if mem else None, ".3g"),
            str(r["samples"]),
            "yes" if r["meets_p99"] else "no",
        ]
        if price is not None:
            c = serving_cost.unit_costs(price, r["requests_per_s"], r["output_tokens_per_s"])
            cells += [_fmt(c.per_1k_requests, "f"), _fmt(c.per_1m_output_tokens, "f")]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Best batch under the P99 target (per model and precision):",
        "",
        "| model | dtype | P99 target ms | batch | req/s | out tok/s | P99 ms |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for b in sv.get("best", []):
        lines.append(
            f"| {b['model']} | {b['dtype']} | {b['p99_target_ms']:g} | {_fmt(b['batch'])} | "
            f"{_fmt(b.get('requests_per_s'))} | {_fmt(b.get('output_tokens_per_s'))} | {_fmt(b.get('p99_ms'))} |"
        )
    if sv.get("skipped"):
        lines += ["", "Skipped:", ""]
        lines += [
            f"- {s['model']} {s['dtype']}"
            + (f" batch {s['batch']}" if s.get("batch") else "")
            + f": {s['reason']}"
            for s in sv["skipped"]
        ]
    quant = {m: v.get("quantisation") for m, v in sv.get("models", {}).items() if v.get("quantisation")}
    if quant:
        lines += ["", f"Quantisation checks: {json.dumps(quant)}"]
    if price is not None:
        lines += [
            "",
            f"Price: {price} USD/h ({label}); {dev.get('count')} GPU(s) on the machine, figures per GPU.",
        ]
    lines += ["", f"Models: {json.dumps(sv.get('models', {}))}", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="directory for serving.json and serving.md")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--quick", action="store_true", help="the quick profile's small shapes (smoke test)")
    ap.add_argument("--budget-s", type=float, default=240.0, help="serving time budget, seconds")
    ap.add_argument("--price-per-hour", help="USD per GPU-hour of this machine (optional)")
    ap.add_argument("--price-label", default="", help="where the price comes from")
    ap.add_argument("--serving-dtypes", help="comma list (default: the profile's)")
    args = ap.parse_args(argv)
    price = None
    if args.price_per_hour:
        try:
            price = Decimal(args.price_per_hour)
        except InvalidOperation:
            ap.error(f"--price-per-hour: not a number: {args.price_per_hour!r}")
        if not price.is_finite() or price <= 0:
            ap.error("--price-per-hour must be > 0")
    overrides: dict[str, Any] = {}
    if args.serving_dtypes:
        overrides["dtypes"] = tuple(d for d in args.serving_dtypes.split(",") if d)
    import torch

    print(
        f"serving_gpu: torch {torch.__version__}, CUDA build {torch.version.cuda}, "
        f"cuda available={torch.cuda.is_available()}",
        flush=True,
    )
    if args.device != "cpu" and not torch.cuda.is_available():
        print(
            "serving_gpu: torch sees no CUDA device (a CPU-only wheel, or no driver); "
            "--device cpu runs the same path on CPU",
            file=sys.stderr,
        )
        return 2
    t0 = time.monotonic()
    budget = profiles.pick("cpu" if args.device == "cpu" else "cuda", args.quick).budgets_s["serving"]
    try:
        doc = run_suite(
            args.device,
            args.quick,
            ["serving"],
            {"run": "bench/serving_gpu.py"},
            args.budget_s / budget,
            overrides,
        )
    except (RuntimeError, ValueError) as e:
        print(f"serving_gpu: {e}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "serving.json").write_text(json.dumps(doc, indent=1, allow_nan=False))
    md = markdown(doc, price, args.price_label)
    (args.out / "serving.md").write_text(md)
    print(md)
    sec = doc["sections"]["serving"]
    print(
        f"serving_gpu: section {sec['status']} in {sec['seconds']:.1f} s (wall {time.monotonic() - t0:.1f} s), "
        f"{len((doc.get('serving') or {}).get('rows', []))} points, schema v{SCHEMA_VERSION}; "
        f"wrote {args.out}/serving.json and serving.md"
    )
    if sec["status"] == "error":
        print(sec.get("error"), sec.get("traceback"), sep="\n", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`python -m finops.gpubench --json out.json [--quick] [--device auto|cpu|cuda] [--serving ...]`.

`--serving` adds the serving section (`--sections serving` runs it alone); `--p99-ms`,
`--batches`, `--serving-dtypes`, `--serving-models`, `--tokens-in`, `--tokens-out` override
the profile's serving shapes.

Standalone: imports torch and this package's standalone modules only, never Airflow, so it
runs as-is on a fresh GPU instance. Exit 0 when the document was written (sections that
failed say so inside it), 2 on bad arguments or a missing device.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from finops.gpubench.suite import DEFAULT_SECTIONS, SECTIONS, run_suite, summary


def _context(pairs: list[str]) -> dict[str, str]:
    out = {}
    for p in pairs:
        k, sep, v = p.partition("=")
        if not sep or not k:
            raise argparse.ArgumentTypeError(f"--context wants KEY=VALUE, got {p!r}")
        out[k] = v
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m finops.gpubench", description="finops GPU benchmark suite")
    ap.add_argument("--json", required=True, type=Path, help="where to write the result document")
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    ap.add_argument(
        "--sections", default=",".join(DEFAULT_SECTIONS), help="comma list of " + ", ".join(SECTIONS)
    )
    ap.add_argument(
        "--context",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="stamped into the document (provider, region, instance_type, run_id, ...)",
    )
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--budget-scale", type=float, default=1.0, help="multiply every section's time budget")
    sv = ap.add_argument_group("serving")
    sv.add_argument("--serving", action="store_true", help="add the serving section to the sections run")
    sv.add_argument(
        "--p99-ms",
        action="append",
        default=[],
        metavar="[MODEL=]MS",
        help="P99 target of one request batch (default resnet50=100, decoder=2000)",
    )
    sv.add_argument("--batches", help="comma list of batch sizes for both models")
    sv.add_argument("--serving-dtypes", help="comma list of fp32, fp16, bf16, int8, fp8")
    sv.add_argument("--serving-models", help="comma list of resnet50, decoder")
    sv.add_argument("--tokens-in", type=int, help="decoder prompt tokens per request")
    sv.add_argument("--tokens-out", type=int, help="decoder output tokens per request")
    args = ap.parse_args(argv)
    if args.serving and "serving" not in args.sections.split(","):
        args.sections += ",serving"
    overrides: dict[str, Any] = {}
    given = (
        args.p99_ms,
        args.batches,
        args.serving_dtypes,
        args.serving_models,
        args.tokens_in,
        args.tokens_out,
    )
    if any(v not in (None, [], "") for v in given):
        from finops.gpubench.serving_config import overrides_from

        try:
            overrides = overrides_from(args)
        except argparse.ArgumentTypeError as e:
            ap.error(str(e))
    sections = [s for s in args.sections.split(",") if s]
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        ap.error(f"unknown sections {unknown}; choose from {list(SECTIONS)}")
    if args.threads > 0:
        import torch

        torch.set_num_threads(args.threads)
    try:
        doc = run_suite(
            args.device, args.quick, sections, _context(args.context), args.budget_scale, overrides
        )
    except (RuntimeError, ValueError, argparse.ArgumentTypeError) as e:
        print(f"finops.gpubench: {e}", file=sys.stderr)
        return 2
    args.json.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.json.with_suffix(args.json.suffix + ".part")
    tmp.write_text(json.dumps(doc, indent=1, allow_nan=False))
    tmp.replace(args.json)
    print(summary(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())

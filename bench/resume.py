"""Checkpoint overhead and time to resume, side by side with an uninterrupted run, same run.

    python bench/resume.py [--steps 400] [--every 50] [--widths 32,2048] [--repeat 3] [--no-s3]

Runs the real training job (finops.jobs.example_train, CPU, one thread) as subprocesses:
  plain       no checkpoints: the baseline step time
  ckpt-local  a checkpoint every --every steps to a local directory (fsync + rename)
  ckpt-s3     the same to S3 (a moto server on loopback; skipped without moto or with --no-s3)
  killed      ckpt-local, SIGKILLed after step 0.6 x steps (between checkpoints), then resumed
and prints, per model width (median of --repeat runs):
  step ms (the uninterrupted run without checkpoints), checkpoint size, ms per save and
  checkpoint overhead as % of step time (saving time over stepping time in the same run);
  time to resume = process start to the first step of the resumed attempt, next to the same
  for a fresh start (the difference is finding and loading the checkpoint), the restore call
  alone, and the steps redone; and whether the resumed run's final weights are bit-identical
  to the uninterrupted checkpointed run's.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DONE = re.compile(r"done step=\d+ loop_s=([0-9.]+) save_s=([0-9.]+)")
START = re.compile(r"start step=(\d+) resumed=(\w+) restore_s=([0-9.]+)")


def _run(argv: list[str], env: dict[str, str]) -> tuple[str, float, int]:
    """(output, seconds from start to the 'start step=' line, return code)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "finops.jobs.example_train", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    lines, first_step = [], float("nan")
    for line in proc.stdout:
        if line.startswith("start step=") and first_step != first_step:
            first_step = time.perf_counter() - t0
        lines.append(line)
    return "".join(lines), first_step, proc.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("state.pt"))


def bench(width: int, steps: int, every: int, s3: str | None, tmp: Path, rep: int) -> dict[str, float | str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'plugins'}:{os.environ.get('PYTHONPATH', '')}"}
    env.pop("FINOPS_FAULT", None)
    base = ["--steps", str(steps), "--width", str(width), "--every-minutes", "0"]
    d = tmp / f"w{width}-r{rep}"
    out: dict[str, float | str] = {}

    text, fresh_start, rc = _run([*base, "--every-steps", "0", "--checkpoint-uri", str(d / "plain")], env)
    m = DONE.search(text)
    assert rc == 0 and m, text[-2000:]
    out["plain_loop_s"], out["fresh_start_s"] = float(m.group(1)), fresh_start

    ref = d / "ref.pt"
    text, _, rc = _run(
        [*base, "--every-steps", str(every), "--checkpoint-uri", str(d / "ck"), "--out", str(ref)], env
    )
    m = DONE.search(text)
    assert rc == 0 and m, text[-2000:]
    out["ckpt_loop_s"], out["ckpt_save_s"] = float(m.group(1)), float(m.group(2))
    out["ckpt_pct"] = out["ckpt_save_s"] / (out["ckpt_loop_s"] - out["ckpt_save_s"]) * 100
    out["ckpt_bytes"] = _size(d / "ck") / max(len(list((d / "ck").rglob("state.pt"))), 1)

    if s3:
        senv = {**env, "AWS_ENDPOINT_URL": s3, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x",
                "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip
        text, _, rc = _run(
            [*base, "--every-steps", str(every), "--checkpoint-uri", f"s3://bench/w{width}-r{rep}"], senv
        )
        m = DONE.search(text)
        assert rc == 0 and m, text[-2000:]
        out["s3_loop_s"], out["s3_save_s"] = float(m.group(1)), float(m.group(2))
        out["s3_pct"] = out["s3_save_s"] / (out["s3_loop_s"] - out["s3_save_s"]) * 100

    kill_at = int(steps * 0.6) | 1  # odd: between checkpoints whenever `every` is even
    if kill_at % every == 0:
        kill_at += 1
    kenv = {**env, "FINOPS_FAULT": f"attempt=1,phase=step,step={kill_at}", "FINOPS_JOB_ATTEMPT": "1"}
    got = d / "got.pt"
    args = [*base, "--every-steps", str(every), "--checkpoint-uri", str(d / "kill"), "--out", str(got)]
    text, _, rc = _run(args, kenv)
    assert rc == -9 and f"fault: killed after step {kill_at}" in text, text[-2000:]
    text, resume_start, rc = _run(args, {**kenv, "FINOPS_JOB_ATTEMPT": "2"})
    m, s = DONE.search(text), START.search(text)
    assert rc == 0 and m and s and s.group(2) == "True", text[-2000:]
    out["resume_start_s"], out["restore_s"] = resume_start, float(s.group(3))
    out["redone"] = kill_at - int(s.group(1))
    out["identical"] = "yes" if got.read_bytes() == ref.read_bytes() else "NO"
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--every", type=int, default=50)
    p.add_argument("--widths", default="32,2048")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-s3", action="store_true")
    a = p.parse_args()

    s3 = server = None
    if not a.no_s3:
        try:
            import boto3
            from moto.server import ThreadedMotoServer
        except ImportError:
            print("moto not installed: no S3 column")
        else:
            logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's per-request lines
            port = _free_port()
            server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
            server.start()
            s3 = f"http://127.0.0.1:{port}"
            boto3.client("s3", endpoint_url=s3, region_name="us-east-1", aws_access_key_id="x",
                         aws_secret_access_key="x").create_bucket(Bucket="bench")  # fmt: skip
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-resume-") as tmp:
            for width in (int(w) for w in a.widths.split(",")):
                runs = [bench(width, a.steps, a.every, s3, Path(tmp), r) for r in range(a.repeat)]

                def med(k: str, runs: list[dict[str, float | str]] = runs) -> float:
                    return statistics.median(float(r[k]) for r in runs)

                saves = a.steps // a.every
                row = {
                    "width": width,
                    "step_ms": med("plain_loop_s") / a.steps * 1000,
                    "ckpt_kib": med("ckpt_bytes") / 1024,
                    # saving time over the time spent in steps, in the same run: the loop-time
                    # difference between two runs is noisier than the saves themselves
                    "local_overhead_pct": med("ckpt_pct"),
                    "local_save_ms": med("ckpt_save_s") / saves * 1000,
                    "s3_overhead_pct": med("s3_pct") if s3 else None,
                    "s3_save_ms": med("s3_save_s") / saves * 1000 if s3 else None,
                    "fresh_start_s": med("fresh_start_s"),
                    "resume_start_s": med("resume_start_s"),
                    "restore_ms": med("restore_s") * 1000,
                    "redone": med("redone"),
                    "identical": ",".join(str(r["identical"]) for r in runs),
                }
                rows.append(row)
    finally:
        if server is not None:
            server.stop()

    print(f"\nexample_train, {a.steps} steps, a checkpoint every {a.every} steps, median of {a.repeat} runs "
          f"(one CPU thread; {os.cpu_count()} cores on this machine)\n")  # fmt: skip
    head = ("width", "step ms", "ckpt KiB", "local % of steps", "local ms/save", "S3 % of steps", "S3 ms/save",
            "fresh start s", "resume start s", "restore ms", "steps redone", "bit-identical")  # fmt: skip
    table = [head]
    for r in rows:
        table.append((
            str(r["width"]), f"{r['step_ms']:.2f}", f"{r['ckpt_kib']:.0f}", f"{r['local_overhead_pct']:.1f}",
            f"{r['local_save_ms']:.1f}", "-" if r["s3_overhead_pct"] is None else f"{r['s3_overhead_pct']:.1f}",
            "-" if r["s3_save_ms"] is None else f"{r['s3_save_ms']:.1f}", f"{r['fresh_start_s']:.2f}",
            f"{r['resume_start_s']:.2f}", f"{r['restore_ms']:.1f}", f"{r['redone']:.0f}", str(r["identical"]),
        ))  # fmt: skip
    widths = [max(len(line[i]) for line in table) for i in range(len(head))]
    for line in table:
        print("  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)))
    print(f"\n% of steps: time saving checkpoints / time in steps, same run (a save every {a.every} steps);\n"
          "step ms: the uninterrupted run without checkpoints; start s: process start to the first step\n"
          "(imports included); restore ms: finding, verifying and loading the checkpoint.")  # fmt: skip
    return 0 if all("NO" not in str(r["identical"]) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

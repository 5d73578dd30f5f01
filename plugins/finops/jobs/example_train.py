"""A small, real training job that uses the checkpoint library: the job the local provider,
the tests and the demo run. CPU is enough.

It draws from every RNG a real job draws from (dropout: torch; target noise: numpy's global
RNG; a learning-rate jitter: python's `random`), shuffles by epoch, and uses an AMP scaler,
so an inexact resume shows up as different final weights.

    python -m finops.jobs.example_train --checkpoint-uri /tmp/ck --steps 40 --out final.pt
"""

from __future__ import annotations

import argparse
import io
import os
import random
import sys
import time


def _faults(spec: str) -> dict[str, int]:
    """This attempt's injected preemption, for tests, the bench and the demo: --fault (or
    FINOPS_FAULT) holds entries
    `attempt=<n>,phase=<boot|step|write>[,step=<k>]` separated by ';'. The process SIGKILLs
    itself (what a reclaim without warning does): at boot before any work, right after step k,
    or halfway through writing step k's checkpoint (state.pt half written, no marker)."""
    attempt = os.environ.get("FINOPS_JOB_ATTEMPT", "1")
    out: dict[str, int] = {}
    for entry in filter(None, spec.split(";")):
        kv = dict(part.split("=", 1) for part in entry.split(",") if "=" in part)
        if kv.get("attempt", attempt) == attempt and kv.get("phase") in ("boot", "step", "write"):
            out[kv["phase"]] = int(kv.get("step", "0"))
    return out


def _die() -> None:
    import signal

    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # A provider passes the URI and the work in FINOPS_* variables (finops.jobs.local.job_env).
    env_uri = os.environ.get("FINOPS_CHECKPOINT_URI")
    p.add_argument("--checkpoint-uri", default=env_uri, required=env_uri is None)
    p.add_argument("--steps", type=int, default=int(os.environ.get("FINOPS_STEPS", "40")))
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument(
        "--every-steps", type=int, default=int(os.environ.get("FINOPS_CHECKPOINT_EVERY_STEPS") or 5)
    )
    p.add_argument(
        "--every-minutes", type=float, default=float(os.environ.get("FINOPS_CHECKPOINT_EVERY_MINUTES") or 0)
    )
    p.add_argument("--step-sleep", type=float, default=0.0, help="seconds per step, to stretch a test run")
    p.add_argument(
        "--fault", default=os.environ.get("FINOPS_FAULT", ""), help="attempt=N,phase=boot|step|write,step=K"
    )
    p.add_argument("--width", type=int, default=32, help="hidden units: a bigger model for bench/resume.py")
    p.add_argument("--out", default=None, help="write the final weights here (torch.save)")
    a = p.parse_args(argv)
    faults = _faults(a.fault)
    if "boot" in faults:
        print("fault: killed at boot", flush=True)
        _die()

    import numpy as np
    import torch

    from finops.jobs.checkpoint import Checkpointer
    from finops.jobs.notices import check_for, watch
    from finops.jobs.stores import LocalStore

    torch.set_num_threads(1)  # the same reduction order in every process: exact resume
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    random.seed(a.seed)
    n, dim, batch = 256, 16, 32
    gen = torch.Generator().manual_seed(a.seed)
    x = torch.randn(n, dim, generator=gen)
    y = x @ torch.randn(dim, 1, generator=gen) + 0.1 * torch.randn(n, 1, generator=gen)
    model = torch.nn.Sequential(
        torch.nn.Linear(dim, a.width), torch.nn.ReLU(), torch.nn.Dropout(0.2), torch.nn.Linear(a.width, 1)
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler("cpu", growth_interval=3)

    ckpt = Checkpointer(
        a.checkpoint_uri, model, opt, scaler, every_steps=a.every_steps, every_minutes=a.every_minutes
    )
    ckpt.install_sigterm()
    if "write" in faults:
        put, target = ckpt.store.put, f"ckpt-{faults['write']:012d}/state.pt"

        def dying_put(name: str, data: bytes) -> None:
            if name == target:
                put(name, data[: len(data) // 2])  # the write is cut off halfway, no marker follows
                print(f"fault: killed while writing {name}", flush=True)
                _die()
            put(name, data)

        ckpt.store.put = dying_put  # type: ignore[method-assign]
    notice = check_for(os.environ.get("FINOPS_PROVIDER", "local"))
    if notice is not None:  # on a cloud instance: the metadata service's notice saves early too
        watch(ckpt.request_stop, notice)
    t0 = time.perf_counter()
    resumed = ckpt.restore()
    restore_s = time.perf_counter() - t0
    step = resumed.step if resumed else 0
    print(f"start step={step} resumed={resumed is not None} restore_s={restore_s:.6f}", flush=True)
    loop_start, save_s = time.perf_counter(), 0.0
    per_epoch = n // batch
    while step < a.steps:
        epoch, b = divmod(step, per_epoch)
        order = torch.randperm(n, generator=torch.Generator().manual_seed(a.seed * 1000 + epoch))
        idx = order[b * batch : (b + 1) * batch]
        noise = torch.from_numpy(np.random.normal(0.0, 0.01, size=(batch, 1)).astype("float32"))
        for g in opt.param_groups:
            g["lr"] = 1e-2 * (1.0 + 0.1 * (random.random() - 0.5))
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x[idx]), y[idx] + noise)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if a.step_sleep:
            time.sleep(a.step_sleep)
        step += 1
        print(f"step {step} loss {loss.item():.6f}", flush=True)
        if faults.get("step") == step:
            print(f"fault: killed after step {step}", flush=True)
            _die()
        t0 = time.perf_counter()
        stop = ckpt.step_done(step, data={"epoch": epoch, "batch": b + 1})
        save_s += time.perf_counter() - t0
        if stop:
            print(f"stopped at step {step}: {ckpt.stop_reason}", flush=True)
            return 143  # 128 + SIGTERM: the attempt ended early, the work is saved
    if a.out:
        store = LocalStore(os.path.dirname(os.path.abspath(a.out)))
        buf = io.BytesIO()
        torch.save(model.state_dict(), buf)
        store.put(os.path.basename(a.out), buf.getvalue())
    # the loop's wall time and the part of it spent saving checkpoints (bench/resume.py reads these)
    print(f"done step={step} loop_s={time.perf_counter() - loop_start:.6f} save_s={save_s:.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

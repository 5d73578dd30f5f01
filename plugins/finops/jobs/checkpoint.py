"""Checkpoint / resume for the training side: save every N steps or M minutes, on SIGTERM or
an interruption notice, and resume exactly from the newest complete checkpoint.

Runs on the instance: no Airflow import; torch and numpy are imported when first needed.

Layout under the checkpoint URI, one directory per saved step:
    ckpt-000000001200/state.pt     torch.save of model, optimizer, AMP scaler, RNG states,
                                   data position and user extras
    ckpt-000000001200/COMMIT.json  written last: format, step, size and sha256 of state.pt
A checkpoint exists only once its COMMIT.json does and state.pt matches it; anything else
(a crash mid-write, a truncated or altered file) is skipped and the next older one is used.
Loading uses `torch.load(weights_only=True)`: a checkpoint store is not trusted to run code,
so RNG states are stored as tensors and plain numbers, never pickled objects.

Exactness: a save happens between steps and captures everything the next step reads (the
weights, the optimizer's moments, the scaler's scale and growth tracker, the torch / CUDA /
numpy / python RNG states, the data position), so resuming replays the same computation and
ends with bit-identical weights on the same hardware and thread count.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import re
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from finops.jobs.stores import Store, open_store

FORMAT = 1
STATE = "state.pt"
COMMIT = "COMMIT.json"
_DIR = re.compile(r"^ckpt-(\d{12})$")


def checkpoint_dir(step: int) -> str:
    return f"ckpt-{step:012d}"


@dataclass(frozen=True)
class Resumed:
    step: int  # steps completed when the checkpoint was taken
    data: dict[str, Any]  # the data position saved with it
    extra: dict[str, Any]


# -- RNG states as tensors (weights_only-loadable) -----------------------------------------


def _rng_state() -> dict[str, Any]:
    import numpy as np
    import torch

    legacy = np.random.get_state(legacy=True)
    if not isinstance(legacy, tuple):  # only a non-MT19937 global generator gives the dict form
        raise RuntimeError("numpy's global RNG is not MT19937; its state cannot be checkpointed")
    kind, keys, pos, has_gauss, gauss = legacy
    version, py_state, py_gauss = random.getstate()
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "gauss": float(gauss),
        },
        "python": {"version": version, "state": torch.tensor(py_state, dtype=torch.int64), "gauss": py_gauss},
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    import numpy as np
    import torch

    torch.set_rng_state(state["torch"])
    n = state["numpy"]
    np.random.set_state(
        (n["kind"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["gauss"])
    )
    p = state["python"]
    random.setstate((p["version"], tuple(int(x) for x in p["state"].tolist()), p["gauss"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# -- the checkpointer ------------------------------------------------------------------------


class Checkpointer:
    """Saves and restores a training loop's full state under one checkpoint URI.

    Typical loop:
        ckpt = Checkpointer(uri, model, optimizer, scaler, every_steps=500, every_minutes=30)
        ckpt.install_sigterm()
        resumed = ckpt.restore()
        step = resumed.step if resumed else 0
        while step < total:
            ...one step...
            step += 1
            if ckpt.step_done(step, data={"epoch": e, "batch": b}):
                break  # SIGTERM or an interruption notice: saved, exit now
    """

    def __init__(
        self,
        uri: str,
        model: Any,
        optimizer: Any = None,
        scaler: Any = None,
        *,
        every_steps: int | None = None,
        every_minutes: float | None = None,
        keep: int = 2,
        store: Store | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if keep < 1:
            raise ValueError("keep must be at least 1: the newest complete checkpoint is never deleted")
        self.store = store if store is not None else open_store(uri)
        self.model, self.optimizer, self.scaler = model, optimizer, scaler
        self.every_steps = every_steps
        self.every_s = every_minutes * 60.0 if every_minutes else None
        self.keep = keep
        self.clock = clock
        self._last_save = clock()
        self._last_step: int | None = None
        self.stop_reason: str | None = None

    # signals / notices -------------------------------------------------------------------

    def install_sigterm(self) -> None:
        """SIGTERM (spot reclaim, `docker stop`, the local provider) asks for a save at the next
        step boundary; the step in flight finishes first so the saved state is consistent."""
        signal.signal(signal.SIGTERM, lambda signum, frame: self.request_stop("SIGTERM"))

    def request_stop(self, reason: str) -> None:
        """Also called by a watcher of the provider's interruption notice (AWS spot / rebalance,
        GCP preemption, Azure eviction)."""
        self.stop_reason = self.stop_reason or reason

    # saving ------------------------------------------------------------------------------

    def due(self, step: int) -> bool:
        if self.every_steps and step % self.every_steps == 0:
            return True
        return self.every_s is not None and self.clock() - self._last_save >= self.every_s

    def step_done(
        self, step: int, data: dict[str, Any] | None = None, extra: dict[str, Any] | None = None
    ) -> bool:
        """Call after each completed step. Saves when due or when a stop was requested; returns
        True when the loop must stop (the state is saved by then)."""
        if self.stop_reason is not None or self.due(step):
            self.save(step, data, extra)
        return self.stop_reason is not None

    def save(
        self, step: int, data: dict[str, Any] | None = None, extra: dict[str, Any] | None = None
    ) -> None:
        import torch

        if step == self._last_step:
            return
        state = {
            "format": FORMAT,
            "step": step,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict() if self.optimizer is not None else None,
            "scaler": self.scaler.state_dict() if self.scaler is not None else None,
            "rng": _rng_state(),
            "data": dict(data or {}),
            "extra": dict(extra or {}),
        }
        buf = io.BytesIO()
        torch.save(state, buf)
        blob = buf.getvalue()
        d = checkpoint_dir(step)
        self.store.put(f"{d}/{STATE}", blob)
        commit = {
            "format": FORMAT,
            "step": step,
            "saved_at": datetime.now(UTC).isoformat(),
            "files": {STATE: {"bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}},
        }
        self.store.put(f"{d}/{COMMIT}", json.dumps(commit, sort_keys=True).encode())
        self._last_save = self.clock()
        self._last_step = step
        self._prune()

    def _prune(self) -> None:
        """Keep the newest `keep` complete checkpoints; drop older ones (commit marker first, so
        a half-deleted checkpoint is never taken for a complete one) and older leftovers of
        interrupted saves."""
        complete = self.complete_steps()
        if len(complete) <= self.keep:
            return
        oldest_kept = complete[-self.keep]
        names = self.store.list()
        for name in sorted(names, key=lambda n: not n.endswith(COMMIT)):
            m = _DIR.match(name.split("/", 1)[0])
            if m and int(m.group(1)) < oldest_kept:
                self.store.delete(name)

    # resuming ----------------------------------------------------------------------------

    def complete_steps(self) -> list[int]:
        """Steps that have a commit marker, oldest first (the data is verified on load)."""
        return committed_steps(self.store)

    def _load(self, step: int) -> dict[str, Any] | None:
        import torch

        blob = verified_state(self.store, step)
        if blob is None:
            return None
        try:
            return torch.load(io.BytesIO(blob), weights_only=True, map_location="cpu")
        except Exception:  # a file that hashes right but does not load: skip it like a corrupt one
            return None

    def restore(self) -> Resumed | None:
        """Load the newest complete checkpoint into the model / optimizer / scaler and the RNGs.
        None when there is none (a fresh start)."""
        for step in reversed(self.complete_steps()):
            state = self._load(step)
            if state is None:
                continue
            self.model.load_state_dict(state["model"])
            if self.optimizer is not None and state["optimizer"] is not None:
                self.optimizer.load_state_dict(state["optimizer"])
            if self.scaler is not None and state["scaler"] is not None:
                self.scaler.load_state_dict(state["scaler"])
            _set_rng_state(state["rng"])
            self._last_step = step
            self._last_save = self.clock()
            return Resumed(step, state["data"], state["extra"])
        return None

    def newest_step(self) -> int | None:
        """The newest checkpoint that would be resumed from (the executor reports progress)."""
        for step in reversed(self.complete_steps()):
            if self._load(step) is not None:
                return step
        return None


# -- reading a store without torch (the orchestrator side) -----------------------------------


def committed_steps(store: Store) -> list[int]:
    """Steps that have a commit marker, oldest first."""
    steps = set()
    for name in store.list():
        head, _, tail = name.partition("/")
        m = _DIR.match(head)
        if m and tail == COMMIT:
            steps.add(int(m.group(1)))
    return sorted(steps)


def verified_state(store: Store, step: int) -> bytes | None:
    """state.pt of a step when its commit marker is valid and the bytes match it, else None."""
    d = checkpoint_dir(step)
    try:
        commit = json.loads(store.get(f"{d}/{COMMIT}") or b"")
        want = commit["files"][STATE]
        if commit["format"] != FORMAT or commit["step"] != step:
            return None
        size, digest = int(want["bytes"]), str(want["sha256"])
    except (ValueError, KeyError, TypeError):
        return None
    blob = store.get(f"{d}/{STATE}")
    if blob is None or len(blob) != size or hashlib.sha256(blob).hexdigest() != digest:
        return None
    return blob


def newest_complete_step(store: Store) -> int | None:
    """Progress as the orchestrator sees it: the newest step a resume would start from (hash
    checked, not unpickled, so no torch is needed where this runs)."""
    for step in reversed(committed_steps(store)):
        if verified_state(store, step) is not None:
            return step
    return None

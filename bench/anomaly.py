"""Anomaly detection benchmark: labelled synthetic daily cost series, our detector vs a
Kubecost-style baseline (alert when spend > 20 % above the trailing 30-day average).

    .venv/bin/python bench/anomaly.py [--series 10000] [--days 365] [--seed 1]

Series: weekly seasonality (business weekdays / flat), slow trends, multiplicative noise,
shared holidays (drops, not anomalies), small noisy series (no anomalies: a $ floor trap),
new services (spend from nothing: labelled), and injected anomalies: spikes (1-3 days),
level shifts, slow ramps. Only anomalies worth alerting by the monitor's own thresholds are
labelled (impact >= 2x the $ floor). Scoring is per event: consecutive alert days (gaps <= 2
days bridged, as the anomaly state does) form one alert; an alert overlapping a labelled
window is a true positive, else a false positive; a labelled anomaly with any overlapping
alert is found. Precision = TP alerts / alerts, recall = found / labelled.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))

from finops.anomaly.detect import Thresholds, detect, trailing_mean_baseline  # noqa: E402

WARMUP = 35  # first evaluated day (both methods)


@dataclass
class Dataset:
    x: np.ndarray  # (N, T) daily cost
    label: np.ndarray  # (N, T) int: 0 = normal, k > 0 = inside labelled event k
    n_events: int
    kinds: dict[str, int]
    event_kind: dict[int, str]


def generate(n: int, t: int, seed: int, floor: float) -> Dataset:
    rng = np.random.default_rng(seed)
    days = np.arange(t)
    dow = days % 7
    holidays = np.array([0, 18, 46, 144, 185, 246, 326, 327, 358, 359])
    holidays = holidays[holidays < t]

    kind = rng.choice(["regular", "small", "new"], size=n, p=[0.72, 0.20, 0.08])
    level = np.where(kind == "small", rng.uniform(1, 15, n), np.exp(rng.normal(np.log(400), 1.1, n)))
    level = np.clip(level, 1, 60000)
    business = rng.random(n) < 0.6
    weekend = np.where(business, rng.uniform(0.35, 0.9, n), 1.0)
    season = np.where(dow[None, :] >= 5, weekend[:, None], 1.0)
    trend = np.exp(rng.normal(0.0004, 0.0008, n)[:, None] * days[None, :])
    noise_sd = np.where(kind == "small", rng.uniform(0.3, 0.6, n), rng.uniform(0.02, 0.12, n))
    noise = np.exp(rng.normal(0, 1, (n, t)) * noise_sd[:, None] - noise_sd[:, None] ** 2 / 2)
    base = level[:, None] * season * trend
    hol = np.ones((n, t))
    hol_factor = np.where(business, rng.uniform(0.3, 0.8, n), rng.uniform(0.85, 1.0, n))
    hol[:, holidays] = hol_factor[:, None]
    mult = np.ones((n, t))
    label = np.zeros((n, t), dtype=np.int64)
    ev = 0
    counts = {"spike": 0, "level_shift": 0, "ramp": 0, "new_service": 0}
    event_kind: dict[int, str] = {}

    def mark(i: int, a: int, b: int, k: str) -> None:
        nonlocal ev
        ev += 1
        label[i, a : min(b, t)] = ev
        counts[k] += 1
        event_kind[ev] = k

    for i in range(n):
        if kind[i] == "new":
            t0 = int(rng.integers(60, t - 20))
            mult[i, :t0] = 0.0
            if level[i] >= 2 * floor:
                mark(i, t0, t0 + 21, "new_service")
            continue
        if kind[i] == "small":
            continue
        slots = np.arange(42, t - 10, 60)  # 60-day spacing: short runs have room for fewer events
        n_anom = min(int(rng.choice([0, 1, 2], p=[0.4, 0.45, 0.15])), len(slots))
        starts = sorted(rng.choice(slots, size=n_anom, replace=False)) if n_anom else []
        for s in starts:
            s = int(s + rng.integers(0, 30))
            if s >= t - 3:
                continue
            k = rng.choice(["spike", "level_shift", "ramp"], p=[0.5, 0.28, 0.22])
            ref = base[i, s]
            if k == "spike":
                d = int(rng.integers(1, 4))
                m = 1 + rng.uniform(0.7, 3.0)
                if ref * (m - 1) < 2 * floor:
                    continue
                mult[i, s : s + d] *= m
                mark(i, s, s + d + 1, k)
            elif k == "level_shift":
                m = 1 + rng.uniform(0.5, 1.5)
                if ref * (m - 1) < 2 * floor:
                    continue
                mult[i, s:] *= m
                mark(i, s, s + 21, k)
            else:
                d = int(rng.integers(7, 22))
                m = 1 + rng.uniform(0.8, 2.0)
                if ref * (m - 1) < 2 * floor:
                    continue
                ramp = np.full(t - s, m)
                k_ = min(d, t - s)
                ramp[:k_] = 1 + (m - 1) * (np.arange(1, k_ + 1) / d)
                mult[i, s:] *= ramp
                mark(i, s, s + d + 14, k)
    x = base * noise * hol * mult
    return Dataset(np.round(x, 2), label, ev, counts, event_kind)


def score(flags: np.ndarray, ds: Dataset, max_gap: int = 2) -> dict[str, float]:
    """Event-level precision / recall / F1 (vectorised run detection)."""
    f = flags.copy()
    f[:, :WARMUP] = False
    # bridge gaps <= max_gap days
    bridged = f.copy()
    for g in range(1, max_gap + 1):
        for a in range(1, g + 1):
            left = np.zeros_like(f)
            left[:, a:] = f[:, :-a]
            right = np.zeros_like(f)
            right[:, : -(g + 1 - a)] = f[:, g + 1 - a :]
            bridged |= left & right
    prev = np.zeros_like(bridged)
    prev[:, 1:] = bridged[:, :-1]
    starts = bridged & ~prev
    run_id = np.cumsum(starts.ravel()).reshape(bridged.shape) * bridged  # 0 outside runs
    n_runs = int(starts.sum())
    lab = ds.label
    in_run = run_id > 0
    hit = in_run & (lab > 0)
    tp_runs = np.unique(run_id[hit]).size
    found = np.unique(lab[hit]).size
    fp_runs = n_runs - tp_runs
    precision = tp_runs / n_runs if n_runs else 1.0
    recall = found / ds.n_events if ds.n_events else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    per_kind = {}
    found_ids = set(np.unique(lab[hit]).tolist())
    for k in ds.kinds:
        ids = [e for e, kk in ds.event_kind.items() if kk == k]
        per_kind[k] = sum(e in found_ids for e in ids) / len(ids) if ids else float("nan")
    return {"alerts": n_runs, "tp": tp_runs, "fp": fp_runs, "precision": precision, "recall": recall, "f1": f1,
            **{f"recall_{k}": v for k, v in per_kind.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--series", type=int, default=10_000)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    th = Thresholds()
    t0 = time.perf_counter()
    ds = generate(args.series, args.days, args.seed, th.abs_floor)
    gen_s = time.perf_counter() - t0
    print(f"{args.series} series x {args.days} days, {ds.n_events} labelled anomalies {ds.kinds} "
          f"(generated in {gen_s:.1f}s)")
    print(f"thresholds: floor ${th.abs_floor:g}, pct {th.pct:.0%}, z {th.z:g}")

    t0, c0 = time.perf_counter(), time.process_time()
    det = detect(ds.x, th)
    ours_s, ours_cpu = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    base = trailing_mean_baseline(ds.x, 30, 0.20)
    base_s, base_cpu = time.perf_counter() - t0, time.process_time() - c0
    # the same baseline given our $ floor on the excess over its mean, for a fair comparison
    c = np.concatenate([np.zeros((ds.x.shape[0], 1)), np.cumsum(ds.x, axis=1)], axis=1)
    idx = np.arange(ds.x.shape[1])
    lo = np.maximum(idx - 30, 0)
    mean = (c[:, idx] - c[:, lo]) / np.maximum(idx - lo, 1)
    base_floor = base & (ds.x - mean >= th.abs_floor)

    rows = [
        ("finops (seasonal median + MAD)", score(det.flags, ds), ours_s, ours_cpu),
        ("kubecost-style (>20% over 30d avg)", score(base, ds), base_s, base_cpu),
        ("kubecost-style + same $ floor", score(base_floor, ds), base_s, base_cpu),
    ]
    hdr = (f"{'method':38} {'alerts':>7} {'TP':>6} {'FP':>6} {'prec':>6} {'recall':>6} {'F1':>6} {'wall':>7} "
           f"{'cpu':>7}")
    print(hdr)
    print("-" * len(hdr))
    for name, s, secs, cpu in rows:
        print(f"{name:38} {s['alerts']:7d} {s['tp']:6d} {s['fp']:6d} {s['precision']:6.3f} {s['recall']:6.3f} "
              f"{s['f1']:6.3f} {secs:6.2f}s {cpu:6.2f}s")
    print("recall by kind (finops):", {k[7:]: round(v, 3) for k, v in rows[0][1].items() if k.startswith("recall_")})
    print("recall by kind (kubecost):", {k[7:]: round(v, 3) for k, v in rows[1][1].items() if k.startswith("recall_")})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Anomaly detection benchmark: ten independent regimes of labelled daily cost series (see
anomaly_regimes.py), scored per regime and overall, tuned on half and judged on the other.

    .venv/bin/python bench/anomaly.py [--series 10000] [--days 365] [--seed 1]
    .venv/bin/python bench/anomaly.py --tune            # grid-tune on each split, judge the other
    .venv/bin/python bench/anomaly.py --lib 40          # + statsforecast MSTL (40 series a regime), AutoETS (10)
    .venv/bin/python bench/anomaly.py --monitor-size 5  # + monitors of 5 series (detect() on 5 at a time)

Scoring (anomaly_score.py): event level; an alert is a run of flagged days (gaps <= 2 days
bridged); it is true when it overlaps a labelled window, and each event vouches for one alert.
Methods: ours (finops.anomaly.detect, default thresholds), a Kubecost-style rule (spend > 20 %
over the trailing 30-day average) with and without our $ floor, and with --lib the library
methods on the same series. --tune: coordinate search over the detector's constants on split A
(SPLIT_A regimes), judged on split B; then the reverse; the judged half is never looked at
while tuning.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "plugins"))
sys.path.insert(0, str(HERE))

from anomaly_regimes import REGIMES, SPLIT_A, SPLIT_B, Dataset, generate_all  # noqa: E402
from anomaly_score import Score, score  # noqa: E402

from finops.anomaly.detect import Model, Thresholds, detect, trailing_mean_baseline  # noqa: E402

OURS = "finops (log level + weekday, MAD)"
KUBECOST = "kubecost-style (>20% over 30d avg)"
KUBECOST_FLOOR = "kubecost-style + same $ floor"


def kubecost_with_floor(x: np.ndarray, floor: float) -> np.ndarray:
    """The trailing-mean rule, also requiring our $ floor on the excess over its mean."""
    c = np.concatenate([np.zeros((x.shape[0], 1)), np.cumsum(x, axis=1)], axis=1)
    idx = np.arange(x.shape[1])
    lo = np.maximum(idx - 30, 0)
    mean = (c[:, idx] - c[:, lo]) / np.maximum(idx - lo, 1)
    return trailing_mean_baseline(x, 30, 0.20) & (x - mean >= floor)


def subset(ds: Dataset, k: int) -> Dataset:
    """The first k series of a regime, with the events they hold."""
    lab = ds.label[:k]
    ids = set(np.unique(lab[lab > 0]).tolist())
    return Dataset(ds.name, ds.x[:k], lab, {e: kind for e, kind in ds.event_kind.items() if e in ids})


def score_all(datasets: list[Dataset], flags_of) -> dict[str, Score]:
    return {ds.name: score(flags_of(ds), ds.label, ds.event_kind) for ds in datasets}


def total(scores: dict[str, Score], names: tuple[str, ...] | None = None) -> Score:
    out = Score()
    for k, s in scores.items():
        if names is None or k in names:
            out = out + s
    return out


def print_table(title: str, scores: dict[str, Score], judged: tuple[str, ...] = ()) -> None:
    print(f"\n{title}")
    hdr = f"{'regime':14} {'events':>6} {'alerts':>6} {'FP':>5} {'prec':>6} {'recall':>6} {'F1':>6}  recall by kind"
    print(hdr)
    print("-" * len(hdr))
    for name, s in scores.items():
        kinds = " ".join(f"{k} {f}/{n}" for k, (f, n) in sorted(s.by_kind.items()))
        mark = "*" if name in judged else " "
        print(
            f"{name + mark:14} {s.events:6d} {s.alerts:6d} {s.fp:5d} {s.precision:6.3f} {s.recall:6.3f} "
            f"{s.f1:6.3f}  {kinds}"
        )
    for label, names in (("overall", None), ("split A", SPLIT_A), ("split B", SPLIT_B)):
        s = total(scores, names)
        print(
            f"{label:14} {s.events:6d} {s.alerts:6d} {s.fp:5d} {s.precision:6.3f} {s.recall:6.3f} {s.f1:6.3f}"
        )


# The constants searched, each over a few values around the shipped ones (Thresholds.z and
# drop_pct are user-facing defaults; the rest are Model fields).
GRID: dict[str, tuple] = {
    "z": (4.0, 5.0, 6.0),
    "drop_pct": (0.6, 0.7, 0.8),
    "accept": (2, 3, 4),
    "settle": (7, 14, 28),
    "slow_sd": (0.5, 0.6, 0.8),
    "alpha": (0.05, 0.1, 0.2),
    "offset": (0.1, 0.25, 0.5),
}
# Not searched: Model.tail_gamma (how much heavy tails raise z). A half without heavy-tailed
# noise can only learn to switch that guard off, which is how a detector tuned on one kind of
# data fails on another; it stays a design constant.


# Where the search starts (fixed, so a re-run finds the same constants whatever is shipped).
START: dict = {
    "z": 5.0,
    "drop_pct": 0.6,
    "accept": 3,
    "settle": 14,
    "slow_sd": 0.5,
    "alpha": 0.05,
    "offset": 0.25,
}


def run_with(datasets: list[Dataset], params: dict) -> Score:
    th = replace(Thresholds(), **{k: v for k, v in params.items() if k in ("z", "drop_pct")})
    model = replace(Model(), **{k: v for k, v in params.items() if k not in ("z", "drop_pct")})
    return total(score_all(datasets, lambda ds: detect(ds.x, th, model=model).flags))


def tune(datasets: list[Dataset], passes: int = 2) -> tuple[dict, Score]:
    """Coordinate search maximising F1 on `datasets` (one constant at a time, `passes` rounds)."""
    best = dict(START)
    best_s = run_with(datasets, best)
    for _ in range(passes):
        for key, values in GRID.items():
            for v in values:
                if v == best[key]:
                    continue
                cand = {**best, key: v}
                s = run_with(datasets, cand)
                if s.f1 > best_s.f1 + 1e-4:
                    best, best_s = cand, s
    return best, best_s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--series", type=int, default=10_000, help="in all, split evenly over the regimes")
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tune", action="store_true", help="tune on each split, judge on the other")
    ap.add_argument("--tune-series", type=int, default=300, help="series per regime while tuning")
    ap.add_argument("--lib", type=int, default=0, help="series per regime for the statsforecast comparison")
    ap.add_argument(
        "--monitor-size",
        type=int,
        default=0,
        help="also score small monitors: each regime's first 200 series, detect() on K at a time",
    )
    args = ap.parse_args(argv)
    th = Thresholds()
    n_per = max(args.series // len(REGIMES), 1)
    t0 = time.perf_counter()
    datasets = generate_all(n_per, args.days, args.seed, th.abs_floor)
    n_events = sum(ds.n_events for ds in datasets)
    print(
        f"{n_per * len(REGIMES)} series x {args.days} days in {len(REGIMES)} regimes, {n_events} labelled events "
        f"(generated in {time.perf_counter() - t0:.1f}s)"
    )
    print(
        f"thresholds: floor ${th.abs_floor:g}, pct {th.pct:.0%}, z {th.z:g}, drop {th.drop_pct:.0%}; "
        f"split A {','.join(SPLIT_A)}; split B {','.join(SPLIT_B)}"
    )

    x_all = np.vstack([ds.x for ds in datasets])
    t0, c0 = time.perf_counter(), time.process_time()
    det = detect(x_all, th)
    ours_s, ours_cpu = time.perf_counter() - t0, time.process_time() - c0
    rows = np.cumsum([0] + [ds.x.shape[0] for ds in datasets])
    flags_of = {ds.name: det.flags[rows[j] : rows[j + 1]] for j, ds in enumerate(datasets)}
    ours = score_all(datasets, lambda ds: flags_of[ds.name])
    print(
        f"\nspeed: {x_all.shape[0]} series x {x_all.shape[1]} days in {ours_s:.2f}s wall, {ours_cpu:.2f}s CPU"
    )
    print_table(f"{OURS} (defaults: tuned on split A, so split B (*) is the judged half)", ours, SPLIT_B)
    kube = score_all(datasets, lambda ds: trailing_mean_baseline(ds.x, 30, 0.20))
    kube_f = score_all(datasets, lambda ds: kubecost_with_floor(ds.x, th.abs_floor))
    for name, sc in ((KUBECOST, kube), (KUBECOST_FLOOR, kube_f)):
        s = total(sc)
        print(
            f"{name:38} overall: alerts {s.alerts} prec {s.precision:.3f} recall {s.recall:.3f} F1 {s.f1:.3f}"
        )

    if args.monitor_size:
        k = args.monitor_size

        def in_monitors(ds: Dataset) -> np.ndarray:
            x = ds.x[:200]
            return np.vstack([detect(x[j : j + k], th).flags for j in range(0, x.shape[0], k)])

        small = [subset(ds, 200) for ds in datasets]
        print_table(
            f"{OURS}, monitors of {k} series (200 series a regime)", score_all(small, in_monitors), SPLIT_B
        )

    if args.tune:
        small = generate_all(args.tune_series, args.days, args.seed + 100, th.abs_floor)
        by_name = {ds.name: ds for ds in small}
        for tuned, judged in ((SPLIT_A, SPLIT_B), (SPLIT_B, SPLIT_A)):
            t1 = time.perf_counter()
            params, s_t = tune([by_name[r] for r in tuned])
            th_j = replace(th, z=params["z"], drop_pct=params["drop_pct"])
            model = replace(Model(), **{k: v for k, v in params.items() if k not in ("z", "drop_pct")})
            judged_scores = score_all(
                [ds for ds in datasets if ds.name in judged],
                lambda ds, th_j=th_j, model=model: detect(ds.x, th_j, model=model).flags,
            )
            print(
                f"\ntuned on {','.join(tuned)} ({time.perf_counter() - t1:.0f}s): {params}; "
                f"tuned-half F1 {s_t.f1:.3f}"
            )
            print_table(f"judged on {','.join(judged)} with those constants", judged_scores, judged)

    if args.lib:
        from anomaly_lib import library_flags

        # AutoETS with a weekly season is ~10x slower than MSTL: a quarter of the series
        for model, k in (("mstl", args.lib), ("ets", max(args.lib // 4, 1))):
            sub = [subset(ds, k) for ds in datasets]
            ours_sub = score_all(sub, lambda ds: detect(ds.x, th).flags)
            levels = (99.0, 99.9)
            secs = 0.0
            plain: dict[float, dict[str, Score]] = {lv: {} for lv in levels}
            guarded: dict[float, dict[str, Score]] = {lv: {} for lv in levels}
            for ds in sub:
                by_level, s = library_flags(ds.x, th.abs_floor, th.pct, th.drop_pct, model, levels)
                secs += s
                for lv, (fp, fg) in by_level.items():
                    plain[lv][ds.name] = score(fp, ds.label, ds.event_kind)
                    guarded[lv][ds.name] = score(fg, ds.label, ds.event_kind)
            n_sub = sum(ds.x.shape[0] for ds in sub)
            print(
                f"\nstatsforecast {model}: {secs:.1f}s for {n_sub} series, "
                f"{secs / n_sub * 10_000 / 60:.0f} min per 10k series (n_jobs=1)"
            )
            print_table(f"{OURS} on the same {k} series a regime", ours_sub, SPLIT_B)
            for lv in levels:
                print_table(
                    f"statsforecast {model}, outside its {lv:g}% in-sample interval", plain[lv], SPLIT_B
                )
                print_table(
                    f"statsforecast {model} {lv:g}% + the same $ floor / % / drop thresholds",
                    guarded[lv],
                    SPLIT_B,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

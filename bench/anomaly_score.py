"""Event-level scoring of daily anomaly flags against labelled windows.

An alert is a run of flagged days (gaps <= max_gap days bridged, as the anomaly state merges
them). A labelled event is found when an alert overlaps its window. An alert is true when it
overlaps a window, and each event vouches for one alert only: a second alert on the same
event (the detector still alerting on a new level, in separate runs) counts as false.
Precision = true alerts / alerts; recall = found events / events. Days before `warmup` are
not scored (no detector has a baseline there).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

WARMUP = 35


@dataclass
class Score:
    alerts: int = 0
    tp: int = 0
    events: int = 0
    found: int = 0
    by_kind: dict[str, list[int]] = field(default_factory=dict)  # kind -> [found, total]

    @property
    def fp(self) -> int:
        return self.alerts - self.tp

    @property
    def precision(self) -> float:
        return self.tp / self.alerts if self.alerts else 1.0

    @property
    def recall(self) -> float:
        return self.found / self.events if self.events else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def __add__(self, other: Score) -> Score:
        kinds = {k: list(v) for k, v in self.by_kind.items()}
        for k, (f, n) in other.by_kind.items():
            cur = kinds.setdefault(k, [0, 0])
            cur[0] += f
            cur[1] += n
        return Score(
            self.alerts + other.alerts,
            self.tp + other.tp,
            self.events + other.events,
            self.found + other.found,
            kinds,
        )


def alert_runs(flags: np.ndarray, max_gap: int = 2, warmup: int = WARMUP) -> np.ndarray:
    """Run id per (series, day): 0 outside alerts, 1.. numbering the runs of bridged flags."""
    f = np.asarray(flags, bool).copy()
    f[:, :warmup] = False
    bridged = f.copy()
    for g in range(1, max_gap + 1):  # a gap of g days between two flagged days is filled
        for a in range(1, g + 1):
            left = np.zeros_like(f)
            left[:, a:] = f[:, :-a]
            right = np.zeros_like(f)
            right[:, : -(g + 1 - a)] = f[:, g + 1 - a :]
            bridged |= left & right
    prev = np.zeros_like(bridged)
    prev[:, 1:] = bridged[:, :-1]
    starts = bridged & ~prev
    return np.cumsum(starts.ravel()).reshape(bridged.shape) * bridged


def score(
    flags: np.ndarray, label: np.ndarray, event_kind: dict[int, str], max_gap: int = 2, warmup: int = WARMUP
) -> Score:
    run_id = alert_runs(flags, max_gap, warmup)
    n_runs = int(run_id.max()) if run_id.size else 0
    hit = (run_id > 0) & (label > 0)
    runs_hitting = np.unique(run_id[hit]).size
    found_ids = np.unique(label[hit])
    found = found_ids.size
    by_kind: dict[str, list[int]] = {}
    found_set = set(found_ids.tolist())
    for ev, k in event_kind.items():
        cur = by_kind.setdefault(k, [0, 0])
        cur[0] += ev in found_set
        cur[1] += 1
    return Score(n_runs, min(runs_hitting, found), len(event_kind), found, by_kind)

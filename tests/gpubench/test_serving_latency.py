"""The serving latency method (latency.py): warm-up discarded, every sample bracketed by device
synchronisations, nearest-rank percentiles, the deadline, and the P99-target pick. Driven by a
fake clock and a recording sync, so what is timed is known exactly."""

from __future__ import annotations

import pytest

from finops.gpubench.latency import Latencies, best_under_target, measure_latencies, percentile, point_row


class FakeDevice:
    """A clock that only moves when a request batch 'runs', and a log of sync/run/clock calls."""

    def __init__(self, durations: list[float]) -> None:
        self.durations = list(durations)
        self.now = 100.0
        self.log: list[str] = []

    def clock(self) -> float:
        self.log.append("clock")
        return self.now

    def sync(self) -> None:
        self.log.append("sync")

    def run(self) -> None:
        self.log.append("run")
        self.now += self.durations.pop(0)


def test_nearest_rank_percentiles_on_a_known_distribution():
    samples = [float(i) for i in range(100, 0, -1)]  # 1..100, unordered
    assert percentile(samples, 50) == 50.0
    assert percentile(samples, 95) == 95.0
    assert percentile(samples, 99) == 99.0
    assert percentile(samples, 100) == 100.0
    # n = 20: rank ceil(0.95 x 20) = 19 (no float drift to 20), P99 -> rank 20 = the maximum
    twenty = [float(i) for i in range(1, 21)]
    assert percentile(twenty, 95) == 19.0 and percentile(twenty, 99) == 20.0
    assert percentile([7.0], 50) == 7.0
    assert percentile([1.0, 2.0], 50) == 1.0  # an observed value, never interpolated (linear: 1.5)
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 0)


def test_warmup_is_discarded_and_each_sample_is_synchronised():
    # two slow warm-up batches (cold caches), then 5 timed ones
    dev = FakeDevice([9.0, 8.0, 0.010, 0.020, 0.030, 0.040, 0.050])
    lat = measure_latencies(dev.run, sync=dev.sync, clock=dev.clock, warmup=2, iters=5)
    assert lat.samples_s == pytest.approx([0.010, 0.020, 0.030, 0.040, 0.050])
    assert lat.warmup == 2 and not lat.truncated
    # warm-up runs unsynchronised and untimed; then sync, clock, run, sync, clock per sample
    assert dev.log[:2] == ["run", "run"]
    assert dev.log[2:] == ["sync", "clock", "run", "sync", "clock"] * 5
    s = lat.summary()
    assert s["p50_ms"] == pytest.approx(30.0) and s["p99_ms"] == pytest.approx(50.0)
    assert s["mean_ms"] == pytest.approx(30.0) and s["min_ms"] == pytest.approx(10.0)


def test_the_deadline_stops_after_min_iters_only():
    dev = FakeDevice([0.5] * 10)
    left = iter([10.0, 0.1, 0.1, 0.1, 0.1])  # asked before each sample beyond min_iters
    lat = measure_latencies(
        dev.run, sync=dev.sync, clock=dev.clock, warmup=0, iters=10, min_iters=2, time_left=lambda: next(left)
    )
    # samples 1-2 are owed (min_iters); at 3 the 10 s left hold one more 0.5 s batch; at 4, 0.1 s does not
    assert len(lat.samples_s) == 3 and lat.truncated


def test_bad_measurement_arguments():
    dev = FakeDevice([0.1])
    for kw in (
        {"warmup": -1, "iters": 1},
        {"warmup": 0, "iters": 0},
        {"warmup": 0, "iters": 1, "min_iters": 0},
    ):
        with pytest.raises(ValueError):
            measure_latencies(dev.run, sync=dev.sync, clock=dev.clock, **kw)


def _lat(*ms: float) -> Latencies:
    return Latencies([m / 1000 for m in ms], warmup=1, truncated=False)


def test_point_rows_and_the_best_batch_under_the_target():
    # batch 1: 10 ms each -> 100 req/s; batch 8: 40 ms -> 200 req/s; batch 32: 150 ms P99 -> 213 req/s
    rows = [
        point_row(
            "decoder",
            "bf16",
            1,
            _lat(10, 10, 10, 10),
            p99_target_ms=100,
            peak_memory_bytes=1,
            tokens_in=16,
            tokens_out=4,
        ),
        point_row(
            "decoder",
            "bf16",
            8,
            _lat(40, 40, 40, 40),
            p99_target_ms=100,
            peak_memory_bytes=2,
            tokens_in=16,
            tokens_out=4,
        ),
        point_row(
            "decoder",
            "bf16",
            32,
            _lat(150, 150, 150, 150),
            p99_target_ms=100,
            peak_memory_bytes=3,
            tokens_in=16,
            tokens_out=4,
        ),
    ]
    assert rows[0]["requests_per_s"] == pytest.approx(100.0)
    assert rows[1]["requests_per_s"] == pytest.approx(200.0) and rows[1][
        "output_tokens_per_s"
    ] == pytest.approx(800.0)
    assert [r["meets_p99"] for r in rows] == [True, True, False]
    assert best_under_target(rows, 100)["batch"] == 8
    assert best_under_target(rows, 200)["batch"] == 32
    assert best_under_target(rows, 5) is None  # nothing meets 5 ms
    cnn = point_row("resnet50", "fp16", 4, _lat(20, 20), p99_target_ms=100, peak_memory_bytes=None)
    assert cnn["output_tokens_per_s"] is None and cnn["tokens_out"] is None


def test_bad_point_inputs():
    with pytest.raises(ValueError, match="batch"):
        point_row("resnet50", "fp16", -1, _lat(1), p99_target_ms=100, peak_memory_bytes=None)
    with pytest.raises(ValueError, match="P99 target"):
        point_row("resnet50", "fp16", 1, _lat(1), p99_target_ms=0, peak_memory_bytes=None)
    with pytest.raises(ValueError, match="P99 target"):
        best_under_target([], 0)

"""gpu_benchmarks_latest leaves smoke-test runs out: a quick run (profile cuda-quick: one 4096^3
matmul, a 4-layer d512 model) measures another model's step, so it must never replace the full
figures that $/1k steps and $/TFLOP-h compare (finops.gpubench.store.latest_rows reads this view).
The profile name is a literal here, as migrations are fixed snapshots; tests/gpubench/test_store.py
checks it against finops.gpubench.profiles."""

from __future__ import annotations

VERSION = 301
DESCRIPTION = "gpu_benchmarks_latest: smoke-test (cuda-quick) runs never the latest figures"
QUICK_PROFILES = ("cuda-quick",)


def statements(dialect: str) -> list[str]:
    quick = ", ".join(f"'{p}'" for p in QUICK_PROFILES)
    return [
        f"""CREATE OR REPLACE VIEW gpu_benchmarks_latest AS
           SELECT * FROM (
             SELECT b.*, ROW_NUMBER() OVER (
               PARTITION BY provider, region, instance_type, metric, COALESCE(dtype, '')
               ORDER BY measured_at DESC, bench_run_id DESC) AS rn
             FROM gpu_benchmarks b
             WHERE NOT EXISTS (SELECT 1 FROM gpu_benchmark_runs r
                               WHERE r.bench_run_id = b.bench_run_id AND r.profile IN ({quick}))) ranked
           WHERE rn = 1""",
    ]

"""Airflow DAG finops_bench_reaper, the hourly safety net: terminate every tagged GPU benchmark
instance past its expiry, on every cloud that has a configured benchmark target. Dry-run by
default for manual runs; scheduled runs follow benchmarks.dry_run, except that they always end
an expired instance the audit log shows this package launched for real (a manual live benchmark
run while the config says dry). Wiring only: finops.orchestration.gpu_benchmark_dags builds it,
finops.gpubench.lifecycle.reap does the work."""

from finops.orchestration.gpu_benchmark_dags import build_bench_reaper_dag

dag = build_bench_reaper_dag(__doc__)

"""Airflow DAG finops_gpu_benchmark: weekly GPU benchmarks on fresh instances -> cost per
unit of work.

For each configured (provider, region, instance type, pricing model), a mapped task group:
prepare + launch (setups) -> deferrable wait for the results object -> collect -> terminate
(teardown: always runs, finds instances by tag, polls until they are gone). Then the figures
are joined with the latest prices. Wiring only: finops.orchestration.gpu_benchmark_dags builds
it, the logic lives in finops.gpubench.lifecycle.
"""

from finops.orchestration.gpu_benchmark_dags import build_gpu_benchmark_dag

dag = build_gpu_benchmark_dag(__doc__)

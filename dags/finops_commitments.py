"""Airflow DAG finops_commitments: Savings Plans, RIs, CUDs and Azure reservations read back
from focus_costs each time billing data lands: coverage and utilisation per commitment,
cloud, account, family and team; the expiry calendar with alerts 30 and 7 days before an end
and under the utilisation floor; purchase advice for 1- and 3-year terms (advice only:
nothing is bought). See docs/commitments.md."""

from finops.orchestration.commitments import build_commitments_dag

dag = build_commitments_dag(__doc__)

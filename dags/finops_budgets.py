"""Airflow DAG finops_budgets: month-end forecasts per team / service / account (80 % / 95 %
intervals) and the budgets of finops.yaml, each time finops_showback has allocated a billing
load (finops://showback). A budget threshold crossed on actual or on forecast spend alerts its
team's routes once per month; see docs/budgets-and-forecasts.md."""

from finops.orchestration.budgets_dag import build_budgets_dag

dag = build_budgets_dag(__doc__)

"""Airflow DAG finops_report_monthly: the monthly showback report per team (HTML with a
chart + CSV) saved under FINOPS_HOME/reports/<period>/<team>-<view>.html|.csv and e-mailed to each team's route."""

from finops.orchestration.report_dag import build_report_dag

dag = build_report_dag(__doc__)

"""Training jobs run where they are cheapest: a typed job spec, a pure planner, a checkpoint
library that runs on the training host, and providers that launch attempts.

Nothing here imports Airflow; operators and DAGs wire these pieces at the edge."""

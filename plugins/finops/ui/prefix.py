"""Where the FinOps view is mounted in the Airflow UI, in a module of its own so the pages that
build links (links.py, quarantine_docs.py) need not import the app that mounts them."""

URL_PREFIX = "/finops"

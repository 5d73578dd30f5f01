# Airflow 3.3 image with airflow-finops installed (used by docker-compose.yaml).
# It installs requirements-runtime.lock only: the runtime closure of pyproject.toml (core +
# celery), pinned to the versions the test suite runs against. The dev / test lock
# (requirements.lock: pytest, moto, playwright, ruff, ...) never enters the image.
FROM apache/airflow:3.3.2-python3.11
USER airflow
COPY --chown=airflow:root pyproject.toml requirements-runtime.lock README.md /opt/finops/
COPY --chown=airflow:root plugins /opt/finops/plugins
RUN pip install --no-cache-dir -r /opt/finops/requirements-runtime.lock \
 && pip install --no-cache-dir --no-deps /opt/finops

# Airflow 3.3 image with airflow-finops installed (used by docker-compose.yaml).
FROM apache/airflow:3.3.2-python3.11
USER airflow
COPY --chown=airflow:root pyproject.toml requirements.lock README.md /opt/finops/
COPY --chown=airflow:root plugins /opt/finops/plugins
RUN pip install --no-cache-dir -r /opt/finops/requirements.lock \
 && pip install --no-cache-dir --no-deps /opt/finops

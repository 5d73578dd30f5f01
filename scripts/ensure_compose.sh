#!/usr/bin/env bash
# tests/test_docker_compose.py renders docker-compose.yaml with a real Compose: the Docker CLI's
# `docker compose` plugin where installed, else Debian's docker-compose (installed here; Compose
# needs no Docker engine to validate and interpolate a file).
set -u
docker compose version >/dev/null 2>&1 && exit 0
command -v docker-compose >/dev/null && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing Debian docker-compose for the compose test..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose) >/tmp/finops-compose-install.log 2>&1
fi
command -v docker-compose >/dev/null && exit 0
echo "ERROR: Docker Compose is required by tests/test_docker_compose.py (install the docker compose plugin, or apt-get install docker-compose; log: /tmp/finops-compose-install.log)"
exit 1

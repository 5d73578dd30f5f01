#!/usr/bin/env bash
# PostgreSQL and Redis are needed by the warehouse and distributed-executor tests.
# Start them if installed but stopped; otherwise say precisely what is missing and fail.
# Never a silent skip.
set -u
PGHOST=${FINOPS_TEST_PG_HOST:-127.0.0.1}; PGPORT=${FINOPS_TEST_PG_PORT:-5432}
REDIS_PORT=${FINOPS_TEST_REDIS_PORT:-6379}
ok=1

pg_up() { (exec 3<>/dev/tcp/$PGHOST/$PGPORT) 2>/dev/null; }
# Listening is not enough: the tests log in as postgres without a password (or with FINOPS_TEST_PG_DSN).
pg_login() {
  if [ -n "${FINOPS_TEST_PG_DSN:-}" ]; then psql "$FINOPS_TEST_PG_DSN" -w -tAc "SELECT 1" >/dev/null 2>&1
  else psql -h "$PGHOST" -p "$PGPORT" -U postgres -d postgres -w -tAc "SELECT 1" >/dev/null 2>&1; fi
}
redis_up() { [ "$( (exec 3<>/dev/tcp/127.0.0.1/$REDIS_PORT; printf 'PING\r\n' >&3; timeout 2 head -c 5 <&3) 2>/dev/null)" = "+PONG" ]; }

if ! pg_up; then
  echo "PostgreSQL not reachable on $PGHOST:$PGPORT; trying to start it..."
  if command -v pg_ctlcluster >/dev/null 2>&1; then
    for v in $(ls /etc/postgresql 2>/dev/null); do pg_ctlcluster --skip-systemctl-redirect "$v" main start 2>/dev/null || true; done
  elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing postgresql from Debian packages..."
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >/dev/null 2>&1 || true
    for v in $(ls /etc/postgresql 2>/dev/null); do
      # A cluster we just created for the tests: Debian's default is scram-sha-256 on TCP and the
      # postgres role has no password, so open loopback to the test user (trust), as documented.
      hba=/etc/postgresql/$v/main/pg_hba.conf
      [ -f "$hba" ] && sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
      pg_ctlcluster --skip-systemctl-redirect "$v" main start 2>/dev/null \
        || pg_ctlcluster --skip-systemctl-redirect "$v" main reload 2>/dev/null || true
    done
  fi
  for _ in $(seq 1 20); do pg_up && break; sleep 0.5; done
fi
if pg_up && ! pg_login; then
  echo "ERROR: PostgreSQL on $PGHOST:$PGPORT is up but refuses the tests' login (user postgres, no password)."
  echo "       Allow it on loopback: add 'host all all 127.0.0.1/32 trust' at the top of pg_hba.conf and"
  echo "       reload (pg_ctlcluster <ver> main reload), or set FINOPS_TEST_PG_DSN to a DSN that logs in."
  ok=0
elif pg_up; then
  if [ -z "${FINOPS_TEST_PG_DSN:-}" ]; then
    psql -h "$PGHOST" -p "$PGPORT" -U postgres -d postgres -w -tAc "SELECT 1 FROM pg_database WHERE datname='test'" 2>/dev/null | grep -q 1 \
      || psql -h "$PGHOST" -p "$PGPORT" -U postgres -d postgres -w -c "CREATE DATABASE test" >/dev/null 2>&1 || true
  fi
else
  echo "ERROR: PostgreSQL is required on $PGHOST:$PGPORT (trust auth, database 'test')."
  echo "       Install it (apt-get install postgresql) and start it (pg_ctlcluster <ver> main start),"
  echo "       or point FINOPS_TEST_PG_HOST / FINOPS_TEST_PG_PORT at one."
  ok=0
fi

if ! redis_up; then
  echo "Redis not reachable on 127.0.0.1:$REDIS_PORT; trying to start it..."
  if ! command -v redis-server >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >/dev/null 2>&1 || true
  fi
  if command -v redis-server >/dev/null 2>&1; then
    redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no >/dev/null 2>&1 || true
    for _ in $(seq 1 20); do redis_up && break; sleep 0.25; done
  fi
fi
if ! redis_up; then
  echo "ERROR: Redis is required on 127.0.0.1:$REDIS_PORT (the Celery broker of the distributed test)."
  echo "       Install it (apt-get install redis-server) and start it (redis-server --daemonize yes)."
  ok=0
fi
[ $ok = 1 ] && echo "services: PostgreSQL $PGHOST:$PGPORT and Redis 127.0.0.1:$REDIS_PORT are up"
[ $ok = 1 ]

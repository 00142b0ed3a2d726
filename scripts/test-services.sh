#!/usr/bin/env bash
# Start (or stop) the throwaway services the test suite needs, on 127.0.0.1 only:
#   a PostgreSQL 15 cluster and a Redis server, both under $MEMOIR_TEST_RUN (default .tmp/services).
# Usage: scripts/test-services.sh start   -> prints `export ...` lines for the URLs
#        scripts/test-services.sh stop
# Installs the Debian packages when the binaries are missing (as root, apt-get), and Debian's
# chromium for the browser suite (tests/web drives it through Playwright; no browser download).
set -euo pipefail
cmd=${1:-start}
root=$(cd "$(dirname "$0")/.." && pwd)
run=${MEMOIR_TEST_RUN:-$root/.tmp/services}
pg_port=${MEMOIR_TEST_PG_PORT:-54329}
redis_port=${MEMOIR_TEST_REDIS_PORT:-63799}

pg_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  return 1
}

as_pg() {
  if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

ensure_packages() {
  local need=()
  pg_bin >/dev/null || need+=(postgresql)
  command -v redis-server >/dev/null || need+=(redis-server)
  [ -x /usr/bin/chromium ] || need+=(chromium fonts-dejavu-core)
  if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]} from apt" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
    # Debian starts services on install; we run our own on other ports.
    (service postgresql stop || true) >/dev/null 2>&1
    (service redis-server stop || true) >/dev/null 2>&1
  fi
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {  # the first port from $1 on that nothing listens on
  local p=$1
  while port_busy "$p"; do p=$((p + 1)); done
  echo "$p"
}

start() {
  ensure_packages
  mkdir -p "$run"
  if [ ! -f "$run/pg/postmaster.pid" ]; then pg_port=$(free_port "$pg_port"); fi
  redis_port=$(free_port "$redis_port")
  local bin; bin=$(pg_bin)
  local pgdata="$run/pg"
  if [ "$(id -u)" = "0" ]; then chown postgres "$run"; fi
  if [ ! -f "$pgdata/PG_VERSION" ]; then
    as_pg "$bin/initdb" -D "$pgdata" -U memoir --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
  fi
  if ! as_pg "$bin/pg_ctl" -D "$pgdata" status >/dev/null 2>&1; then
    # no autovacuum: a plan a test explains then depends on that test alone, never on when
    # autovacuum last sampled a table an earlier test filled (the suite's schemas are
    # recycled); a bench that needs statistics runs ANALYZE itself
    as_pg "$bin/pg_ctl" -D "$pgdata" -l "$run/pg.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $pg_port -k $run -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c autovacuum=off -c max_connections=200" \
      start >/dev/null
  fi
  redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
    --daemonize yes --pidfile "$run/redis.pid" --logfile "$run/redis.log" --dir "$run" >/dev/null
  for _ in $(seq 1 50); do
    redis-cli -h 127.0.0.1 -p "$redis_port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  echo "export MEMOIR_TEST_PG_URL=postgresql://memoir@127.0.0.1:$pg_port/postgres"
  echo "export MEMOIR_TEST_REDIS_URL=redis://127.0.0.1:$redis_port/0"
}

stop() {
  local bin
  if bin=$(pg_bin) && [ -f "$run/pg/PG_VERSION" ]; then
    as_pg "$bin/pg_ctl" -D "$run/pg" -m fast -w stop >/dev/null 2>&1 || true
  fi
  if [ -f "$run/redis.pid" ]; then
    kill "$(cat "$run/redis.pid")" 2>/dev/null || true
    rm -f "$run/redis.pid"
  fi
  rm -rf "$run"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac

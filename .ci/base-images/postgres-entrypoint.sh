#!/usr/bin/env bash
# Reduced stand-in for the official postgres image's docker-entrypoint.sh: the
# part compose.yaml relies on. On a first start (no $PGDATA/PG_VERSION) it runs
# initdb with POSTGRES_USER (default postgres) and POSTGRES_PASSWORD or
# POSTGRES_PASSWORD_FILE, allows password logins (scram-sha-256) from any host,
# creates POSTGRES_DB (default: the user's name) on a socket-only temporary
# server, then execs the server as user postgres. Not carried over:
# /docker-entrypoint-initdb.d, POSTGRES_INITDB_ARGS, POSTGRES_HOST_AUTH_METHOD.
set -Eeuo pipefail

# VAR or VAR_FILE (the file's content), never both.
file_env() {
  local var="$1" file_var="${1}_FILE" default="${2:-}"
  if [ -n "${!var:-}" ] && [ -n "${!file_var:-}" ]; then
    echo >&2 "error: both $var and $file_var are set (but are exclusive)"
    exit 1
  fi
  local value="$default"
  if [ -n "${!var:-}" ]; then
    value="${!var}"
  elif [ -n "${!file_var:-}" ]; then
    value="$(<"${!file_var}")"
  fi
  export "$var"="$value"
  unset "$file_var"
}

if [ "${1:0:1}" = '-' ]; then
  set -- postgres "$@"
fi

if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$BASH_SOURCE" "$@"
fi

if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  file_env POSTGRES_PASSWORD
  file_env POSTGRES_USER postgres
  file_env POSTGRES_DB "$POSTGRES_USER"
  if [ -z "$POSTGRES_PASSWORD" ]; then
    echo >&2 'error: database is uninitialized and no superuser password is given (POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE)'
    exit 1
  fi
  initdb --username="$POSTGRES_USER" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") --auth-local=trust --auth-host=scram-sha-256
  printf '\nhost all all all scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start
  if [ "$POSTGRES_DB" != postgres ]; then
    psql -v ON_ERROR_STOP=1 --no-password --no-psqlrc --username="$POSTGRES_USER" --dbname=postgres \
      --set db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";'
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop
  unset POSTGRES_PASSWORD
  echo 'PostgreSQL init process complete; ready for start up.'
fi

exec "$@"

#!/usr/bin/env bash
# What `npm test` needs on a machine of this project's kind that may not be running or installed:
# Redis, PostgreSQL, MariaDB and RabbitMQ (started if down), and Debian's Chromium for the
# dashboard's browser tests (installed if missing; never a browser download). Run as root; Jest's
# global setup (test/support/prerequisites.mjs) runs it when something is missing, and .ci/run
# before the suite.
set -euo pipefail

up() { (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if ! up 6379; then
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
fi
if ! up 5432; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
fi
if ! up 3306; then
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
fi
if ! up 5672; then
  rabbitmq-server -detached
fi
# MariaDB and RabbitMQ take a while: wait up to a minute for each port to answer.
for port in 6379 5432 3306 5672; do
  for _ in $(seq 60); do up "$port" && break; sleep 1; done
  up "$port" || { echo "port $port still does not answer after a minute" >&2; exit 1; }
done

if ! command -v chromium >/dev/null 2>&1; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
fi

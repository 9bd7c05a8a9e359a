#!/usr/bin/env bash
# Prepare the local services the integration tests use: start PostgreSQL and Redis when installed but not
# running, and install Debian's headless Chromium (HTML report rendering) where we are root with apt-get.
# Tests that need a service skip when it is absent (and fail when CI=true), so this never fails the build.
set -u
if command -v pg_ctlcluster >/dev/null 2>&1 && ! pg_isready -q -h 127.0.0.1 2>/dev/null; then
    for version in /etc/postgresql/*; do
        pg_ctlcluster --skip-systemctl-redirect "$(basename "$version")" main start 2>/dev/null || true
    done
fi
if command -v redis-server >/dev/null 2>&1 && ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
        --dir /var/lib/redis --logfile /var/log/redis/ci.log >/dev/null 2>&1 || true
fi
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's chromium for the HTML report test (once)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 || true
fi
exit 0

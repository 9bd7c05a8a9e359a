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
# pgvector for the memory tests (vector(384) + HNSW): Debian 12 has no package, so build the vendored source
# (../shared/vendor/pgvector) in a temporary copy, once, where we are root and the server headers can be installed.
vendor="${AGENTCORE_SHARED_DIR:-$(dirname "$0")/../../shared}/vendor/pgvector"
if command -v pg_config >/dev/null 2>&1 || [ -d /usr/lib/postgresql ]; then
    for pgbin in /usr/lib/postgresql/*/bin; do
        version="$(basename "$(dirname "$pgbin")")"
        if [ ! -f "/usr/share/postgresql/$version/extension/vector.control" ] && [ -d "$vendor" ] \
            && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            echo "building the vendored pgvector for PostgreSQL $version (once)"
            build="$(mktemp -d)"
            (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "postgresql-server-dev-$version" make gcc \
                || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
                    "postgresql-server-dev-$version" make gcc)) >/dev/null 2>&1 \
                && cp -r "$vendor/." "$build" \
                && make -C "$build" PG_CONFIG="$pgbin/pg_config" >/dev/null 2>&1 \
                && make -C "$build" PG_CONFIG="$pgbin/pg_config" install >/dev/null 2>&1 \
                || echo "pgvector build failed; the memory tests use the path without it"
            rm -rf "$build"
        fi
    done
fi
exit 0

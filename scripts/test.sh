#!/usr/bin/env bash
# Install everything the test suite needs into .venv and run all checks and tests.
# Usage: bash scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev]'
# Browser tests drive Debian's chromium (never a downloaded browser).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian chromium for the browser tests" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "could not install chromium; browser tests will report it" >&2
  fi
fi
# The PgBouncer tests start Debian's pgbouncer (never a downloaded one) in front of a private
# Postgres.
if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian pgbouncer for the pooler tests" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null) \
      || echo "could not install pgbouncer; the pooler tests will report it" >&2
  fi
fi
echo "== ruff" && .venv/bin/ruff check src tests bench examples
echo "== mypy --strict" && .venv/bin/mypy src
# Two test processes (pytest-xdist): much of the suite waits on subprocesses, installs and
# the disk, so two share two cores well. INTERLOCK_TEST_WORKERS=0 runs it in one process.
# --durations: the 25 slowest tests are listed at the end, to keep the suite's time in view.
echo "== pytest" && .venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 \
  -n "${INTERLOCK_TEST_WORKERS:-2}" "$@"

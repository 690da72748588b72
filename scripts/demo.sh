#!/usr/bin/env bash
# Install interlock with the server extra into .venv and start the demo (`interlock demo`):
# a sample operations agent whose SQL, e-mails and questions wait for you in the web inbox.
# Arguments are passed on, e.g.: bash scripts/demo.sh --port 0 --no-browser
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "interlock needs Python 3.11 or newer; '$PY' is older or missing." \
         "Run with PYTHON=/path/to/python3.11 bash scripts/demo.sh" >&2
    exit 1
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[server]'
exec .venv/bin/interlock demo "$@"

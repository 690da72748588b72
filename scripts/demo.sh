#!/usr/bin/env bash
# Install interlock with the server extra into .venv and start the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[server]'
exec .venv/bin/python examples/quickstart.py "$@"

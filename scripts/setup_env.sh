#!/usr/bin/env bash
# Create (or reuse) the project virtualenv and install helm-roboreward into it.
# Usage: scripts/setup_env.sh [extras]   e.g. scripts/setup_env.sh test,dev
# Re-running is cheap: nothing is reinstalled unless setup.cfg or the extras changed.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${ROBOREWARD_VENV:-.venv}"
EXTRAS="${1:-}"
PYTHON="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating virtualenv $VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
fi

STAMP="$VENV/.roboreward-installed"
WANT="$(cat setup.cfg pyproject.toml | sha256sum | cut -c1-16)-$EXTRAS"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  SPEC="."
  if [ -n "$EXTRAS" ]; then SPEC=".[$EXTRAS]"; fi
  echo "[setup] installing helm-roboreward $SPEC (first time: crfm-helm and torch, a few minutes)"
  "$VENV/bin/python" -m pip install --quiet -e "$SPEC"
  echo "$WANT" > "$STAMP"
fi

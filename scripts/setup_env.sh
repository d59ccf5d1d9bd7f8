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
# The stamp holds the hash of setup.cfg + pyproject.toml and the extras installed so far: asking for extras already
# installed (scripts/demo's [report] after scripts/test's) reinstalls nothing; new ones are added to the old.
HASH="$(cat setup.cfg pyproject.toml | sha256sum | cut -c1-16)"
HAVE_HASH=""; HAVE_EXTRAS=""
if [ -f "$STAMP" ]; then HAVE_HASH="$(cut -d' ' -f1 "$STAMP")"; HAVE_EXTRAS="$(cut -s -d' ' -f2 "$STAMP")"; fi
if [ "$HAVE_HASH" != "$HASH" ]; then HAVE_EXTRAS=""; fi
ALL="$(printf '%s\n' ${HAVE_EXTRAS//,/ } ${EXTRAS//,/ } | sort -u | paste -sd, -)"
if [ "$HAVE_HASH" != "$HASH" ] || [ "$ALL" != "$HAVE_EXTRAS" ]; then
  SPEC="."
  if [ -n "$ALL" ]; then SPEC=".[$ALL]"; fi
  echo "[setup] installing helm-roboreward $SPEC (first time: crfm-helm and torch, a few minutes)"
  # PYTHONWARNINGS: setuptools' "Editable installation" BuildBackendWarning (ten lines, nothing to act on)
  PYTHONWARNINGS=ignore "$VENV/bin/python" -m pip install --quiet -e "$SPEC"
  echo "$HASH $ALL" > "$STAMP"
fi

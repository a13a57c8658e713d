#!/usr/bin/env bash
# Lint the repository: yamllint on every YAML file (.yamllint), ansible-lint with the production
# profile (.ansible-lint), offline, and vermin: the code that runs on managed nodes
# (plugins/modules, plugins/module_utils) must run on Python 3.8. All run from .venv (VENV=...).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
VENV="${VENV:-.venv}"
for tool in yamllint ansible-lint vermin; do
    [ -x "$VENV/bin/$tool" ] || { echo "[lint] ERROR: $VENV/bin/$tool missing; run make setup" >&2; exit 1; }
done
export PATH="$ROOT/$VENV/bin:$PATH"
# ansible-lint checks for newer releases of itself unless told not to.
export ANSIBLE_LINT_SKIP_VERSION_CHECK=1 ANSIBLE_LINT_NODEPS="${ANSIBLE_LINT_NODEPS:-0}"

# Plain text when the output is a log, not a terminal.
color=()
if [ ! -t 1 ]; then color=(--nocolor); export NO_COLOR=1; fi

failed=0
echo "[lint] yamllint $("$VENV/bin/yamllint" --version | awk '{print $2}')"
if "$VENV/bin/yamllint" --strict --format parsable .; then
    echo "[lint] yamllint: passed"
else
    echo "[lint] yamllint: FAILED"
    failed=1
fi

echo "[lint] $("$VENV/bin/ansible-lint" --version 2>/dev/null | head -1)"
if "$VENV/bin/ansible-lint" "${color[@]}" --offline "$@"; then
    echo "[lint] ansible-lint: passed"
else
    echo "[lint] ansible-lint: FAILED"
    failed=1
fi
target_code=()
for d in plugins/modules plugins/module_utils; do [ -d "$d" ] && target_code+=("$d"); done
if [ "${#target_code[@]}" -gt 0 ]; then
    echo "[lint] vermin $("$VENV/bin/vermin" --version): Python 3.8 compatibility of ${target_code[*]}"
    if "$VENV/bin/vermin" --quiet --no-tips --violations --eval-annotations -t=3.8- "${target_code[@]}"; then
        echo "[lint] vermin: passed"
    else
        echo "[lint] vermin: FAILED (constructs newer than Python 3.8 above)"
        failed=1
    fi
fi
exit "$failed"

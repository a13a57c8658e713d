#!/usr/bin/env bash
# Run `ansible-test sanity` on the collection, offline except for PyPI.
#
# ansible-test only runs on a tree at <dir>/ansible_collections/xuanwu/cluster and only reads files
# that git tracks there. This script therefore builds such a tree in a temporary folder from the
# files git tracks here, taken from the working tree (uncommitted edits to tracked files are
# tested; files never `git add`ed are not; set SANITY_UNTRACKED=1 to include untracked files that
# .gitignore does not exclude), and commits it in a throw-away repository.
#
# ansible-test bootstraps pip in each of its test venvs with a get-pip script that it downloads
# from a host that is not a package registry. A stand-in is saved where ansible-test looks for a
# cached copy: it runs ensurepip, then `pip install` with the same arguments (from PyPI).
#
# Environment: VENV (default .venv), SANITY_PYTHON (default: the venv's Python version),
# SANITY_ARGS (extra ansible-test arguments, e.g. "--test pylint"), KEEP_SANITY_TREE=1.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${VENV:-.venv}"
VENV="$(cd "$VENV" && pwd)" || { echo "[sanity] ERROR: no venv at ${VENV}; run make setup" >&2; exit 1; }
PY="$VENV/bin/python"
[ -x "$VENV/bin/ansible-test" ] || { echo "[sanity] ERROR: $VENV has no ansible-test; run make setup" >&2; exit 1; }
SANITY_PYTHON="${SANITY_PYTHON:-$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')}"

log() { printf '[sanity] %s\n' "$*"; }

# 1. The pip bootstrap stand-in, under the name the installed ansible-test asks for.
PIP_VERSION="$("$PY" - <<'EOF'
import os
import re
import ansible_test
src = os.path.join(os.path.dirname(ansible_test.__file__), '_internal', 'python_requirements.py')
with open(src) as handle:
    match = re.search(r"default_packages = dict\(\s*pip='([0-9.]+)'", handle.read())
print(match.group(1) if match else '')
EOF
)"
[ -n "$PIP_VERSION" ] || { echo "[sanity] ERROR: cannot find the pip version that ansible-test bootstraps" >&2; exit 1; }
CACHE_DIR="$HOME/.ansible/test/cache"
GET_PIP="$CACHE_DIR/get_pip_${PIP_VERSION//./_}.py"
mkdir -p "$CACHE_DIR"
cat > "$GET_PIP.tmp" <<'EOF'
"""Offline stand-in for get-pip.py (written by xuanwu.cluster's scripts/sanity.sh).

ansible-test runs this file as a script with pip-install options and package specs as arguments.
Install pip from the interpreter's own ensurepip, then let that pip install the requested
packages (from the package index configured for pip).
"""
import subprocess
import sys

subprocess.check_call([sys.executable, '-m', 'ensurepip', '--upgrade', '--default-pip'])
args = [arg for arg in sys.argv[1:] if arg not in ('--no-setuptools', '--no-wheel')]
sys.exit(subprocess.call([sys.executable, '-m', 'pip', 'install'] + args))
EOF
mv "$GET_PIP.tmp" "$GET_PIP"

# 2. The collection tree at <tmp>/ansible_collections/xuanwu/cluster, as git tracks it.
WORK="$(mktemp -d "${TMPDIR:-/tmp}/xuanwu-sanity.XXXXXX")"
# shellcheck disable=SC2317  # called through the EXIT trap
cleanup() { if [ "${KEEP_SANITY_TREE:-0}" = 1 ]; then log "tree kept at $WORK"; else rm -rf "$WORK"; fi; }
trap cleanup EXIT
TREE="$WORK/ansible_collections/xuanwu/cluster"
mkdir -p "$TREE"
list_files() {
    git ls-files -z --cached
    if [ "${SANITY_UNTRACKED:-0}" = 1 ]; then git ls-files -z --others --exclude-standard; fi
}
# Skip tracked files deleted in the working tree.
list_files | while IFS= read -r -d '' f; do
    if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
done | tar --null -T - -cf - | tar -C "$TREE" -xf -
git -C "$TREE" init -q
git -C "$TREE" add -A
git -C "$TREE" -c user.name=sanity -c user.email=sanity@localhost -c commit.gpgsign=false commit -q -m "sanity tree" --allow-empty
log "testing $(git -C "$TREE" ls-files | wc -l) files (HEAD $(git rev-parse --short HEAD 2>/dev/null || echo none) plus working-tree edits) with $("$VENV/bin/ansible-test" --version) on Python $SANITY_PYTHON"

# 3. Run.
cd "$TREE"
set +e
# shellcheck disable=SC2086
PATH="$VENV/bin:$PATH" "$VENV/bin/ansible-test" sanity --python "$SANITY_PYTHON" --requirements --color no ${SANITY_ARGS:-} 2>&1 | tee "$WORK/sanity.log"
rc=${PIPESTATUS[0]}
set -e
cd "$ROOT"

echo
echo "===== ansible-test sanity summary ====="
ran="$(grep -c '^Running sanity test' "$WORK/sanity.log" || true)"
echo "tests run: $ran"
if [ "$rc" -eq 0 ]; then
    echo "result: passed"
else
    echo "result: FAILED (exit $rc)"
    grep -E '^ERROR: (Found [0-9]+ |Command )' "$WORK/sanity.log" || true
    awk '/^FATAL: The [0-9]+ sanity test/ {p = 1} p' "$WORK/sanity.log"
    if [ -d "$TREE/tests/output/bot" ]; then
        mkdir -p tests/output
        rm -rf tests/output/sanity-bot
        cp -r "$TREE/tests/output/bot" tests/output/sanity-bot
        echo "details: tests/output/sanity-bot/"
    fi
fi
exit "$rc"

#!/usr/bin/env bash
# Build the controller package's wheel (src/xuanwu: the `xuanwu` command and service, `xuanwu-run-diff`):
# OUTDIR/xuanwu-<version>-py3-none-any.whl, <version> being pyproject.toml's (galaxy.yml's). The collection's
# tarball leaves the package out; a user of the collection installs this wheel with pip.
#
# Usage: scripts/build-wheel.sh [OUTDIR]   (default dist; `make wheel`)
# Environment: PYTHON (default .venv/bin/python if present, else python3) runs pip. Where it has setuptools the
#   build uses it and needs no network (--no-build-isolation), else pip fetches setuptools from the index.
#
# The wheel is built from a copy of pyproject.toml and src/ (no __pycache__, no egg-info), so that nothing a
# build leaves behind (build/, *.egg-info) lands in the checkout or in a later wheel.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUTDIR="${1:-$ROOT/dist}"
mkdir -p "$OUTDIR"
OUTDIR="$(cd "$OUTDIR" && pwd)"
if [ -z "${PYTHON:-}" ]; then
    if [ -x "$ROOT/.venv/bin/python" ]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$ROOT/pyproject.toml" "$work/"
mkdir "$work/src"
cp -R "$ROOT/src/xuanwu" "$work/src/"
find "$work/src" \( -name __pycache__ -o -name '*.egg-info' \) -prune -exec rm -rf {} +

isolation=()
"$PYTHON" -c 'import setuptools' 2>/dev/null && isolation=(--no-build-isolation)
"$PYTHON" -m pip wheel --disable-pip-version-check --quiet --no-deps "${isolation[@]}" -w "$OUTDIR" "$work"
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/pyproject.toml")"
wheel="$OUTDIR/xuanwu-$version-py3-none-any.whl"
[ -f "$wheel" ] || { echo "[wheel] ERROR: pip wheel made no $wheel" >&2; exit 1; }
echo "[wheel] $wheel"

#!/usr/bin/env bash
# Create the development environments of this repository. Safe to run again: a venv is only
# (re)installed when its requirement files changed or it is broken.
#
#   .venv       ansible-core 2.19 + community bundle + pytest, hypothesis, ansible-lint, yamllint
#   .venv-2.16  ansible-core 2.16 (the oldest supported controller) + pytest, hypothesis
#   .collections/ansible_collections/xuanwu/cluster -> the repository itself, so that
#               ansible.cfg's collections_path makes `xuanwu.cluster` importable by ansible
#   .collections/bundle -> .venv's site-packages, so that every controller venv sees the
#               collections of the community bundle (community.general, ansible.posix, ...)
#
# Environment: PYTHON (default: python3 from PATH), SETUP_SKIP_216=1 to skip .venv-2.16.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-python3}"
MIN_PY="3.11"   # ansible-core 2.19 (the main controller) needs Python 3.11 or newer

log() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }

command -v "$PYTHON" >/dev/null 2>&1 || die "'$PYTHON' not found on PATH; install Python >= $MIN_PY (Debian/Ubuntu: apt-get install python3 python3-venv)"
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
    die "$("$PYTHON" -c 'import sys; print(sys.version.split()[0])') is too old: the controller venvs need Python >= $MIN_PY (ansible-core 2.19 requires it). Set PYTHON=/path/to/python3.11+"
fi
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null || die "$PYTHON lacks the venv/ensurepip modules (Debian/Ubuntu: apt-get install python3-venv)"

PIP_FLAGS=(--disable-pip-version-check --progress-bar off --quiet)

# make_venv DIR REQUIREMENT_FILE...
make_venv() {
    local dir="$1"; shift
    local req_args=() f
    for f in "$@"; do req_args+=(-r "$f"); done
    # The stamp covers the requirement files (and those they include) and the interpreter version.
    local want
    want="$( (cat requirements/*.txt; "$PYTHON" -c 'import sys; print(sys.version)'; echo "$*") | sha256sum | cut -d' ' -f1)"
    if [ -x "$dir/bin/python" ] && "$dir/bin/python" -c 'import sys' 2>/dev/null \
        && [ -f "$dir/.requirements.sha256" ] && [ "$(cat "$dir/.requirements.sha256")" = "$want" ]; then
        log "$dir is up to date"
        touch "$dir/.requirements.sha256"
        return 0
    fi
    if [ ! -x "$dir/bin/python" ] || ! "$dir/bin/python" -c 'import sys' 2>/dev/null; then
        log "creating $dir with $("$PYTHON" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
        rm -rf "$dir"
        "$PYTHON" -m venv "$dir"
    fi
    log "installing $* into $dir"
    "$dir/bin/python" -m pip install "${PIP_FLAGS[@]}" "${req_args[@]}"
    "$dir/bin/python" -m pip check >/dev/null || { "$dir/bin/python" -m pip check; die "inconsistent packages in $dir"; }
    echo "$want" > "$dir/.requirements.sha256"
}

make_venv .venv requirements/controller.txt requirements/test.txt
if [ "${SETUP_SKIP_216:-0}" != 1 ]; then
    make_venv .venv-2.16 requirements/controller-2.16.txt requirements/test-base.txt
fi

# The controller-side package (src/xuanwu, the `xuanwu` and `xuanwu-run-diff` commands), editable, into the main
# venv; its dependencies come from requirements/service.txt above. Again when a command of pyproject.toml is missing.
if ! .venv/bin/python -c 'import sys, xuanwu; sys.exit(0 if xuanwu.__file__.startswith(sys.argv[1]) else 1)' "$ROOT/src/" 2>/dev/null \
    || [ ! -x .venv/bin/xuanwu-run-diff ]; then
    log "installing the xuanwu package (src/) into .venv"
    .venv/bin/python -m pip install "${PIP_FLAGS[@]}" --no-deps -e .
fi

# The collection, importable as xuanwu.cluster through ansible.cfg's collections_path.
mkdir -p .collections/ansible_collections/xuanwu
ln -sfn ../../.. .collections/ansible_collections/xuanwu/cluster
SITE="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
ln -sfn "$(realpath --relative-to=.collections "$SITE")" .collections/bundle
[ -f .collections/ansible_collections/xuanwu/cluster/galaxy.yml ] || die ".collections link is broken"
[ -d .collections/bundle/ansible_collections/community/general ] || die "community bundle not found in $SITE"

mkdir -p .cache
log "done: $(.venv/bin/ansible --version | sed -n 1p)$( [ -x .venv-2.16/bin/ansible ] && echo "; $(.venv-2.16/bin/ansible --version | sed -n 1p)")"

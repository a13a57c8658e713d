#!/usr/bin/env bash
# Download the wheels needed to run ansible-core on a GPU host that has no package registry
# (see scripts/gpu-host-run.sh): ansible-core and everything it depends on (resolvelib,
# cryptography, cffi, pycparser, PyYAML, Jinja2, MarkupSafe, packaging), as binary wheels for
# CPython on x86_64 Linux. Run it on a machine that reaches PyPI, then copy the checkout,
# wheels/ included, to the GPU host.
#
# Usage: scripts/fetch-gpu-host-wheels.sh [--python-version 3.12] [--dest DIR] [--with-bundle]
#                                          [--ansible-core VERSION]
#   --python-version  the GPU host's Python (default 3.12)
#   --ansible-core    another ansible-core release than requirements/controller.txt pins (e.g.
#                     2.16.19 for a host with Python 3.10; the bundle is then not available)
#   --dest            where to put the wheels (default wheels/gpu-host; for another Python
#                     version: wheels/gpu-host-py<XY>)
#   --with-bundle     also download the community bundle (ansible==12.3.0, about 50 MB) for
#                     playbooks that use community.general or ansible.posix
# Environment: PYTHON (default: .venv/bin/python if present, else python3) runs pip.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYVER=3.12
DEST=""
BUNDLE=0
CORE_VERSION=""
while [ $# -gt 0 ]; do
    case "$1" in
        --python-version) PYVER="$2"; shift 2 ;;
        --dest) DEST="$2"; shift 2 ;;
        --with-bundle) BUNDLE=1; shift ;;
        --ansible-core) CORE_VERSION="$2"; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$PYVER" =~ ^3\.[0-9]+$ ]] || { echo "--python-version must look like 3.12" >&2; exit 2; }
ABI="cp${PYVER/./}"
if [ -z "$DEST" ]; then
    if [ "$PYVER" = 3.12 ]; then DEST=wheels/gpu-host; else DEST="wheels/gpu-host-py${PYVER/./}"; fi
fi

ANSIBLE_CORE="$(sed -n 's/^\(ansible-core==[0-9.]*\).*/\1/p' requirements/controller.txt)"
BUNDLE_SPEC="$(sed -n 's/^\(ansible==[0-9.]*\).*/\1/p' requirements/controller.txt)"
[ -n "$ANSIBLE_CORE" ] || { echo "no ansible-core pin in requirements/controller.txt" >&2; exit 1; }
if [ -n "$CORE_VERSION" ]; then
    ANSIBLE_CORE="ansible-core==$CORE_VERSION"
    [ "$BUNDLE" = 0 ] || { echo "--with-bundle needs the ansible-core that requirements/controller.txt pins" >&2; exit 2; }
fi

if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi

specs=("$ANSIBLE_CORE" PyYAML Jinja2 MarkupSafe packaging resolvelib cryptography cffi pycparser)
[ "$BUNDLE" = 1 ] && specs+=("$BUNDLE_SPEC")

mkdir -p "$DEST"
echo "[wheels] $ABI manylinux x86_64 wheels for: ${specs[*]} -> $DEST"
# Platforms are listed oldest glibc first, so that pip prefers the wheel that runs on the most
# hosts (manylinux2014 = glibc 2.17: RHEL/Rocky 8 and newer, Ubuntu 20.04 and newer).
"$PYTHON" -m pip download --disable-pip-version-check --progress-bar off --no-cache-dir \
    --only-binary=:all: --python-version "$PYVER" --implementation cp \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_34_x86_64 \
    --abi "$ABI" --abi abi3 --abi none \
    -d "$DEST" "${specs[@]}"

echo "[wheels] $(find "$DEST" -name '*.whl' | wc -l) wheels, $(du -sh "$DEST" | cut -f1) in $DEST:"
find "$DEST" -name '*.whl' -printf '  %f\n' | sort

#!/usr/bin/env bash
# Run a playbook of the collection xuanwu.cluster on the GPU host itself (connection local), with no
# package registry: ansible-core is installed from wheels (downloaded on a machine that reaches PyPI,
# e.g. by a checkout's scripts/fetch-gpu-host-wheels.sh). The venv is made with --system-site-packages
# so that what the host's Python already has (torch, NCCL bindings, ...) stays importable by the probes.
#
# Usage: gpu-host-run.sh PLAYBOOK [ansible-playbook arguments...]
#   e.g. gpu-host-run.sh playbooks/validate.yml -e xuanwu_profile=h200x2-nvlink
#   PLAYBOOK: a file, from the current folder or else from the collection, or a playbook's FQCN
#   (xuanwu.cluster.validate).
# Environment: PYTHON (default python3; the interpreter whose packages the probes should see),
#   WHEELS (default wheels/gpu-host), GPU_VENV (default .venv-gpu-host; wheels are needed only to
#   create it), INVENTORY (default "localhost,": the playbook must target localhost, all, or a group
#   given with INVENTORY; a file or folder from the current folder or else from the collection, such
#   as inventories/gpu-host).
#
# In a checkout (scripts/gpu-host-run.sh runs this file) the playbook runs in the checkout, WHEELS and
# GPU_VENV are relative to it and the checkout is linked as the collection (.collections/). In an
# installed collection (<dir>/ansible_collections/xuanwu/cluster/files/gpu-host-run.sh, <dir> as
# `ansible-galaxy collection list xuanwu.cluster` prints it) they are relative to the current folder,
# where the playbook runs (its reports/ and runs/ land there), <dir> comes first on the collections
# path, and nothing is written into the collection.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
START="$(pwd)"

[ $# -ge 1 ] || { sed -n '/^# Usage:/,/^#   as inventories/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
PLAYBOOK="$1"; shift

# from_here_or_root PATH: PATH when absolute; else from the current folder if it is there, else from the
# collection if it is there, else PATH as given (empty when it is nowhere).
from_here_or_root() {
    case "$1" in
        /*) [ -e "$1" ] && echo "$1" ;;
        *) if [ -e "$START/$1" ]; then echo "$START/$1"; elif [ -e "$ROOT/$1" ]; then echo "$ROOT/$1"; fi ;;
    esac
    return 0
}

if [ -f "$ROOT/MANIFEST.json" ] && [ ! -f "$ROOT/galaxy.yml" ]; then
    # an installed collection: <dir>/ansible_collections/xuanwu/cluster
    if [ "$(basename "$(dirname "$(dirname "$ROOT")")")" != ansible_collections ]; then
        echo "[gpu-host] ERROR: the collection at $ROOT is not in <dir>/ansible_collections/xuanwu/cluster, where Ansible finds it as xuanwu.cluster; install it with ansible-galaxy collection install -p <dir>" >&2
        exit 2
    fi
    COLLECTIONS="$(cd "$ROOT/../../.." && pwd)"
    WORK="$START"
else
    COLLECTIONS=""
    WORK="$ROOT"
fi

if [[ ! "$PLAYBOOK" =~ ^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_.]*$ ]] || [ -e "$PLAYBOOK" ]; then
    found="$(from_here_or_root "$PLAYBOOK")"
    if [ -z "$found" ] || [ ! -f "$found" ]; then
        echo "[gpu-host] ERROR: no playbook at $PLAYBOOK (looked in $START and $ROOT)" >&2
        exit 2
    fi
    PLAYBOOK="$found"
fi
INVENTORY="${INVENTORY:-localhost,}"
if [[ "$INVENTORY" != *,* ]]; then
    found="$(from_here_or_root "$INVENTORY")"
    [ -z "$found" ] || INVENTORY="$found"
fi

cd "$WORK"
PYTHON="${PYTHON:-python3}"
WHEELS="${WHEELS:-wheels/gpu-host}"
GPU_VENV="${GPU_VENV:-.venv-gpu-host}"

if [ ! -x "$GPU_VENV/bin/ansible-playbook" ]; then
    if ! ls "$WHEELS"/ansible_core-*.whl >/dev/null 2>&1; then
        echo "[gpu-host] ERROR: no ansible-core wheel under $WHEELS (in $WORK) to create $GPU_VENV from; download the wheels on a machine with PyPI access (a checkout's scripts/fetch-gpu-host-wheels.sh) and copy them there, or set WHEELS" >&2
        exit 1
    fi
    if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' && ls "$WHEELS"/ansible_core-2.1[7-9].*.whl >/dev/null 2>&1; then
        echo "[gpu-host] ERROR: $PYTHON is older than 3.11, which the ansible-core under $WHEELS needs; fetch wheels with e.g. --python-version 3.10 --ansible-core 2.16.19" >&2
        exit 1
    fi
    echo "[gpu-host] creating $GPU_VENV from $("$PYTHON" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
    rm -rf "$GPU_VENV"
    "$PYTHON" -m venv --system-site-packages "$GPU_VENV"
    # When PYTHON is itself a venv (torch is often installed in one), --system-site-packages
    # only reaches the base interpreter's packages: add that venv's site-packages through a
    # .pth file. They come after the new venv's own packages on sys.path.
    parent_site="$("$PYTHON" -c 'import site, sys; print("\n".join(site.getsitepackages()) if sys.prefix != sys.base_prefix else "")')"
    if [ -n "$parent_site" ]; then
        own_site="$("$GPU_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
        printf '%s\n' "$parent_site" > "$own_site/xuanwu_host_site.pth"
        echo "[gpu-host] packages of $PYTHON's venv stay visible: $(echo "$parent_site" | tr '\n' ' ')"
    fi
    pkgs=(ansible-core)
    ls "$WHEELS"/ansible-[0-9]*.whl >/dev/null 2>&1 && pkgs+=(ansible)
    # --ignore-installed: the venv gets its own copies even where the host Python already has
    # (possibly older) versions of these packages; the host's other packages stay visible.
    "$GPU_VENV/bin/python" -m pip install --disable-pip-version-check --no-index \
        --find-links "$WHEELS" --ignore-installed "${pkgs[@]}"
fi

VENV_PY="$(cd "$GPU_VENV" && pwd)/bin/python"

if [ -n "$COLLECTIONS" ]; then
    # the installed collection first, then where Ansible looks anyway (its dependencies may be there)
    export ANSIBLE_COLLECTIONS_PATH="$COLLECTIONS:${ANSIBLE_COLLECTIONS_PATH:-${ANSIBLE_HOME:-$HOME/.ansible}/collections:/usr/share/ansible/collections}"
else
    # The checkout is the collection xuanwu.cluster: link it where collections_path looks.
    mkdir -p .collections/ansible_collections/xuanwu
    ln -sfn ../../.. .collections/ansible_collections/xuanwu/cluster
    export ANSIBLE_COLLECTIONS_PATH="$ROOT/.collections"
fi

echo "[gpu-host] $("$GPU_VENV/bin/ansible-playbook" --version | sed -n 1p) on $(hostname)"
exec "$GPU_VENV/bin/ansible-playbook" -i "$INVENTORY" -c local \
    -e ansible_connection=local -e "ansible_python_interpreter=$VENV_PY" \
    "$PLAYBOOK" "$@"

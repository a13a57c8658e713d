#!/usr/bin/env bash
# Run a playbook of this checkout on the GPU host itself (connection local), with no package
# registry: ansible-core is installed from the wheels that scripts/fetch-gpu-host-wheels.sh put
# under wheels/. The venv is made with --system-site-packages so that what the host's Python
# already has (torch, NCCL bindings, ...) stays importable by the probes.
#
# Usage: scripts/gpu-host-run.sh PLAYBOOK [ansible-playbook arguments...]
#   e.g. scripts/gpu-host-run.sh playbooks/validate.yml -e xuanwu_profile=h200x2-nvlink
# Environment: PYTHON (default python3; the interpreter whose packages the probes should see),
#   WHEELS (default wheels/gpu-host), GPU_VENV (default .venv-gpu-host), INVENTORY (default
#   "localhost,": the playbook must target localhost, all, or a group given with INVENTORY).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

[ $# -ge 1 ] || { sed -n '7,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
PLAYBOOK="$1"; shift
[ -f "$PLAYBOOK" ] || { echo "[gpu-host] ERROR: no playbook at $PLAYBOOK" >&2; exit 2; }

PYTHON="${PYTHON:-python3}"
WHEELS="${WHEELS:-wheels/gpu-host}"
GPU_VENV="${GPU_VENV:-.venv-gpu-host}"
if ! ls "$WHEELS"/ansible_core-*.whl >/dev/null 2>&1; then
    echo "[gpu-host] ERROR: no ansible-core wheel under $WHEELS; run scripts/fetch-gpu-host-wheels.sh on a machine with PyPI access and copy wheels/ here" >&2
    exit 1
fi
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' && ls "$WHEELS"/ansible_core-2.1[7-9].*.whl >/dev/null 2>&1; then
    echo "[gpu-host] ERROR: $PYTHON is older than 3.11, which the ansible-core under $WHEELS needs; fetch wheels with e.g. --python-version 3.10 --ansible-core 2.16.19" >&2
    exit 1
fi

if [ ! -x "$GPU_VENV/bin/ansible-playbook" ]; then
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

# The checkout is the collection xuanwu.cluster: link it where collections_path looks.
mkdir -p .collections/ansible_collections/xuanwu
ln -sfn ../../.. .collections/ansible_collections/xuanwu/cluster
export ANSIBLE_COLLECTIONS_PATH="$ROOT/.collections"

echo "[gpu-host] $("$GPU_VENV/bin/ansible-playbook" --version | sed -n 1p) on $(hostname)"
exec "$GPU_VENV/bin/ansible-playbook" -i "${INVENTORY:-localhost,}" -c local \
    -e ansible_connection=local -e "ansible_python_interpreter=$VENV_PY" \
    "$PLAYBOOK" "$@"

#!/usr/bin/env bash
# Run the molecule scenarios with real containers (podman), MOLECULE_JOBS of them at once:
#
#   scripts/molecule.sh [SCENARIO...]     default: every molecule/*/molecule.yml
#
# Each scenario runs `molecule test` (create, prepare, converge, idempotence, verify, destroy;
# verify also proves that a check-mode run changes nothing) with molecule/shared/base.yml as
# the base configuration. Scenarios run side by side (their containers and networks are named
# after them), each with its output in its own log, .cache/molecule-logs/<scenario>.log; a line
# says when each starts and ends. Then each scenario's time and result, in the order given, and
# `molecule: N passed, N failed`; exits non-zero if any failed. A scenario that is already
# running on this machine (same container names) is waited for, not run alongside.
#
# Needs: root, the image from scripts/build-test-image.sh, and .venv with ansible (make setup);
# molecule itself (requirements/molecule.txt) is installed into .venv here when missing.
# Environment: MOLECULE_PREPARE_ONLY=1 (install molecule, run no scenario), MOLECULE_JOBS (scenarios at once, default 2: a CI machine has 2 cores; 1 runs
# them one after another), VENV (default .venv), MOLECULE_IMAGE (default localhost/debian-ansible:12),
# MOLECULE_ARGS (extra arguments to `molecule test`, e.g. --destroy=never to debug), XUANWU_MOLECULE_LOCK_DIR (the
# machine-wide folder of the scenarios' locks, default /run/lock/xuanwu-molecule).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
VENV="${VENV:-.venv}"
export MOLECULE_IMAGE="${MOLECULE_IMAGE:-localhost/debian-ansible:12}"
BASE_CONFIG=molecule/shared/base.yml
LOG_DIR=.cache/molecule-logs
# One lock per scenario for the whole machine: a folder of root's own (0700, not a link), in /run/lock
# where there is one (cleared at boot), else in /tmp.
LOCK_DIR="${XUANWU_MOLECULE_LOCK_DIR:-$( [ -d /run/lock ] && echo /run/lock || echo /tmp )/xuanwu-molecule}"

log() { printf '[molecule] %s\n' "$*"; }
die() { printf '[molecule] ERROR: %s\n' "$*" >&2; exit 2; }

[ -x "$VENV/bin/ansible-playbook" ] || die "$VENV/bin/ansible-playbook missing: run make setup first"
command -v podman >/dev/null || die "podman not found: run scripts/build-test-image.sh first"
podman image exists "$MOLECULE_IMAGE" || die "image $MOLECULE_IMAGE missing: run scripts/build-test-image.sh"

# molecule and its podman driver, at the pinned versions.
want="$(sed -n 's/^\(molecule[^=#]*\)==\([^ #]*\).*/\1 \2/p' requirements/molecule.txt | sed 's/\[[^]]*\]//' | sort)"
have="$("$VENV/bin/python" - <<'EOF' 2>/dev/null
from importlib import metadata
for name in ("molecule", "molecule-plugins"):
    try:
        print(name, metadata.version(name))
    except metadata.PackageNotFoundError:
        pass
EOF
)"
if [ "$(sort <<<"$have")" != "$want" ]; then
    log "installing requirements/molecule.txt into $VENV"
    "$VENV/bin/python" -m pip install --disable-pip-version-check --progress-bar off --quiet -r requirements/molecule.txt \
        || die "pip install -r requirements/molecule.txt failed"
fi

# `xuanwu.cluster.<role>` resolves to this checkout through .collections (as in ansible.cfg);
# molecule writes an ansible.cfg of its own, so the paths go through the environment.
if [ ! -e .collections/ansible_collections/xuanwu/cluster/galaxy.yml ]; then
    mkdir -p .collections/ansible_collections/xuanwu
    ln -sfn ../../.. .collections/ansible_collections/xuanwu/cluster
fi
export PATH="$ROOT/$VENV/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="$ROOT/.collections"
export ANSIBLE_ROLES_PATH="$ROOT/roles"
export ANSIBLE_FORCE_COLOR="${ANSIBLE_FORCE_COLOR:-0}" PY_COLORS="${PY_COLORS:-0}" NO_COLOR="${NO_COLOR:-1}"
if [ "${MOLECULE_PREPARE_ONLY:-0}" = 1 ]; then
    # scripts/test.py: molecule installed once, before scenarios start side by side in jobs of their own
    log "molecule $(molecule --version 2>/dev/null | head -1 | sed 's/ using.*//') ready; MOLECULE_PREPARE_ONLY=1: no scenario run"
    exit 0
fi

if [ "$#" -gt 0 ]; then
    scenarios=("$@")
else
    # the longest scenarios first (measured: cluster ~600 s, firewall ~450 s, gpu_packages ~300 s,
    # container_toolkit ~390 s on a loaded machine), so that the
    # short ones fill in beside them instead of a long one starting last and running alone
    scenarios=()
    found=()
    for f in molecule/*/molecule.yml; do
        [ -f "$f" ] || continue
        name="$(basename "$(dirname "$f")")"
        [ "$name" = shared ] && continue
        found+=("$name")
    done
    longest=" cluster firewall gpu_packages container_toolkit "
    for name in $longest; do
        for f in "${found[@]}"; do [ "$f" = "$name" ] && scenarios+=("$name"); done
    done
    for f in "${found[@]}"; do
        case "$longest" in *" $f "*) ;; *) scenarios+=("$f") ;; esac
    done
fi
[ "${#scenarios[@]}" -gt 0 ] || die "no scenario under molecule/"
for s in "${scenarios[@]}"; do
    [ -f "molecule/$s/molecule.yml" ] || die "no scenario '$s' (molecule/$s/molecule.yml)"
done

mkdir -p "$LOG_DIR"
mkdir -m 0700 "$LOCK_DIR" 2>/dev/null || true
# another user's folder or a link there could point the lock files (opened for writing) anywhere
if [ -L "$LOCK_DIR" ] || [ ! -d "$LOCK_DIR" ] || [ "$(stat -c %u "$LOCK_DIR")" != "$(id -u)" ]; then
    die "$LOCK_DIR must be a folder of this user's own, not a link (the scenarios' locks for this machine)"
fi
chmod 0700 "$LOCK_DIR"
JOBS="${MOLECULE_JOBS:-2}"
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || die "MOLECULE_JOBS must be a positive number, got '$JOBS'"
RESULT_DIR="$(mktemp -d "${TMPDIR:-/tmp}/molecule-results.XXXXXX")" || die "mktemp failed"
# SSH master connections of this run's containers (molecule/shared/prepare.yml), in a short path: a unix socket's
# path has at most 107 bytes.
XUANWU_MOLECULE_CONTROL_ROOT="$(mktemp -d /tmp/xwm.XXXXXX)" || die "mktemp failed"
export XUANWU_MOLECULE_CONTROL_ROOT
trap 'rm -rf "$RESULT_DIR" "$XUANWU_MOLECULE_CONTROL_ROOT"' EXIT

# One scenario: waits for another run of it on this machine (same container names), runs
# `molecule test` with its output in its own log, and leaves "exit seconds" in RESULT_DIR/<name>.
run_scenario() {
    local s="$1" lock_fd t0 rc dt
    # Container names, networks and molecule's ephemeral directory are per scenario and global to
    # the machine: two runs of one scenario at once (from any checkout) would destroy each other's
    # containers, so the lock is the machine's (LOCK_DIR), not the checkout's.
    exec {lock_fd}>"$LOCK_DIR/$s.lock"
    if ! flock -n "$lock_fd"; then
        log "another run of $s is in progress on this machine: waiting for it (at most 30 minutes)"
        if ! flock -w 1800 "$lock_fd"; then
            echo "busy 0" >"$RESULT_DIR/$s"
            return 1
        fi
    fi
    t0=$(date +%s)
    # shellcheck disable=SC2086  # MOLECULE_ARGS is a list of words on purpose
    if [ "$JOBS" -eq 1 ] || [ "${#scenarios[@]}" -eq 1 ]; then
        # alone: its output also goes to the terminal, as it runs
        # shellcheck disable=SC2086
        molecule --base-config "$BASE_CONFIG" test --scenario-name "$s" ${MOLECULE_ARGS:-} 2>&1 | tee "$LOG_DIR/$s.log"
        rc=${PIPESTATUS[0]}
    else
        # shellcheck disable=SC2086
        molecule --base-config "$BASE_CONFIG" test --scenario-name "$s" ${MOLECULE_ARGS:-} >"$LOG_DIR/$s.log" 2>&1
        rc=$?
    fi
    dt=$(( $(date +%s) - t0 ))
    echo "$rc $dt" >"$RESULT_DIR/$s"
    log "==== $s: $([ "$rc" -eq 0 ] && echo passed || echo FAILED) in ${dt}s (log $LOG_DIR/$s.log)"
    return "$rc"
}

start=$(date +%s)
log "$(molecule --version 2>/dev/null | head -1 | sed 's/ using.*//'); image $MOLECULE_IMAGE; $JOBS at once; scenarios: ${scenarios[*]}"
# At most JOBS scenarios at once, started in the order given; each writes only its own log.
running=0
for s in "${scenarios[@]}"; do
    if [ "$running" -ge "$JOBS" ]; then
        wait -n
        running=$((running - 1))
    fi
    log "==== $s: started"
    run_scenario "$s" &
    running=$((running + 1))
done
wait

passed=0; failed=0; failed_names=(); results=()
for s in "${scenarios[@]}"; do
    read -r rc dt <"$RESULT_DIR/$s" 2>/dev/null || { rc=missing; dt=0; }
    if [ "$rc" = 0 ]; then
        passed=$((passed + 1)); results+=("$(printf '%-24s passed  %4ss' "$s" "$dt")")
    elif [ "$rc" = busy ]; then
        failed=$((failed + 1)); failed_names+=("$s"); results+=("$(printf '%-24s FAILED  (busy: another run held it for 30 minutes)' "$s")")
    else
        failed=$((failed + 1)); failed_names+=("$s"); results+=("$(printf '%-24s FAILED  %4ss (exit %s, log %s)' "$s" "$dt" "$rc" "$LOG_DIR/$s.log")")
    fi
done

# Side by side, the output went only to the logs: show the end of each failed one here (CI keeps
# only the terminal's output).
if [ "$JOBS" -gt 1 ] && [ "${#scenarios[@]}" -gt 1 ]; then
    for s in "${failed_names[@]}"; do
        echo
        log "==== $s: the last 80 lines of $LOG_DIR/$s.log"
        tail -n 80 "$LOG_DIR/$s.log" 2>/dev/null
    done
fi

echo
log "summary ($(( $(date +%s) - start ))s, $JOBS at once):"
printf '  %s\n' "${results[@]}"
echo "molecule: $passed passed, $failed failed${failed_names[*]:+ (${failed_names[*]})}"
[ "$failed" -eq 0 ]

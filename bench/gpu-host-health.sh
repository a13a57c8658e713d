#!/usr/bin/env bash
# xuanwu-health on a real GPU host (docs/node-health.md, issue 40): installed as role health_watch lays it out, then run
# healthy, with a process left on the GPU, under full bf16 load, with a tool that hangs, and timed 20 times each
# (bench/health_check.py). No GPU setting is changed: faults and load come from other processes.
#
# Usage: bench/gpu-host-health.sh OUTDIR CONFIG [REPLAY_CONFIG]
#   CONFIG: the node's /etc/xuanwu/health.json (as role health_watch writes it), or MODEL=FILE,... (the file whose
#   MODEL is in nvidia-smi's GPU name); REPLAY_CONFIG: one that replays a
#   capture bundle (the 4x H200 capture), timed the same way. Everything lands in OUTDIR and OUTDIR/health-gpu.tgz.
# Environment: TORCH_PYTHON (the Python with torch, default /opt/torch/.venv/bin/python), RUNS (default 20), ROLE=1
#   (install with role health_watch through scripts/gpu-host-run.sh playbooks/health_watch.yml, the profile of CONFIG,
#   caller kubernetes; needs wheels/gpu-host).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
[ $# -ge 2 ] || { sed -n '5,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
OUT="$(mkdir -p "$1" && cd "$1" && pwd)"
CONFIG="$2"
# CONFIG may name one file per GPU model: "H100=a.json,H200=b.json" (the one whose key is in nvidia-smi's name is used)
case "$CONFIG" in
    *=*) NAME="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
         for pair in ${CONFIG//,/ }; do case "$NAME" in *"${pair%%=*}"*) CONFIG="${pair#*=}";; esac; done;;
esac
[ -f "$CONFIG" ] || { echo "no configuration for this GPU: $CONFIG" >&2; exit 2; }
REPLAY_CONFIG="${3:-}"
TORCH_PYTHON="${TORCH_PYTHON:-/opt/torch/.venv/bin/python}"
RUNS="${RUNS:-20}"
CMD=/usr/local/sbin/xuanwu-health
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/summary.txt"; }

if [ "${ROLE:-0}" = 1 ]; then
    # the role itself installs it (scripts/gpu-host-run.sh: ansible-core from wheels/gpu-host, connection local): a
    # check-mode run first, then twice (the second must change nothing), then check mode again; the profile is the
    # one named in CONFIG's file ("profile_path"), host.time off as there
    PROFILE="$(python3 -c 'import json, os, sys; print(os.path.basename(json.load(open(sys.argv[1]))["profile_path"])[:-4])' "$CONFIG")"
    EXTRA="{\"xuanwu_profile\": \"$PROFILE\", \"xuanwu_profile_overrides\": {\"host\": {\"time\": null}}, \"health_watch_caller\": \"kubernetes\", \"health_watch_textfile_dir\": \"\"}"
    for step in check-first run1 run2 check; do
        args=(-e "$EXTRA"); case "$step" in check*) args+=(--check --diff);; esac
        scripts/gpu-host-run.sh playbooks/health_watch.yml "${args[@]}" > "$OUT/role-$step.txt" 2>&1
        log "role $step rc=$? $(grep -E '^localhost +:' "$OUT/role-$step.txt" | tr -s ' ')"
    done
    CONFIG=/etc/xuanwu/health.json
else
VERSION="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["collection_version"])' "$CONFIG")"
PREFIX="/opt/xuanwu-health/$VERSION"
MU="$PREFIX/ansible_collections/xuanwu/cluster/plugins/module_utils"
install -d -m 0755 "$MU"
for d in ansible_collections ansible_collections/xuanwu ansible_collections/xuanwu/cluster \
         ansible_collections/xuanwu/cluster/plugins ansible_collections/xuanwu/cluster/plugins/module_utils; do
    : > "$PREFIX/$d/__init__.py"
done
install -m 0644 plugins/module_utils/*.py "$MU/"
cat > "$CMD" <<EOF
#!/usr/bin/python3 -I
# xuanwu.cluster $VERSION (as role health_watch installs it)
import sys
sys.path.insert(0, '$PREFIX')
from ansible_collections.xuanwu.cluster.plugins.module_utils import _health
sys.exit(_health.main(sys.argv))
EOF
chmod 0755 "$CMD"
ln -sf xuanwu-health /usr/local/sbin/xuanwu-health-epilog
ln -sf xuanwu-health /usr/local/sbin/xuanwu-health-prolog
install -d -m 0755 /etc/xuanwu
install -m 0600 "$CONFIG" /etc/xuanwu/health.json
fi
log "python3 $(python3 -c 'import sys; print(sys.version.split()[0])'); $(nvidia-smi --query-gpu=name,power.limit,driver_version --format=csv,noheader)"
"$CMD" --check-config /etc/xuanwu/health.json | tee -a "$OUT/summary.txt"

log "1. healthy, idle: xuanwu-health check --json --capture"
"$CMD" check --json --capture "$OUT/healthy-bundle" > "$OUT/healthy.txt"; log "rc=$? $(head -1 "$OUT/healthy.txt")"
python3 bench/health_check.py --runs "$RUNS" --command "$CMD" --json "$OUT/bench-idle.json" | tee -a "$OUT/summary.txt"

log "2. a process left on the GPU (gpu_load.py hold 4 GiB)"
"$TORCH_PYTHON" bench/gpu_load.py hold --gib 4 --seconds 300 > "$OUT/hold.txt" 2>&1 &
HOLD=$!
for _ in $(seq 60); do grep -q 'pid=' "$OUT/hold.txt" && break; sleep 1; done
log "$(cat "$OUT/hold.txt")"
"$CMD" epilog --json > "$OUT/leftover-epilog.txt"; log "epilog rc=$? $(head -1 "$OUT/leftover-epilog.txt")"
"$CMD" check --json > "$OUT/leftover-check.txt"; log "check rc=$? $(head -1 "$OUT/leftover-check.txt")"
kill "$HOLD"; wait "$HOLD" 2>/dev/null
sleep 3
"$CMD" epilog > "$OUT/after-epilog.txt"; log "epilog after it ended rc=$? $(head -1 "$OUT/after-epilog.txt")"

log "3. under full load (gpu_load.py matmul)"
"$TORCH_PYTHON" bench/gpu_load.py matmul --seconds 90 > "$OUT/load.txt" 2>&1 &
LOAD=$!
sleep 15
nvidia-smi --query-gpu=power.draw,temperature.gpu,clocks.sm,clocks_event_reasons.active,utilization.gpu --format=csv > "$OUT/load-smi.txt"
"$CMD" check --json > "$OUT/load-check.txt"; log "check rc=$? $(head -1 "$OUT/load-check.txt")"
python3 bench/health_check.py --runs "$RUNS" --command "$CMD" --json "$OUT/bench-load.json" | tee -a "$OUT/summary.txt"
nvidia-smi --query-gpu=power.draw,temperature.gpu,clocks.sm,clocks_event_reasons.active,utilization.gpu --format=csv,noheader >> "$OUT/load-smi.txt"
wait "$LOAD"; log "$(tail -1 "$OUT/load.txt")"

log "4. a hung nvidia-smi (a stand-in that sleeps, first in search_dirs)"
mkdir -p /tmp/xuanwu-hung && printf '#!/bin/sh\nsleep 600\n' > /tmp/xuanwu-hung/nvidia-smi && chmod 0755 /tmp/xuanwu-hung/nvidia-smi
python3 - "$CONFIG" /etc/xuanwu/health-hung.json <<'EOF'
import json, os, sys
doc = json.load(open(sys.argv[1]))
doc.setdefault('probe', {})['search_dirs'] = ['/tmp/xuanwu-hung', '/usr/sbin', '/sbin', '/usr/local/sbin', '/usr/bin', '/bin', '/usr/local/bin']
doc['state_dir'] = '/var/lib/xuanwu-health-hung'
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, json.dumps(doc).encode())
os.close(fd)
EOF
START=$(date +%s.%N)
"$CMD" check --config /etc/xuanwu/health-hung.json --json > "$OUT/hung.txt"; RC=$?
log "hung rc=$RC in $(python3 -c "import sys; print(round($(date +%s.%N) - $START, 2))") s: $(head -1 "$OUT/hung.txt")"
pkill -f /tmp/xuanwu-hung/nvidia-smi

if [ -n "$REPLAY_CONFIG" ]; then
    log "5. the 4x H200 capture replayed"
    # a relative replay_dir is the checkout's
    python3 - "$REPLAY_CONFIG" /etc/xuanwu/health-replay.json "$ROOT" <<'EOF'
import json, os, sys
doc = json.load(open(sys.argv[1]))
doc['probe']['replay_dir'] = os.path.join(sys.argv[3], doc['probe']['replay_dir'])
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, json.dumps(doc).encode())
os.close(fd)
EOF
    "$CMD" check --config /etc/xuanwu/health-replay.json > "$OUT/replay.txt"; log "replay rc=$? $(head -1 "$OUT/replay.txt")"
    python3 bench/health_check.py --runs "$RUNS" --command "$CMD" --config /etc/xuanwu/health-replay.json --json "$OUT/bench-replay.json" | tee -a "$OUT/summary.txt"
fi
cp /var/lib/xuanwu-health/check.json "$OUT/state-check.json" 2>/dev/null
tar czf "$OUT/health-gpu.tgz" -C "$OUT" --exclude health-gpu.tgz .
log "finished"

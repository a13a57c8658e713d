#!/usr/bin/env bash
# nvidia-smi dmon during real workloads on a GPU host (connection local): what validate.yml's sampling sees, a raw
# capture for the parser's fixtures, and what sampling costs the workload.
#
# Usage: bench/gpu-dmon.sh OUTDIR [ARCHIVE]
#   1. validate.yml with the collectives (nccl-tests built by xuanwu.cluster.nccl_tests_build from ARCHIVE, default
#      wheels/nccl-tests-2.19.6.tar.gz) and the PyTorch workloads allreduce_bench and ddp_smoke, dmon sampling on (the
#      default); the report (OUTDIR/reports/) holds each workload's dmon summary and findings. Meanwhile a separate
#      `nvidia-smi dmon -s pucvmet -d 1 -o T` records the whole run raw (OUTDIR/dmon-validate.txt).
#   2. all_reduce_perf -b 1G -e 1G -n 200 on every GPU, ROUNDS times alone and ROUNDS times with dmon -d 1 beside it,
#      interleaved; prints the medians of the average time per iteration and their ratio (OUTDIR/overhead.txt).
# Environment: PROFILE (default h200x2-nvlink; a host with fewer GPUs than the profile fails gpu.count, and the stages
#   run anyway: xuanwu_workloads_on_failed_hosts), ROUNDS (default 5), PYTHON (the Python with torch and its NCCL wheel).
# Needs: wheels/gpu-host (scripts/fetch-gpu-host-wheels.sh), CUDA (nvcc).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
[ $# -ge 1 ] || { sed -n '5,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
OUT="$(mkdir -p "$1" && cd "$1" && pwd)"
ARCHIVE="$(cd "$(dirname "${2:-wheels/nccl-tests-2.19.6.tar.gz}")" && pwd)/$(basename "${2:-wheels/nccl-tests-2.19.6.tar.gz}")"
SHA256=85c65a240432a5bd8bf8598ac235582921a96e8a968a8a675d23419478a4ab9c
PROFILE="${PROFILE:-h200x2-nvlink}"
ROUNDS="${ROUNDS:-5}"
PYTHON="${PYTHON:-python3}"
export PYTHON
SITE="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
NCCL_HOME="$SITE/nvidia/nccl"
[ -f "$NCCL_HOME/include/nccl.h" ] || { echo "no NCCL wheel at $NCCL_HOME" >&2; exit 1; }
NGPU="$(nvidia-smi -L | grep -c '^GPU ')"
PREFIX=/opt/xuanwu/nccl-tests
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > "$OUT/nvidia-smi-L.txt"
nvidia-smi --version > "$OUT/nvidia-smi-version.txt" 2>&1

cat > "$OUT/extra.json" <<JSON
{"xuanwu_profile": "$PROFILE", "xuanwu_validate_collectives": true, "xuanwu_validate_workloads": true,
 "xuanwu_workloads_on_failed_hosts": true, "xuanwu_collectives_gpus": $NGPU,
 "xuanwu_torch_python": "$PYTHON", "xuanwu_torch_workloads": ["allreduce_bench", "ddp_smoke"],
 "xuanwu_profile_overrides": {"host": {"time": null}},
 "xuanwu_nccl_library_globs": ["$NCCL_HOME/lib/libnccl.so*"], "xuanwu_nccl_env": {"NCCL_NVLS_ENABLE": "0"},
 "xuanwu_reports_dir": "$OUT/reports", "xuanwu_history_db": "",
 "nccl_tests_build_version": "2.19.6", "nccl_tests_build_archive": "$ARCHIVE", "nccl_tests_build_sha256": "$SHA256",
 "nccl_tests_build_prefix": "$PREFIX", "nccl_tests_build_nccl_home": "$NCCL_HOME", "nccl_tests_build_mpi": false,
 "nccl_tests_build_extra_make_args": ["NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90"]}
JSON

nvidia-smi dmon -s pucvmet -d 1 -o T > "$OUT/dmon-validate.txt" 2>&1 &
raw=$!
t0=$(date +%s.%N)
scripts/gpu-host-run.sh playbooks/validate.yml -e "@$OUT/extra.json" > "$OUT/validate.log" 2>&1
rc=$?
t1=$(date +%s.%N)
kill "$raw"; wait "$raw" 2>/dev/null
echo "validate.yml rc=$rc seconds=$(python3 -c "print(round($t1 - $t0, 1))")" | tee "$OUT/summary.txt"

BIN="$PREFIX/current/bin/all_reduce_perf"
[ -x "$BIN" ] || { echo "no $BIN: the build failed (see $OUT/validate.log)" | tee -a "$OUT/summary.txt"; exit 1; }
export LD_LIBRARY_PATH="$NCCL_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for i in $(seq 1 "$ROUNDS"); do
    for mode in alone dmon; do
        log="$OUT/overhead/$mode-$i.txt"; mkdir -p "$OUT/overhead"
        if [ "$mode" = dmon ]; then
            nvidia-smi dmon -s pucvmet -d 1 > "$OUT/overhead/dmon-$i-samples.txt" 2>&1 & sampler=$!
        fi
        "$BIN" -b 1G -e 1G -n 200 -w 20 -g "$NGPU" > "$log" 2>&1
        if [ "$mode" = dmon ]; then kill "$sampler"; wait "$sampler" 2>/dev/null; fi
    done
done
python3 - "$OUT" "$ROUNDS" <<'PY' | tee "$OUT/overhead.txt"
import os, re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def time_us(path):
    for line in open(path):
        f = line.split()
        if len(f) > 6 and f[0] == '1073741824':
            return float(f[5])          # out-of-place time (us) of the 1 GiB line
    raise SystemExit('no 1 GiB line in %s' % path)
alone = [time_us(os.path.join(out, 'overhead', 'alone-%d.txt' % i)) for i in range(1, rounds + 1)]
dmon = [time_us(os.path.join(out, 'overhead', 'dmon-%d.txt' % i)) for i in range(1, rounds + 1)]
ma, md = statistics.median(alone), statistics.median(dmon)
print('all_reduce_perf 1 GiB, out-of-place time per iteration (us), %d rounds interleaved' % rounds)
print('alone:     median %.1f  (%s)' % (ma, ' '.join('%.1f' % v for v in alone)))
print('with dmon: median %.1f  (%s)' % (md, ' '.join('%.1f' % v for v in dmon)))
print('ratio with/alone: %.4f' % (md / ma))
PY
# flat copies of the run's report (the folder's name is the run id) and one archive of the overhead runs
report="$(find "$OUT/reports" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | head -1)"
[ -n "$report" ] && for f in report.json report.md junit.xml xuanwu.prom; do cp "$report/$f" "$OUT/validate-$f"; done
tar czf "$OUT/overhead.tgz" -C "$OUT" overhead && rm -rf "$OUT/overhead" "$OUT/reports"

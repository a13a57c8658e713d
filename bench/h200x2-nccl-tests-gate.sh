#!/usr/bin/env bash
# validate.yml with the collectives, run again and again on a 2x H200 host itself (connection local),
# keeping every nccl-tests output and report: the runs behind bench/h200x2-nccl-tests-gate.md.
#
# Usage: bench/h200x2-nccl-tests-gate.sh OUTDIR FIRST LAST [DEADLINE_S]
#   runs FIRST..LAST into OUTDIR/run<N>/ (nccl-tests/<binary>-<ns>.txt, reports/, ansible.log) and appends
#   "run N rc=R seconds=S" to OUTDIR/summary.txt; no run starts once DEADLINE_S seconds have passed.
# Needs: wheels/gpu-host (scripts/fetch-gpu-host-wheels.sh), the nccl-tests source at
#   files/nccl-tests-2.19.6.tar.gz, CUDA (nvcc) and a Python whose site-packages hold torch's NCCL wheel.
# The first run builds nccl-tests with the role xuanwu.cluster.nccl_tests_build; later runs find it built.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
[ $# -ge 3 ] || { sed -n '5,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
OUTDIR="$(mkdir -p "$1" && cd "$1" && pwd)"; FIRST="$2"; LAST="$3"; DEADLINE="${4:-0}"
ARCHIVE="$ROOT/files/nccl-tests-2.19.6.tar.gz"
SHA256=85c65a240432a5bd8bf8598ac235582921a96e8a968a8a675d23419478a4ab9c
PREFIX=/opt/xuanwu/nccl-tests
SITE="$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
NCCL_HOME="$SITE/nvidia/nccl"
[ -f "$NCCL_HOME/include/nccl.h" ] || { echo "no NCCL wheel at $NCCL_HOME" >&2; exit 1; }
# The hosts this ran on share their GPUs: NVLink multicast stays off.
export NCCL_NVLS_ENABLE=0

started=$SECONDS
for i in $(seq "$FIRST" "$LAST"); do
    if [ "$DEADLINE" -gt 0 ] && [ $((SECONDS - started)) -ge "$DEADLINE" ]; then
        echo "deadline: run $i not started" | tee -a "$OUTDIR/summary.txt"; break
    fi
    run="$OUTDIR/run$i"
    mkdir -p "$run/nccl-tests" "$run/bin"
    # Each binary is reached through a wrapper that keeps its output (the report keeps figures only).
    for coll in all_reduce all_gather reduce_scatter alltoall sendrecv; do
        # shellcheck disable=SC2016  # the $@ and $(date) are for the wrapper, not for this script
        printf '#!/bin/bash\nset -o pipefail\n"%s/current/bin/%s_perf" "$@" 2>&1 | tee "%s/nccl-tests/%s_perf-$(date +%%s%%N).txt"\n' \
            "$PREFIX" "$coll" "$run" "$coll" > "$run/bin/${coll}_perf"
        chmod +x "$run/bin/${coll}_perf"
    done
    cat > "$run/extra.json" <<EOF
{"xuanwu_profile": "h200x2-nvlink", "xuanwu_validate_collectives": true, "xuanwu_validate_workloads": false,
 "xuanwu_profile_overrides": {"host": {"time": null}},
 "xuanwu_nccl_library_globs": ["$NCCL_HOME/lib/libnccl.so*"],
 "xuanwu_nccl_env": {"NCCL_NVLS_ENABLE": "0"},
 "xuanwu_nccl_tests_bin_dir": "$run/bin", "xuanwu_reports_dir": "$run/reports",
 "nccl_tests_build_version": "2.19.6", "nccl_tests_build_archive": "$ARCHIVE", "nccl_tests_build_sha256": "$SHA256",
 "nccl_tests_build_prefix": "$PREFIX", "nccl_tests_build_nccl_home": "$NCCL_HOME", "nccl_tests_build_mpi": false,
 "nccl_tests_build_extra_make_args": ["NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90"]}
EOF
    t0=$(date +%s.%N)
    INVENTORY=inventories/gpu-host scripts/gpu-host-run.sh playbooks/validate.yml -e "@$run/extra.json" > "$run/ansible.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    echo "run $i rc=$rc seconds=$(python3 -c "print(round($t1 - $t0, 1))")" | tee -a "$OUTDIR/summary.txt"
done

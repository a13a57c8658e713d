#!/usr/bin/env bash
# The full validate.yml (all five collectives, the PyTorch workloads with the elastic restart, a soak, dmon and the clock event
# reasons sampled) run again and again on a GPU host itself (connection local), healthy and with real faults
# injected by other processes (no GPU setting is changed), keeping every raw output: the runs behind
# bench/gpu-host-validate.md.
#
# Usage: bench/gpu-host-validate.sh OUTDIR RUN...
#   RUN is N (healthy), N:leftover (a torchrun job holding 20 GiB of GPU memory started before validate.yml and
#   left running), N:compete (bf16 matrix products on every GPU from the first collective to the end of the run) or
#   N:hog (the same products from before validate.yml starts: the single-GPU stage meets them too).
#   Each run goes to OUTDIR/run<N>/ (extra.json, ansible.log, reports/, raw/: every nccl-tests output, every
#   PyTorch workload's output, every dmon and clock event sampling the workloads made, named by start time in ns);
#   "run N fault=F rc=R seconds=S" is appended to OUTDIR/summary.txt. No run starts once DEADLINE_S seconds
#   (environment, 0: none) have passed since the script started.
# Environment: PROFILE (default h200x1), SOAK_S (default 60), CAPTURE=1 (first playbooks/capture.yml into
#   OUTDIR/bundle/), LOAD_S (first, when set: 5 idle samples, LOAD_S seconds of bf16 matmuls, 3 idle samples, with
#   the clock event query and dmon once a second: OUTDIR/load/), ARCHIVE (the nccl-tests 2.19.6 source, default
#   files/nccl-tests-2.19.6.tar.gz), PYTHON (the Python with torch and its NCCL wheel, default python3), EXTRA_VARS
#   (one more -e of every run, e.g. '{"xuanwu_workloads_on_failed_hosts": true}' to run the stages on a host whose
#   checks failed: a hog run then meets the single-GPU stage).
# Needs: wheels/gpu-host (scripts/fetch-gpu-host-wheels.sh), CUDA (nvcc). nccl-tests is built once by the role
# xuanwu.cluster.nccl_tests_build in the first run (sm_90 only); later runs find it installed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
[ $# -ge 1 ] || { sed -n '7,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
OUTDIR="$(mkdir -p "$1" && cd "$1" && pwd)"; shift
PROFILE="${PROFILE:-h200x1}"
SOAK_S="${SOAK_S:-60}"
DEADLINE="${DEADLINE_S:-0}"
ARCHIVE="$(cd "$(dirname "${ARCHIVE:-files/nccl-tests-2.19.6.tar.gz}")" && pwd)/$(basename "${ARCHIVE:-files/nccl-tests-2.19.6.tar.gz}")"
SHA256=85c65a240432a5bd8bf8598ac235582921a96e8a968a8a675d23419478a4ab9c
PYTHON="$(command -v "${PYTHON:-python3}")"
export PYTHON
SITE="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
NCCL_HOME="$SITE/nvidia/nccl"
[ -f "$NCCL_HOME/include/nccl.h" ] || { echo "no NCCL wheel at $NCCL_HOME" >&2; exit 1; }
SMI="$(command -v nvidia-smi)" || { echo "no nvidia-smi" >&2; exit 1; }
NGPU="$("$SMI" -L | grep -c '^GPU ')"
PREFIX=/opt/xuanwu/nccl-tests
QUERY=index,clocks_event_reasons.active,clocks.sm,power.draw,power.limit,temperature.gpu
# The hosts this runs on may share their GPUs: NVLink multicast stays off.
export NCCL_NVLS_ENABLE=0
started=$SECONDS
{ "$SMI" -L; "$SMI" --version; uname -r; date -u +%FT%TZ; } > "$OUTDIR/host.txt" 2>&1

if [ "${CAPTURE:-0}" = 1 ]; then
    INVENTORY=inventories/gpu-host scripts/gpu-host-run.sh playbooks/capture.yml \
        -e xuanwu_capture_dest="$OUTDIR/bundle" -e "{\"xuanwu_nccl_library_globs\": [\"$NCCL_HOME/lib/libnccl.so*\"]}" \
        > "$OUTDIR/capture.log" 2>&1
    echo "capture rc=$?" >> "$OUTDIR/summary.txt"
fi

if [ -n "${LOAD_S:-}" ]; then
    mkdir -p "$OUTDIR/load"
    "$SMI" --query-gpu="$QUERY" --format=csv,noheader,nounits -lms 1000 > "$OUTDIR/load/clock-events.csv" 2>&1 & q=$!
    "$SMI" dmon -s pucvmet -d 1 -o T > "$OUTDIR/load/dmon.txt" 2>&1 & d=$!
    sleep 5
    loads=()
    for g in $(seq 0 $((NGPU - 1))); do
        "$PYTHON" bench/gpu_load.py matmul --seconds "$LOAD_S" --device "$g" > "$OUTDIR/load/matmul-gpu$g.txt" 2>&1 &
        loads+=($!)
    done
    wait "${loads[@]}"
    sleep 3
    kill "$q" "$d"; wait "$q" "$d" 2>/dev/null
    "$SMI" -q -d TEMPERATURE,POWER,CLOCK,PERFORMANCE > "$OUTDIR/load/nvidia-smi_-q_after.txt" 2>&1
fi

for spec in "$@"; do
    i="${spec%%:*}"; fault=none; [ "$spec" != "$i" ] && fault="${spec#*:}"
    if [ "$DEADLINE" -gt 0 ] && [ $((SECONDS - started)) -ge "$DEADLINE" ]; then
        echo "deadline: run $i not started" | tee -a "$OUTDIR/summary.txt"; break
    fi
    run="$OUTDIR/run$i"
    mkdir -p "$run/raw" "$run/bin" "$run/smi"
    # Every binary, PyTorch and nvidia-smi sampling reached through a wrapper that keeps its output (the report keeps
    # figures only); exec keeps the process the module starts and stops the program itself.
    # shellcheck disable=SC2016  # the $@ and $(date) are for the wrappers, not for this script
    for coll in all_reduce all_gather reduce_scatter alltoall sendrecv; do
        printf '#!/bin/bash\nexec "%s/current/bin/%s_perf" "$@" > >(tee "%s/raw/%s_perf-$(date +%%s%%N).txt")\n' \
            "$PREFIX" "$coll" "$run" "$coll" > "$run/bin/${coll}_perf"
    done
    # shellcheck disable=SC2016
    printf '#!/bin/bash\nw=torch; for a in "$@"; do case "$a" in *.py) w=$(basename "$a" .py);; esac; done\nexec "%s" "$@" > >(tee "%s/raw/torch-$w-$(date +%%s%%N).txt")\n' \
        "$PYTHON" "$run" > "$run/bin/python"
    # shellcheck disable=SC2016
    printf '#!/bin/bash\ncase " $* " in\n *" dmon "*) exec "%s" "$@" > >(tee "%s/raw/dmon-$(date +%%s%%N).txt");;\n *" -lms "*) exec "%s" "$@" > >(tee "%s/raw/clock-events-$(date +%%s%%N).csv");;\nesac\nexec "%s" "$@"\n' \
        "$SMI" "$run" "$SMI" "$run" "$SMI" > "$run/smi/nvidia-smi"
    chmod +x "$run"/bin/* "$run/smi/nvidia-smi"
    cat > "$run/extra.json" <<EOF
{"xuanwu_profile": "$PROFILE", "xuanwu_validate_collectives": true, "xuanwu_validate_workloads": true,
 "xuanwu_validate_gpu_single": true,
 "xuanwu_collectives": ["all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv"],
 "xuanwu_torch_workloads": ["allreduce_bench", "ddp_smoke", "fault_isolation", "elastic_restart", "soak"], "xuanwu_soak_duration_s": $SOAK_S,
 "xuanwu_torch_python": "$run/bin/python", "xuanwu_dmon": true, "xuanwu_collectives_gpus": $NGPU,
 "xuanwu_profile_overrides": {"host": {"time": null}},
 "xuanwu_nccl_library_globs": ["$NCCL_HOME/lib/libnccl.so*"], "xuanwu_nccl_env": {"NCCL_NVLS_ENABLE": "0"},
 "xuanwu_nccl_tests_bin_dir": "$run/bin", "xuanwu_reports_dir": "$run/reports", "xuanwu_history_db": "",
 "nccl_tests_build_version": "2.19.6", "nccl_tests_build_archive": "$ARCHIVE", "nccl_tests_build_sha256": "$SHA256",
 "nccl_tests_build_prefix": "$PREFIX", "nccl_tests_build_nccl_home": "$NCCL_HOME", "nccl_tests_build_mpi": false,
 "nccl_tests_build_make_jobs": 16,
 "nccl_tests_build_extra_make_args": ["NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90"]}
EOF
    helper=""
    case "$fault" in
        leftover)
            # a job of an earlier user still running: torchrun with one worker holding 20 GiB
            "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node 1 bench/gpu_load.py hold --gib 20 --seconds 900 \
                > "$run/fault.log" 2>&1 & helper=$!
            for _ in $(seq 60); do grep -q 'gpu_load hold' "$run/fault.log" && break; sleep 1; done ;;
        compete)
            # another tenant's bf16 matrix products on every GPU, from the first collective to the end of the run
            ( while ! ls "$run"/raw/*_perf-*.txt >/dev/null 2>&1; do sleep 0.5; done
              for g in $(seq 0 $((NGPU - 1))); do "$PYTHON" bench/gpu_load.py matmul --seconds 900 --device "$g" & done
              wait ) > "$run/fault.log" 2>&1 & helper=$! ;;
        hog)
            # another tenant's bf16 matrix products on every GPU from before the run to its end
            ( for g in $(seq 0 $((NGPU - 1))); do "$PYTHON" bench/gpu_load.py matmul --seconds 900 --device "$g" & done
              wait ) > "$run/fault.log" 2>&1 & helper=$!
            sleep 10 ;;
        none) ;;
        *) echo "unknown fault $fault" >&2; exit 2 ;;
    esac
    t0=$(date +%s.%N)
    PATH="$run/smi:$PATH" INVENTORY=inventories/gpu-host scripts/gpu-host-run.sh playbooks/validate.yml \
        -e "@$run/extra.json" ${EXTRA_VARS:+-e "$EXTRA_VARS"} > "$run/ansible.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    if [ -n "$helper" ]; then
        # the helper's own children (torchrun, or the matmul processes) by their parent's pid, then the helper
        pkill -TERM -P "$helper" 2>/dev/null; kill "$helper" 2>/dev/null; wait "$helper" 2>/dev/null
    fi
    echo "run $i fault=$fault rc=$rc seconds=$(python3 -c "print(round($t1 - $t0, 1))")" | tee -a "$OUTDIR/summary.txt"
done

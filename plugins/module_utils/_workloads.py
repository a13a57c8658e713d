# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge workload results — nccl-tests runs, the torch all-reduce benchmark, the DDP training smoke
job, the fault-isolation test, the elastic restart and the soak — against the hardware profile; produce findings.

Pure functions: results in (as the run modules return them), findings out. A run that died, timed
out or printed nothing parsable is itself a finding that quotes what was read.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils import (
    _collectives, _container, _findings, _host_samples, _links, _scheduler,
)
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError, excerpt
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_nccl import parse_nccl_tests
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_workloads import RESULT_TAG, parse_result_lines

# kinds whose output holds XUANWU_RESULT lines
RESULT_KINDS = ('torch_allreduce', 'ddp_smoke', 'fault_isolation', 'soak', 'gpu_single', 'elastic_restart')
# GPU-sample bounds that cannot apply to a kind of workload: {kind: {bound: why}} (workload_check leaves them unjudged
# and says why): the single-GPU stage allocates its matmul matrices, then its copy buffers, GPU after GPU, so its
# framebuffer rises by design (a healthy H200 went from 1011 to 9293 MB in one run).
DMON_UNJUDGED = {
    'gpu_single': {'fb_growth_max_mb': 'dmon.memory_growth: not judged for the single-GPU stage, which allocates its '
                                       'matmul matrices and then its copy buffers by design (a steady workload is judged: the soak)'},
}

_e = _findings.entry
# The checks of this module's evaluators (the catalogue of every check: plugins/module_utils/_catalogue.py).
RUN_CHECKS = {
    'collectives.run_failed': _e(
        'Collective benchmark did not run to the end', 'fail',
        _collectives.REMEDIATION_INCOMPLETE),
    'collectives.rank_count': _e(
        'Benchmark ran on another number of ranks than the job asked for', 'fail',
        'The output does not belong to the job that was asked for (nodes x GPUs per node): check the '
        'hostfile slots and -np of mpirun, that mpirun starts the binary on every node (an MPI-less build '
        'runs one single-node job per process), -g, CUDA_VISIBLE_DEVICES (HIP_VISIBLE_DEVICES on AMD), and that '
        'every GPU is visible (nvidia-smi -L, or amd-smi list, on each node).'),
    'workload.failed': _e(
        'Workload failed to run', 'fail',
        'Read the quoted output or error. Check that the Python interpreter has torch with CUDA '
        '(python -c "import torch; print(torch.cuda.is_available())"), that no other job holds the GPUs '
        '(nvidia-smi), that the rendezvous port is free and reachable between the nodes (firewall), and '
        'rerun with NCCL_DEBUG=INFO.'),
    'workload.not_measured': _e(
        'A requested stage measured nothing', 'fail',
        'The stage was switched on but produced no measurement, so the node is not proven fit. Give it what '
        'it needs: nccl-tests binaries (nccl_tests_build_archive and nccl_tests_build_sha256 to build them; '
        'rccl-tests on AMD nodes: nccl_tests_build_rccl_archive and nccl_tests_build_rccl_sha256; '
        'or xuanwu_nccl_tests_bin_dir), a non-empty list of collectives or workloads, or, for a replayed '
        'host, a capture bundle that holds the recorded output; or switch the stage off.'),
    'workload.ddp_smoke': _e(
        'DDP training smoke job', 'fail',
        'A training job that does not learn or whose ranks disagree points at a broken collective path or a '
        'faulty GPU: run the collective benchmarks per node and per pair, check ECC/Xid findings, then rerun.'),
    'workload.ddp_step_time': _e(
        'DDP step time above the bound', 'fail',
        'Slow steps with healthy single-GPU throughput mean slow gradient all-reduce: check the bus '
        'bandwidth findings, GPU clocks and throttling (nvidia-smi -q -d PERFORMANCE) and CPU affinity.'),
    'workload.ddp_step_jitter': _e(
        'DDP step times spread: the slowest steps far above the median', 'warn',
        'Some training steps took far longer than the median (warm-up steps left out): look for what interrupts the ranks '
        '(another process on the cores or GPUs: top -H, nvidia-smi; the host_cpu figures of the same run; Python garbage '
        'collection; swapping: vmstat 5), for GPU clocks dipping (the dmon.* figures) and for a flapping link (the link '
        'counter findings).', compares='p99 / median of the step times after workloads.ddp_smoke.warmup_steps vs '
        'workloads.ddp_smoke.max_p99_ratio'),
    'workload.ddp_step_periodic': _e(
        'DDP steps slow at a fixed period', 'warn',
        'Every k-th step is slow: something runs at a fixed period beside the job (a monitoring agent, a cron job, a '
        'health check polling the GPUs with nvidia-smi, checkpoint or logging every k steps, a DataLoader whose workers '
        'cannot keep up): find it with the period (the steps named), pidstat 1 and the host_cpu figures of the run.',
        compares='steps slower than workloads.ddp_smoke.spike_ratio x the median, at least spike_min_count of them at '
                 'one fixed distance'),
    'workload.ddp_straggler': _e(
        'One rank was last to reach the gradient all-reduce', 'warn',
        'Every rank waited for {rank_host} in the gradient all-reduce: its data and forward pass took longer than the '
        'other ranks\'. Check that rank\'s GPU alone (the gpu_single stage: clocks, another process on it), its CPU '
        '(the host_cpu figures, NUMA placement of the rank: nvidia-smi topo -m) and, across nodes, that node.',
        kind='rank<N> (host)', compares='the rank last to finish its forward pass in at least half of the steps after '
        'the warm-up, by a median lag vs workloads.ddp_smoke.max_rank_lag_pct of the median step time'),
    'workload.fault_isolation': _e(
        'A killed rank does not end the job cleanly', 'fail',
        'Jobs must fail fast when a peer dies: set TORCH_NCCL_ASYNC_ERROR_HANDLING=1 (or NCCL blocking '
        'wait) and a collective timeout in the training launcher; check that the launcher (torchrun/srun) '
        'tears down the remaining ranks; a hang here means a dead node would stall the whole job.'),
    'workload.elastic_not_recovered': _e(
        'Elastic restart: the job did not finish after a rank was killed', 'fail',
        'The training job did not come back by itself after one rank was killed (field guide 5.4): read the quoted '
        'error and the job\'s output (run the stage again with xuanwu_workload_keep_dir). Check that torchrun runs with '
        '--max-restarts above 0 and a c10d rendezvous, that the restarted workers can initialise the GPUs and NCCL '
        '(no process left holding a GPU: nvidia-smi; no Xid in the kernel log), and that the checkpoint directory is '
        'writable and readable again. Where the message says the kill did not happen, the test itself failed (the job '
        'ran without a fault): it proves nothing of the node; rerun it.',
        compares='the job killed once, restarted by torchrun, every step done, exit 0'),
    'workload.elastic_recovery_slow': _e(
        'Elastic restart: slow to recover after a rank was killed', 'fail',
        'From the kill to the first training step after torchrun restarted the workers took longer than the bound: '
        'look at what the restart waited for in the job\'s output: workers that did not stop on SIGTERM (torchrun waits '
        '30 s before SIGKILL), a slow python/torch import (a shared file system), slow CUDA or NCCL initialisation '
        '(NCCL_DEBUG=INFO; persistence mode: nvidia-smi -q | grep Persistence), a slow checkpoint read.',
        compares='seconds from the SIGKILL to the end of the first step after the restart <= '
                 'workloads.elastic_restart.recover_s_max'),
    'workload.elastic_steps_lost': _e(
        'Elastic restart: more steps redone than the checkpoint interval allows', 'fail',
        'The restarted job went back further than its last checkpoint: at most checkpoint_every steps may be lost. '
        'The checkpoint was not written, not found after the restart (a directory that is not shared by the restarted '
        'workers, removed, or a node-local path on another node) or not loaded; a resume from step 0 redoes every step.',
        compares='the kill step less the step the restart resumed from <= workloads.elastic_restart.checkpoint_every'),
    'workload.placement': _e(
        'Workload did not run on the GPUs of the profile', 'fail',
        'PyTorch on this node does not see the GPUs (field guide §4.1): check python -c "import torch; '
        'print(torch.cuda.is_available(), torch.cuda.device_count(), torch.cuda.nccl.version())" with the interpreter '
        'the workloads use, that the wheel is a CUDA (or ROCm) build matching the driver, CUDA_VISIBLE_DEVICES, and that '
        'no backend or device was forced (torch_workloads_backend); a job on the CPU or on fewer GPUs proves nothing of '
        'the node.'),
    'workload.gpu_compute_low': _e(
        'One GPU alone: dense bf16 matmul slower than healthy GPUs of the model', 'fail',
        'GPU {index} alone did less matrix work than healthy GPUs of the model do at their power limit: look for another '
        'process on it (nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv), for clocks held down '
        '(nvidia-smi -q -d PERFORMANCE: HW Slowdown, HW Thermal or Power Brake is a fault; check cooling and power), for a '
        'lower power limit than the model\'s (nvidia-smi -q -d POWER), then run dcgmi diag -r 3 on it; replace it if it '
        'stays slow alone.', kind='gpu<N>', compares='the median TFLOP/s of a dense bf16 matmul on the GPU alone >= '
        'workloads.gpu_single.min_bf16_tflops'),
    'workload.gpu_membw_low': _e(
        'One GPU alone: device memory bandwidth below healthy GPUs of the model', 'fail',
        'GPU {index} alone copied device memory slower than healthy GPUs of the model: look for another process on it, '
        'for memory clocks held down (nvidia-smi -q -d CLOCK, PERFORMANCE), for row remapping or retired pages pending '
        '(nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT; a reset applies them), then run dcgmi diag -r 3; replace it '
        'if it stays slow alone.', kind='gpu<N>', compares='the median GB/s of a device-to-device copy on the GPU alone '
        '>= workloads.gpu_single.min_membw_gbps'),
    'workload.gpu_outlier': _e(
        'One GPU alone: slower than the other GPUs of its node', 'fail',
        'GPU {index} is slower than its node\'s other GPUs measured the same way, one at a time: a weak GPU drags every '
        'collective and every training step of the node down to its pace. Check it as for workload.gpu_compute_low '
        '(processes, clocks, power limit, cooling of its slot), then run dcgmi diag -r 3 on it.', kind='gpu<N>',
        compares='each GPU within workloads.gpu_single.max_spread_pct of the median of the node\'s GPUs (two GPUs or more)'),
    'workload.soak': _e(
        'Soak: growth or new errors under sustained load', 'fail',
        'Memory that keeps growing under a steady workload is a leak (driver, NCCL plugin or the software '
        'stack); new ECC/Xid errors under load mean a failing GPU: drain the node, run dcgmi diag -r 3, and '
        'RMA the GPU if errors repeat.'),
    'workload.soak_throughput': _e(
        'Soak: fewer iterations per second than healthy GPUs of the model', 'fail',
        'The GPUs did less work under the soak than healthy ones of the model do: look for another process on them '
        '(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv), for clocks held down (the '
        'dmon.* findings, nvidia-smi -q -d PERFORMANCE), for a slow link in the soak\'s all-reduce (the collectives '
        'findings), then rerun the soak alone on the node.'),
}
# and the host CPU sampled beside each workload (_host_samples.judge_run), listed with them: joined, so that a check id
# defined in both is refused as everywhere (_findings.join)
CHECKS = _findings.join(RUN_CHECKS, _host_samples.CHECKS)


def _finding(host, check, component, measured, expected, message, severity=None, context=None):
    return _findings.make(CHECKS, host, check, component, measured, expected, message, severity=severity, context=context)


def _parse(run, parser):
    """``run``'s output through ``parser``: taken from ``run['parsed']`` when ``with_parsed`` put it there
    (each output is parsed once per judgement), else parsed now. Raises ParseError."""
    if 'parsed' in run:
        if isinstance(run['parsed'], ParseError):
            raise run['parsed']
        return run['parsed']
    return parser(run.get('stdout') or '')


def with_parsed(kind, run):
    """A copy of ``run`` that carries its output parsed (key ``parsed``: the result, or the ParseError), for
    ``evaluate`` and ``summarise_run`` to share one parse."""
    parser = parse_nccl_tests if kind == 'nccl_tests' else parse_result_lines if kind in RESULT_KINDS else None
    if parser is None or 'parsed' in run:
        return run
    try:
        parsed = parser(run.get('stdout') or '')
    except ParseError as err:
        parsed = err
    return dict(run, parsed=parsed)


def _rc(run):
    """The run's exit code (``exit_code`` from workload_run, ``rc`` from a plain command result)."""
    return run.get('exit_code', run.get('rc'))


def evaluate_task_error(run, host, component):
    """A task of a workload stage failed outright (``run`` holds its ``task`` name and ``message``)."""
    return [_finding(host, 'workload.failed', component or run.get('task') or 'workload',
                     run.get('message') or 'failed', 'the stage runs',
                     'the task "%s" failed: %s' % (run.get('task'), excerpt(run.get('message') or '', 600)))]


# Reasons a stage measured nothing that more than one role gives: the role passes the key.
NOT_MEASURED_REASONS = {
    'no_nccl_tests': 'no nccl-tests binaries: set nccl_tests_build_archive (with nccl_tests_build_sha256; on AMD nodes '
                     'nccl_tests_build_rccl_archive with nccl_tests_build_rccl_sha256) or xuanwu_nccl_tests_bin_dir',
}


def evaluate_not_measured(run, host):
    """A stage that was requested and measured nothing (``run``: ``stage``, ``reason`` — a text or a key of
    NOT_MEASURED_REASONS — optional ``component``)."""
    stage = run.get('stage') or 'workload'
    run = dict(run, reason=NOT_MEASURED_REASONS.get(run.get('reason'), run.get('reason')))
    return [_finding(host, 'workload.not_measured', run.get('component') or stage, 'not measured: %s' % (run.get('reason') or 'no run'),
                     'a measurement', '%s was requested but not measured: %s' % (stage, run.get('reason') or 'no run'))]


# The runs that need two ranks or more: a collective within one GPU has no bus bandwidth (0 for the reductions by
# definition, a copy within the GPU's own memory for the others), and killing the one rank of a job tests nothing.
MIN_RANKS = 2


def _result_of(run):
    try:
        results = _parse(run, parse_result_lines)
    except ParseError:
        return None
    return results[-1] if results else None


def ranks_of(kind, run):
    """How many ranks the run had, as it reported them (None when it did not say)."""
    if kind == 'nccl_tests':
        try:
            parsed = _parse(run, parse_nccl_tests)
        except ParseError:
            parsed = {}
        return parsed.get('nranks')
    if kind in RESULT_KINDS:
        result = _result_of(run) or {}
        for key in ('world_size', 'nproc_per_node'):
            if isinstance(result.get(key), int) and not isinstance(result.get(key), bool):
                return result[key]
    return None


def not_applicable(kind, run):
    """Why a run cannot be judged on its bandwidth or fault handling (fewer than ``MIN_RANKS`` ranks), else None."""
    if kind not in ('nccl_tests', 'torch_allreduce', 'fault_isolation'):
        return None
    ranks = ranks_of(kind, run)
    if ranks is None or ranks >= MIN_RANKS:
        return None
    what = {'nccl_tests': '%s_perf' % (_collectives.normalise_collective(run.get('collective')) or 'nccl-tests'),
            'torch_allreduce': 'the torch all-reduce benchmark', 'fault_isolation': 'fault isolation'}[kind]
    why = ('a job of one rank has no peer to lose' if kind == 'fault_isolation'
           else 'a collective within one GPU has no bus bandwidth (0 for reductions, a copy in its own memory otherwise)')
    return 'not applicable: %s ran on %d rank(s) and needs %d or more: %s' % (what, ranks, MIN_RANKS, why)


def _gpu_profile(profile):
    gpu = (profile or {}).get('gpu') or {}
    return gpu if gpu.get('vendor') in ('nvidia', 'amd') and (gpu.get('count') or 0) >= 1 else None


def evaluate_placement(result, profile, host, component):
    """``workload.placement``: on a GPU profile, a torch workload that ran on the CPU (gloo), or on fewer GPUs than the
    profile has, names what torch saw (``cuda_available``, ``device_count``, ``nccl_version`` or ``torch_nccl_version``
    where the script reports them: roles/torch_workloads/files/workload_common.py ``torch_seen``)."""
    gpu = _gpu_profile(profile)
    if gpu is None or not isinstance(result, dict):
        return []
    wrong = []
    backend, device = result.get('backend'), result.get('device')
    if backend is not None and backend != 'nccl':
        wrong.append('backend %s' % backend)
    if device is not None and str(device).lower().startswith('cpu'):
        wrong.append('device %s' % device)
    ranks = result.get('world_size')
    count = result.get('device_count')
    if isinstance(count, int) and not isinstance(count, bool) and count < gpu['count']:
        wrong.append('%d GPU(s) visible' % count)
    elif isinstance(ranks, int) and not isinstance(ranks, bool) and 0 < ranks < gpu['count']:
        wrong.append('%d rank(s)' % ranks)
    if not wrong:
        return []
    saw = 'CUDA available %s, %s device(s), NCCL %s' % (
        _shown(result.get('cuda_available')), _shown(result.get('device_count')),
        _shown(result.get('nccl_version') or result.get('torch_nccl_version')))
    return [_finding(host, 'workload.placement', component, ', '.join(wrong) + ' (torch saw: %s)' % saw,
                     'backend nccl on the %d %s GPU(s) of the profile' % (gpu['count'], gpu['vendor']),
                     '%s ran with %s on a node whose profile has %d GPU(s); torch saw %s' % (
                         component, ', '.join(wrong), gpu['count'], saw))]


def _shown(value):
    return 'not reported' if value is None else str(value)


def not_judged(kind, run, profile):
    """Why a run that measured bandwidth was not judged (no curve in the profile for it), or a single-GPU run had no
    floor to be compared with, else None."""
    if kind == 'gpu_single':
        spec = ((profile or {}).get('workloads') or {}).get('gpu_single') or {}
        missing = [key for key in ('min_bf16_tflops', 'min_membw_gbps') if spec.get(key) is None]
        if not missing:
            return None
        return ('no workloads.gpu_single.%s in profile %s: each GPU measured, compared with the node\'s other GPUs only'
                % (' or '.join(missing), (profile or {}).get('name') or '(none)'))
    if kind not in ('nccl_tests', 'torch_allreduce'):
        return None
    collective = _collectives.normalise_collective(run.get('collective')) if kind == 'nccl_tests' else 'all_reduce'
    if (((profile or {}).get('collectives') or {}).get(collective) or {}).get('curve'):
        return None
    return 'no %s curve in profile %s: bus bandwidth measured, not compared' % (collective, (profile or {}).get('name') or '(none)')


def _run_failure(host, component, run, what):
    """A finding when the run itself failed (timeout, exit code, no result), else None."""
    if run.get('timed_out'):
        bound = run.get('timeout_s')
        tail = excerpt(run.get('output_tail') or '', 300)
        return _finding(host, 'workload.failed' if what != 'nccl-tests' else 'collectives.run_failed', component,
                        'timed out after %ss' % bound, 'finishes within %ss' % bound,
                        '%s on %s did not finish within %ss: %s' % (component, host, bound, tail))
    return None


def evaluate_nccl_tests(run, profile, host, component=None):
    """One nccl-tests run: ``{collective, rc, timed_out, timeout_s, stdout, output_tail}`` from the run
    module. Parses the output and checks it against the profile's curve for that collective."""
    collective = _collectives.normalise_collective(run['collective'])
    component = component or '%s_perf' % collective
    findings = []
    failure = _run_failure(host, component, run, 'nccl-tests')
    try:
        parsed = _parse(run, parse_nccl_tests)
    except ParseError as err:
        if failure:
            return [failure]
        return [_finding(host, 'collectives.run_failed', component, 'exit code %s, unparsable output' % _rc(run),
                         'a complete nccl-tests report',
                         '%s printed nothing parsable (%s): %s' % (component, err.reason, err.excerpt or excerpt(run.get('output_tail'))))]
    curve = (((profile or {}).get('collectives') or {}).get(collective) or {}).get('curve')
    single = parsed.get('nranks') is not None and parsed['nranks'] < MIN_RANKS
    if not single:
        # one rank moves nothing over a link (sendrecv copies within the GPU's own memory): not applicable, never
        # implausible -- a healthy one-GPU node would otherwise fail on a figure no link was asked to carry
        findings.extend(_collectives.implausible_findings(parsed, profile, host, component))
    findings.extend(f for f in _collectives.evaluate_curve(parsed, [] if single else curve or [], host, collective))
    if not parsed.get('rows') and not any(f['severity'] == 'fail' for f in findings):
        findings.append(_finding(host, 'workload.not_measured', component, 'no result rows', 'a bus bandwidth per size',
                                 '%s was requested but not measured: it printed no result row (%s)'
                                 % (component, excerpt(run.get('output_tail') or run.get('stdout'), 300))))
    expected = run.get('expected_ranks')
    if expected is not None and (parsed.get('rows') or parsed.get('nranks')) and parsed.get('nranks') != int(expected):
        measured = '%s rank(s)' % parsed['nranks'] if parsed.get('nranks') else 'no "# Rank" lines'
        findings.append(_finding(host, 'collectives.rank_count', component, measured, '%s rank(s)' % expected,
                                 '%s reported %s, the job asked for %s rank(s)%s: its figures are not those of this job'
                                 % (component, measured, expected, ' (%s)' % run['ranks_from'] if run.get('ranks_from') else '')))
    nodes = run.get('expected_nodes')
    seen = sorted(set(d.get('host') for d in parsed.get('devices') or [] if d.get('host')))
    if nodes is not None and seen and len(seen) != int(nodes):
        # the rank count alone passes a job whose ranks all ran on one node; the "# Rank ... on HOST" lines say where
        findings.append(_finding(host, 'collectives.rank_count', component, '%d node(s): %s' % (len(seen), ', '.join(seen)),
                                 '%s node(s)' % nodes,
                                 '%s ran its ranks on %d node(s), the job spans %s%s: its figures are not those of a job across '
                                 'the nodes' % (component, len(seen), nodes, ' (%s)' % run['ranks_from'] if run.get('ranks_from') else '')))
    for f in findings:
        f['component'] = component
    if failure:
        findings.append(failure)
    elif _rc(run) not in (0, None) and not any(f['check'] in ('collectives.incomplete', 'collectives.nccl_error') for f in findings):
        findings.append(_finding(host, 'collectives.run_failed', component, 'exit code %s' % _rc(run), 'exit code 0',
                                 '%s exited %s: %s' % (component, _rc(run), excerpt(run.get('output_tail'), 300))))
    return findings


def _single_result(run, host, component, what):
    """(result dict or None, findings) for a torch workload run with one result line."""
    failure = _run_failure(host, component, run, what)
    try:
        results = _parse(run, parse_result_lines)
    except ParseError as err:
        return None, [failure or _finding(host, 'workload.failed', component, 'unparsable result', 'a %s line' % RESULT_TAG,
                                          '%s: %s (%s)' % (component, err.reason, err.excerpt))]
    if not results:
        return None, [failure or _finding(host, 'workload.failed', component, 'exit code %s, no result' % _rc(run),
                                          'a %s line' % RESULT_TAG, '%s printed no result: %s' % (
                                              component, excerpt(run.get('output_tail') or run.get('stdout'), 400)))]
    return results[-1], ([failure] if failure else [])


def evaluate_torch_allreduce(run, profile, host, component='torch all_reduce'):
    result, findings = _single_result(run, host, component, 'torch')
    if result is None:
        return findings
    if not result.get('ok', False):
        findings.append(_finding(host, 'workload.failed', component, result.get('error') or 'failed', 'ok',
                                 '%s failed: %s' % (component, result.get('error'))))
    findings.extend(evaluate_placement(result, profile, host, component))
    parsed = _collectives.rows_from_bench(result)
    curve = (((profile or {}).get('collectives') or {}).get('all_reduce') or {}).get('curve')
    if isinstance(result.get('world_size'), int) and result['world_size'] < MIN_RANKS:
        curve = None        # not applicable (not_applicable says why), and no link was measured
    else:
        findings.extend(_collectives.implausible_findings(parsed, profile, host, component))
    for f in _collectives.evaluate_curve(parsed, curve or [], host, 'all_reduce'):
        if f['check'] in ('collectives.incomplete', 'collectives.nccl_error') and not result.get('ok', False):
            continue
        f['component'] = component
        findings.append(f)
    return findings


def evaluate_ddp_smoke(run, spec, host, component='ddp_smoke', profile=None):
    spec = spec or {}
    result, findings = _single_result(run, host, component, 'torch')
    if result is None:
        return findings
    findings.extend(evaluate_placement(result, profile, host, component))
    first, last = result.get('first_loss'), result.get('last_loss')
    drop = spec.get('min_loss_drop_pct', 10.0)
    if not result.get('ok', False) and result.get('error'):
        findings.append(_finding(host, 'workload.ddp_smoke', component, result.get('error'), 'training runs',
                                 'the DDP job failed: %s' % result.get('error')))
    elif first is None or last is None or first <= 0 or (first - last) * 100.0 / first < drop:
        findings.append(_finding(host, 'workload.ddp_smoke', component,
                                 'loss %s -> %s' % (first, last), 'loss falls by >= %s%%' % drop,
                                 'the loss did not fall by %s%% in %d steps' % (drop, len(result.get('losses') or []))))
    if result.get('params_in_sync') is False:
        findings.append(_finding(host, 'workload.ddp_smoke', component, 'parameters differ between ranks', 'identical',
                                 'after training, the model parameters differ between ranks: gradients were not all-reduced correctly'))
    bound = spec.get('max_step_time_ms')
    step = result.get('step_time_ms_median')
    if bound is not None and step is not None and step > bound:
        findings.append(_finding(host, 'workload.ddp_step_time', component, round(step, 2), '<= %s ms' % bound,
                                 'median step time %.1f ms is above %s ms' % (step, bound)))
    findings.extend(evaluate_step_times(result, spec, host, component))
    return findings


# Bounds of the step-time distribution (the profile's workloads.ddp_smoke, same keys); docs/metrics.md says why.
# max_rank_lag_pct has no default: only a healthy run on two or more GPUs can prove one, and none has been lent yet.
STEP_DEFAULTS = {'warmup_steps': 3, 'max_p99_ratio': 3.0, 'spike_ratio': 1.5, 'spike_min_count': 3, 'max_rank_lag_pct': None}
STRAGGLER_NOT_JUDGED = ('workload.ddp_straggler: not judged: the profile sets no workloads.ddp_smoke.max_rank_lag_pct '
                        '(no healthy run on two or more GPUs has proven a default)')
MIN_JUDGED_STEPS = 5


def _numbers(values):
    return [v for v in values or [] if _number(v) is not None]


def _middle(values):
    return _collectives._median(values) if values else None  # pylint: disable=protected-access


def _periodic(spikes):
    """(period, [steps]) of the longest run of ``spikes`` (step numbers) at one fixed distance of 2 or more."""
    present, best = set(spikes), (None, [])
    for period in range(2, (max(spikes) if spikes else 0) + 1):
        for first in spikes:
            chain = [first]
            while chain[-1] + period in present:
                chain.append(chain[-1] + period)
            if len(chain) > len(best[1]):
                best = (period, chain)
    return best


def step_timing(result, spec=None):
    """The step times of a DDP smoke result (``per_rank``: ``[{rank, host, step_ms: [...], pre_sync_ms: [...]}]``) after
    the warm-up: ``{warmup_steps, judged_steps, median_ms, p99_ms, p99_ratio, spikes, period, periodic_steps, last_rank}``
    (steps counted from 1; ``last_rank``: the rank that finished its data and forward pass last in the most steps, with
    ``share_pct`` of the steps and its median ``lag_ms`` behind the ranks' median), or ``{not_judged: why}``."""
    bounds = dict(STEP_DEFAULTS)
    if _number(result.get('warmup_steps')) is not None:
        bounds['warmup_steps'] = result['warmup_steps']       # what the script was told; the profile's, when set, wins
    bounds.update(dict((k, v) for k, v in (spec or {}).items() if k in STEP_DEFAULTS and v is not None))
    ranks = [r for r in result.get('per_rank') or [] if isinstance(r, dict) and _numbers(r.get('step_ms'))]
    if not ranks:
        return {'not_judged': 'the DDP smoke reported no per-step times (per_rank)'}
    if result.get('backend') not in (None, 'nccl'):
        return {'not_judged': 'step times of a run on the CPU (%s) are those of a shared CPU, not of the GPUs'
                              % result.get('backend')}
    warmup = int(bounds['warmup_steps'])
    count = min(len(r['step_ms']) for r in ranks)
    if count - warmup < MIN_JUDGED_STEPS:
        return {'not_judged': '%d step(s) after %d warm-up step(s): fewer than %d to judge' % (
            max(0, count - warmup), warmup, MIN_JUDGED_STEPS)}
    steps = list(range(warmup, count))
    times = [max(_number(r['step_ms'][i]) or 0.0 for r in ranks) for i in steps]
    median = _middle(times)
    ordered = sorted(times)
    p99 = ordered[max(0, -(-99 * len(ordered) // 100) - 1)]
    spikes = [i + 1 for i, t in zip(steps, times) if median and t > bounds['spike_ratio'] * median]
    period, chain = _periodic(spikes)
    out = {'warmup_steps': warmup, 'judged_steps': len(steps), 'median_ms': round(median, 3), 'p99_ms': round(p99, 3),
           'max_ms': round(ordered[-1], 3), 'p99_ratio': round(p99 / median, 3) if median else None, 'spikes': spikes,
           'bounds': bounds}
    if len(chain) >= bounds['spike_min_count']:
        out.update(period=period, periodic_steps=chain)
    usable = [r for r in ranks if len(_numbers(r.get('pre_sync_ms'))) >= count]
    if len(usable) >= 2 and len(usable) == len(ranks):
        last, lags = {}, dict((r.get('rank'), []) for r in usable)
        for i in steps:
            pre = [(r['pre_sync_ms'][i], r.get('rank')) for r in usable]
            middle = _middle([value for value, _rank in pre])
            last_rank = max(pre)[1]
            last[last_rank] = last.get(last_rank, 0) + 1
            for value, rank in pre:
                lags[rank].append(value - middle)
        rank = max(sorted(last, key=str), key=lambda r: last[r])
        host = [r.get('host') for r in usable if r.get('rank') == rank][0]
        out['last_rank'] = {'rank': rank, 'host': host, 'share_pct': round(100.0 * last[rank] / len(steps), 1),
                            'lag_ms': round(_middle(lags[rank]), 3)}
        if bounds['max_rank_lag_pct'] is None:
            out['straggler'] = STRAGGLER_NOT_JUDGED
    return out


def evaluate_step_times(result, spec, host, component='ddp_smoke'):
    """``workload.ddp_step_jitter``, ``workload.ddp_step_periodic`` and ``workload.ddp_straggler`` of a DDP smoke
    result's per-rank step times (``step_timing``); a result without them is not judged (``summarise_run`` says why)."""
    timing = step_timing(result, spec)
    if 'not_judged' in timing:
        return []
    bounds, findings = timing['bounds'], []
    median = timing['median_ms']
    if timing['p99_ratio'] is not None and timing['p99_ratio'] > bounds['max_p99_ratio']:
        findings.append(_finding(host, 'workload.ddp_step_jitter', component,
                                 'p99 %s ms = %sx the median %s ms' % (timing['p99_ms'], timing['p99_ratio'], median),
                                 '<= %sx the median (workloads.ddp_smoke.max_p99_ratio)' % bounds['max_p99_ratio'],
                                 'the slowest steps took %sx the median step time (%d steps after %d warm-up; slower than '
                                 '%sx the median: steps %s)' % (
                                     timing['p99_ratio'], timing['judged_steps'], timing['warmup_steps'], bounds['spike_ratio'],
                                     ', '.join(str(s) for s in timing['spikes']))))
    if timing.get('periodic_steps'):
        steps = ', '.join(str(s) for s in timing['periodic_steps'])
        findings.append(_finding(host, 'workload.ddp_step_periodic', component,
                                 'every %d steps: steps %s above %sx the median %s ms' % (
                                     timing['period'], steps, bounds['spike_ratio'], median),
                                 'fewer than %s slow steps at one period' % bounds['spike_min_count'],
                                 'steps %s (every %d steps, counted from 1) each took more than %sx the median step time %s ms'
                                 % (steps, timing['period'], bounds['spike_ratio'], median)))
    last = timing.get('last_rank')
    lag_bound = bounds['max_rank_lag_pct']
    if last and median and lag_bound is not None and last['share_pct'] >= 50 and last['lag_ms'] >= lag_bound / 100.0 * median:
        who = 'rank %s (%s)' % (last['rank'], last['host']) if last.get('host') else 'rank %s' % last['rank']
        findings.append(_finding(host, 'workload.ddp_straggler', who,
                                 '%s last in %s%% of steps, %s ms behind the median rank' % (who, last['share_pct'], last['lag_ms']),
                                 'no rank behind the others by >= %s%% of the median step time %s ms (workloads.ddp_smoke.'
                                 'max_rank_lag_pct)' % (bounds['max_rank_lag_pct'], median),
                                 '%s reached the gradient all-reduce last in %s%% of the %d steps after the warm-up, a median '
                                 '%s ms after the median rank (the step: %s ms): every other rank waited for it'
                                 % (who, last['share_pct'], timing['judged_steps'], last['lag_ms'], median),
                                 context={'rank_host': who}))
    return findings


def evaluate_fault_isolation(run, spec, host, component='fault_isolation'):
    spec = spec or {}
    result, findings = _single_result(run, host, component, 'torch')
    if result is None:
        return findings
    if not_applicable('fault_isolation', run):
        return findings         # one rank: nothing to isolate (not_applicable says so in the report)
    bound = spec.get('bound_s', result.get('bound_s'))
    seconds = result.get('seconds')
    if result.get('hung') or not result.get('ended_with_error'):
        findings.append(_finding(host, 'workload.fault_isolation', component,
                                 'hung for %ss' % seconds if result.get('hung') else 'exit code %s' % result.get('exit_code'),
                                 'ends with an error within %ss' % bound,
                                 'after rank %s was killed, the job %s' % (
                                     result.get('victim_rank'), 'hung past the bound' if result.get('hung') else 'did not report an error')))
    elif bound is not None and seconds is not None and seconds > bound:
        findings.append(_finding(host, 'workload.fault_isolation', component, '%.1f s' % seconds, '<= %s s' % bound,
                                 'the job took %.1f s to end after rank %s was killed' % (seconds, result.get('victim_rank'))))
    elif not result.get('attributed', False):
        findings.append(_finding(host, 'workload.fault_isolation', component, 'error does not name the failed rank',
                                 'error names rank %s' % result.get('victim_rank'),
                                 'the job ended, but its error does not say which rank failed', severity='warn'))
    return findings


def evaluate_elastic_restart(run, spec, host, component='elastic_restart', profile=None):
    """Elastic restart (roles/torch_workloads/files/elastic_restart_launch.py): one rank of a training job that
    checkpoints every ``checkpoint_every`` steps is killed after a checkpoint; torchrun must restart the workers, which
    resume from the last checkpoint and finish. ``workload.elastic_not_recovered``: the job did not finish after the
    kill, or finished without one (then the test failed, not the node, and the message says so);
    ``workload.elastic_recovery_slow``: the kill to the first step after the restart above ``recover_s_max``;
    ``workload.elastic_steps_lost``: more steps redone than ``checkpoint_every``. A run on the CPU, or on fewer GPUs
    than the profile has, is ``workload.placement``."""
    spec = spec or {}
    result, findings = _single_result(run, host, component, 'torch')
    if result is None:
        return findings
    findings.extend(evaluate_placement(result, profile, host, component))
    error = result.get('error')
    restarts, steps = _number(result.get('restarts')), _number(result.get('steps'))
    done = _number(result.get('steps_done'))
    if not result.get('killed'):
        findings.append(_finding(
            host, 'workload.elastic_not_recovered', component, 'no rank killed%s' % (': %s' % error if error else ''),
            'one rank killed after step %s, then restarted' % _shown(result.get('kill_step') or _default_kill(result)),
            'test error, not a verdict on the node: the kill did not happen, so the restart was not tested (%s)'
            % (error or 'no reason given')))
        return findings
    finished = (not result.get('hung') and _rc(run) in (0, None) and result.get('exit_code') == 0
                and steps is not None and done == steps)
    if not finished:
        measured = ('still running after %ss' % result.get('bound_s') if result.get('hung')
                    else 'exit code %s, %s of %s steps' % (result.get('exit_code'), _shown(done), _shown(steps)))
        findings.append(_finding(
            host, 'workload.elastic_not_recovered', component, measured,
            'every step done after the restart (at most %s restarts)' % _shown(result.get('max_restarts')),
            'after rank %s was killed at step %s, the job did not finish: %s' % (
                result.get('victim_rank'), result.get('kill_step'), error or 'no error reported')))
        return findings
    if not restarts:
        findings.append(_finding(
            host, 'workload.elastic_not_recovered', component, 'finished without a restart', 'restarted once or more',
            'test error, not a verdict on the node: rank %s was sent SIGKILL at step %s, yet the job finished without a '
            'restart, so the restart was not tested' % (result.get('victim_rank'), result.get('kill_step'))))
        return findings
    if error or result.get('ok') is False:
        findings.append(_finding(host, 'workload.failed', component, error or 'not ok', 'no error',
                                 'the elastic restart job recovered but failed: %s' % (error or 'not ok')))
    bound, recover = _number(spec.get('recover_s_max')), _number(result.get('recover_s'))
    if recover is None:
        findings.append(_finding(host, 'workload.elastic_recovery_slow', component, 'not measured',
                                 '<= %s s' % _shown(bound), 'the job finished, but no step after the restart was seen, '
                                 'so the time to recover is unknown'))
    elif bound is not None and recover > bound:
        findings.append(_finding(
            host, 'workload.elastic_recovery_slow', component, '%.1f s' % recover, '<= %s s' % bound,
            'from the SIGKILL of rank %s to the first step after the restart took %.1f s (%s restart(s); the whole job '
            '%s s)' % (result.get('victim_rank'), recover, restarts, _shown(result.get('total_s')))))
    every = _number(result.get('checkpoint_every'))
    every = every if every is not None else _number(spec.get('checkpoint_every'))
    redone = _number(result.get('steps_redone'))
    if redone is None or (every is not None and redone > every):
        findings.append(_finding(
            host, 'workload.elastic_steps_lost', component,
            '%s step(s) redone (resumed from step %s, killed after step %s)' % (
                _shown(redone), _shown(result.get('resumed_from')), result.get('kill_step')),
            '<= %s (a checkpoint every %s steps)' % (_shown(every), _shown(every)),
            'the restarted job resumed from step %s after the kill at step %s: %s' % (
                _shown(result.get('resumed_from')), result.get('kill_step'),
                'it did not report the step it resumed from' if redone is None
                else 'more steps lost than one checkpoint interval')))
    return findings


def _default_kill(result):
    every = _number(result.get('checkpoint_every'))
    return every + max(1, every // 2) if every else None


def evaluate_soak(run, spec, host, component='soak', profile=None):
    spec = spec or {}
    result, findings = _single_result(run, host, component, 'torch')
    if result is None:
        return findings
    findings.extend(evaluate_placement(result, profile, host, component))
    bound_rss = spec.get('max_rss_growth_pct', 10.0)
    bound_gpu = spec.get('max_gpu_mem_growth_pct', 10.0)
    rss, gpu = result.get('rss_growth_pct'), result.get('gpu_mem_growth_pct')
    if rss is not None and rss > bound_rss:
        findings.append(_finding(host, 'workload.soak', component, 'host RSS +%.1f%%' % rss, '<= +%s%%' % bound_rss,
                                 'host memory grew by %.1f%% during the soak' % rss))
    if gpu is not None and gpu > bound_gpu:
        findings.append(_finding(host, 'workload.soak', component, 'GPU memory +%.1f%%' % gpu, '<= +%s%%' % bound_gpu,
                                 'GPU memory grew by %.1f%% during the soak' % gpu))
    findings.extend(_soak_throughput(result, spec.get('min_iterations_per_s'), host, component))
    for err in result.get('new_errors') or []:
        findings.append(_finding(host, 'workload.soak', '%s gpu%s' % (component, err.get('gpu')),
                                 '%s %s -> %s' % (err.get('field'), err.get('before'), err.get('after')), 'no new errors',
                                 'new %s on %s GPU %s during the soak' % (err.get('field'), err.get('host') or host, err.get('gpu'))))
    if result.get('error'):
        findings.append(_finding(host, 'workload.failed', component, result['error'], 'no error',
                                 'the soak stopped: %s' % result['error']))
    return findings


def _gpu_single_figures(result):
    """[(index, bf16_tflops, membw_gbps)] of the GPUs a gpu_single run measured (None where one has no figure)."""
    out = []
    for entry in result.get('gpus') or []:
        if isinstance(entry, dict) and _number(entry.get('index')) is not None:
            out.append((entry['index'], _number(entry.get('bf16_tflops')), _number(entry.get('membw_gbps'))))
    return out


def evaluate_gpu_single(run, spec, host, component='gpu_single', profile=None):
    """Each GPU alone (roles/torch_workloads/files/gpu_single.py): every GPU's dense bf16 TFLOP/s and device-copy
    GB/s against the profile's floors (``workloads.gpu_single.min_bf16_tflops``, ``min_membw_gbps``), and against the
    median of the node's GPUs (``max_spread_pct``, two GPUs or more), so that one weak GPU of eight is named before
    the collectives. A GPU that failed is ``workload.failed`` naming it; torch on the CPU or on fewer GPUs than the
    profile is ``workload.placement``."""
    spec = spec or {}
    result, findings = _single_result(run, host, component, 'torch')
    if result is None:
        return findings
    findings.extend(evaluate_placement(result, profile, host, component))
    for entry in result.get('gpus') or []:
        if isinstance(entry, dict) and entry.get('error'):
            findings.append(_finding(host, 'workload.failed', 'gpu%s' % entry.get('index'), entry['error'], 'measured',
                                     'GPU %s failed alone: %s' % (entry.get('index'), entry['error'])))
    if result.get('error') and not any(isinstance(e, dict) and e.get('error') for e in result.get('gpus') or []):
        findings.append(_finding(host, 'workload.failed', component, result['error'], 'no error',
                                 '%s failed: %s' % (component, result['error'])))
    figures = _gpu_single_figures(result)
    floors = (('bf16_tflops', 1, 'workload.gpu_compute_low', spec.get('min_bf16_tflops'), 'TFLOP/s', 'dense bf16 matmul'),
              ('membw_gbps', 2, 'workload.gpu_membw_low', spec.get('min_membw_gbps'), 'GB/s', 'device-to-device copy'))
    for _name, col, check, floor, unit, what in floors:
        if floor is None:
            continue
        for row in figures:
            if row[col] is not None and row[col] < floor:
                findings.append(_finding(host, check, 'gpu%s' % row[0], '%s %s' % (row[col], unit), '>= %s %s' % (floor, unit),
                                         'GPU %s alone: %s at %s %s, below the %s %s healthy GPUs of the model reach'
                                         % (row[0], what, row[col], unit, floor, unit), context={'index': row[0]}))
    spread = spec.get('max_spread_pct', 10.0)
    if len(figures) >= 2 and spread is not None:
        for _name, col, _check, _floor, unit, what in floors:
            values = sorted(row[col] for row in figures if row[col] is not None)
            if len(values) < 2:
                continue
            middle = values[len(values) // 2] if len(values) % 2 else (values[len(values) // 2 - 1] + values[len(values) // 2]) / 2.0
            # with two GPUs the median is their mean: the slower is named when it is below the faster by the spread
            reference = max(values) if len(values) == 2 else middle
            for row in figures:
                if row[col] is not None and reference > 0 and row[col] < reference * (1 - spread / 100.0):
                    findings.append(_finding(
                        host, 'workload.gpu_outlier', 'gpu%s' % row[0], '%s %s' % (row[col], unit),
                        '>= %.1f %s (%s%% below the %s of the node\'s GPUs, %s %s)' % (
                            reference * (1 - spread / 100.0), unit, spread, 'faster' if len(values) == 2 else 'median', reference, unit),
                        'GPU %s alone: %s at %s %s, %.1f%% below the %s of its node\'s %d GPUs (%s %s)' % (
                            row[0], what, row[col], unit, 100.0 * (1 - row[col] / reference),
                            'faster' if len(values) == 2 else 'median', len(values), reference, unit), context={'index': row[0]}))
    return findings


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _soak_throughput(result, bound, host, component):
    """``workload.soak_throughput``: the slowest rank's iterations per second (its iterations over the soak's duration)
    below ``workloads.soak.min_iterations_per_s``; not judged without the bound or without the figures."""
    duration = _number(result.get('duration_s'))
    if bound is None or not duration or duration <= 0:
        return []
    ranks = [(r.get('rank'), _number(r.get('iterations'))) for r in result.get('per_rank') or [] if isinstance(r, dict)]
    ranks = [(rank, its) for rank, its in ranks if its is not None]
    if not ranks and _number(result.get('iterations')) is not None:
        ranks = [(0, result['iterations'])]
    if not ranks:
        return []
    rank, iterations = min(ranks, key=lambda pair: pair[1])
    rate = iterations / float(duration)
    if rate >= bound:
        return []
    return [_finding(host, 'workload.soak_throughput', component, '%.1f iterations/s (rank %s)' % (rate, rank),
                     '>= %s iterations/s' % bound,
                     'rank %s of the soak ran %d iterations in %.1f s (%.1f/s), below the %s/s healthy GPUs of the model '
                     'sustain (workloads.soak.min_iterations_per_s)' % (rank, iterations, duration, rate, bound))]


def evaluate_mesh(run, host):
    """The SSH mesh and fabric preflight of a job (``run``: ``findings`` of the host's ``mesh_check`` and of the
    once-per-job ``mesh_compare``, already in the finding shape): this host's findings, kept as they are. A
    preflight that was requested and gave no result is ``mesh.not_measured``, never a pass."""
    if not isinstance(run.get('findings'), list):
        return [_finding(host, 'workload.not_measured', run.get('component') or 'ssh mesh', 'not measured: no result',
                         'a mesh_check result', 'the SSH mesh preflight was requested but gave no result: %s'
                         % excerpt(str(run.get('message') or 'no findings list'), 300))]
    return [dict(f) for f in run['findings'] if isinstance(f, dict) and f.get('host', host) == host and f.get('check')]


def evaluate_scheduler(run, host):
    """The scheduler's view of the node before it returns to service (``run``: the result of scheduler_node action
    health): ``_scheduler.health_findings`` of what it read; a result without it is ``scheduler.not_measured``."""
    health = run.get('health')
    if not isinstance(health, dict):
        health = {'node': run.get('node') or host, 'errors': ['no scheduler health was read: %s' % excerpt(
            str(run.get('msg') or run.get('message') or 'no health in the result'), 300)]}
    return _scheduler.health_findings(health, host)


EVALUATORS = {
    'nccl_tests': lambda run, profile, host: evaluate_nccl_tests(run, profile, host, run.get('component')),
    'torch_allreduce': evaluate_torch_allreduce,
    'ddp_smoke': lambda run, profile, host: evaluate_ddp_smoke(run, ((profile or {}).get('workloads') or {}).get('ddp_smoke'), host,
                                                               profile=profile),
    'fault_isolation': lambda run, profile, host: evaluate_fault_isolation(
        run, ((profile or {}).get('workloads') or {}).get('fault_isolation'), host),
    'elastic_restart': lambda run, profile, host: evaluate_elastic_restart(
        run, ((profile or {}).get('workloads') or {}).get('elastic_restart'), host, run.get('component') or 'elastic_restart',
        profile=profile),
    'soak': lambda run, profile, host: evaluate_soak(run, ((profile or {}).get('workloads') or {}).get('soak'), host, profile=profile),
    'gpu_single': lambda run, profile, host: evaluate_gpu_single(
        run, ((profile or {}).get('workloads') or {}).get('gpu_single'), host, run.get('component') or 'gpu_single', profile=profile),
    'task_error': lambda run, profile, host: evaluate_task_error(run, host, run.get('component')),
    'not_measured': lambda run, profile, host: evaluate_not_measured(run, host),
    'link_counters': _links.evaluate_counter_growth,
    'mesh': lambda run, profile, host: evaluate_mesh(run, host),
    'container_smoke': lambda run, profile, host: _container.evaluate(run, host),
    'scheduler': lambda run, profile, host: evaluate_scheduler(run, host),
}


def evaluate(kind, run, profile, host):
    """Findings for one run of ``kind`` (nccl_tests, torch_allreduce, ddp_smoke, fault_isolation, elastic_restart, soak)."""
    if kind not in EVALUATORS:
        raise ValueError('unknown workload kind %r' % kind)
    return EVALUATORS[kind](run, profile, host)


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def summarise_run(kind, run, spec=None):
    """The figures of a run worth keeping in the report (small: no raw output). ``spec``: the profile's bounds of the
    workload (``workloads.ddp_smoke`` for its step times)."""
    keep = {'kind': kind, 'component': run.get('component'), 'exit_code': _rc(run), 'seconds': run.get('seconds'),
            'command': run.get('command'), 'timed_out': run.get('timed_out')}
    if kind == 'link_counters':
        keep['counter_growth'] = _links.summarise_growth(run, sorted(_links.GROWTH_SUMMARY))
        return keep
    if kind == 'container_smoke':
        keep['component'] = keep['component'] or _container.component(run)
        keep['container'] = _container.summary(run)
        reason = _container.not_measured_reason(run)
        if reason:
            keep['not_measured'] = reason
        return keep
    if kind == 'scheduler':
        keep['component'] = keep['component'] or run.get('node')
        keep['scheduler'] = _scheduler.health_summary(run.get('health'))
        return keep
    if kind == 'mesh':
        # ansible-core 2.16 templates numbers to strings
        keep.update(peers=_int_or_none(run.get('peers_checked')), interface=run.get('interface') or None,
                    mtu=_int_or_none(run.get('mtu')))
        return keep
    try:
        if kind == 'nccl_tests':
            parsed = _parse(run, parse_nccl_tests)
            keep['avg_busbw_gbps'] = parsed.get('avg_busbw_gbps')
            keep['busbw_gbps'] = dict((str(size), busbw) for size, busbw in _collectives.busbw_by_size(parsed).items())
            keep['cycles'] = parsed.get('cycles')
        else:
            results = _parse(run, parse_result_lines)
            if results:
                result = results[-1]
                if kind == 'torch_allreduce':
                    keep['busbw_gbps'] = dict((str(s['size_bytes']), s.get('busbw_gbps')) for s in result.get('sizes') or [])
                else:
                    keep['result'] = dict((k, v) for k, v in result.items() if k not in ('samples', 'per_rank', 'survivors'))
                if kind == 'ddp_smoke':
                    keep['step_times'] = step_timing(result, spec)
    except ParseError:
        pass
    return keep

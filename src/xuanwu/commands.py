"""Command jobs (``{name, command, nodes}``): through Slurm's ``srun`` when a scheduler is there, else over
SSH (BatchMode) on each node, or locally for ``localhost``/``127.0.0.1``.

``run_command`` runs inside the attempt process (``xuanwu._attempt``): every process it starts stays in the
attempt's process group, so a timeout or a cancel kills them all.
"""
from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import threading
from pathlib import Path

LOCAL_NODES = ('localhost', '127.0.0.1', '::1')
# Each Slurm task first prints this line on stderr, so that the record holds the Slurm job id and the node.
SLURM_MARK = 'xuanwu-slurm: job=%s node=%s'
SLURM_MARK_RE = re.compile(r'^xuanwu-slurm: job=(\S*) node=(\S*)$', re.M)
SLURM_WRAPPER = 'printf "xuanwu-slurm: job=%s node=%s\\n" "$SLURM_JOB_ID" "$SLURMD_NODENAME" >&2; exec bash -lc "$1"'
SSH_OPTIONS = ('-o', 'BatchMode=yes', '-o', 'ConnectTimeout=10', '-o', 'ServerAliveInterval=15')
TRANSIENT_TEXT = re.compile(r'NODE_FAIL|Node failure|Unable to allocate resources: (Socket timed out|'
                            r'Unable to contact)|Connection (timed out|refused|closed)|No route to host|'
                            r'Could not resolve hostname', re.I)


def pick_mode(scheduler: str, nodes) -> str:
    """'slurm', 'local' or 'ssh' for a command job on ``nodes`` under the configured ``scheduler``."""
    if scheduler == 'slurm' or (scheduler == 'auto' and shutil.which('srun')):
        return 'slurm'
    if all(node in LOCAL_NODES for node in nodes):
        return 'local'
    return 'ssh'


def slurm_argv(job_id: str, nodes, command: str) -> list:
    return ['srun', '--nodelist=%s' % ','.join(nodes), '--nodes=%d' % len(nodes), '--ntasks-per-node=1',
            '--job-name=xuanwu-%s' % job_id, '--kill-on-bad-exit=1',
            'bash', '-c', SLURM_WRAPPER, 'xuanwu', command]


def cancel_slurm(job_id: str) -> None:
    """Cancel the Slurm job of xuanwu job ``job_id`` (its name is xuanwu-<id>)."""
    if shutil.which('scancel'):
        subprocess.run(['scancel', '--name=xuanwu-%s' % job_id], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30, check=False)


def _run(argv, out_path: Path, err_path: Path) -> int:
    with open(out_path, 'ab') as out, open(err_path, 'ab') as err:
        return subprocess.run(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, check=False).returncode


def run_command(adir: Path, params: dict) -> dict:
    nodes, command, mode = params['nodes'], params['command'], params['mode']
    out_path, err_path = adir / 'stdout.txt', adir / 'stderr.txt'
    result = {'mode': mode, 'nodes': list(nodes)}
    if mode == 'slurm':
        result['rc'] = _run(slurm_argv(params['job_id'], nodes, command), out_path, err_path)
        marks = SLURM_MARK_RE.findall(err_path.read_text(encoding='utf-8', errors='replace'))
        result['slurm_job_id'] = marks[0][0] if marks else None
        result['ran_on'] = sorted(set(mark[1] for mark in marks))
    elif mode == 'local':
        result['rc'] = _run(['bash', '-lc', command], out_path, err_path)
        result['ran_on'] = ['localhost']
    else:
        rcs = {}

        config_file = ['-F', params['ssh_config_file']] if params.get('ssh_config_file') else []

        def one(node):
            rcs[node] = _run(['ssh'] + config_file + list(SSH_OPTIONS) + ['--', node, command],
                             adir / ('stdout-%s.txt' % node), adir / ('stderr-%s.txt' % node))
        threads = [threading.Thread(target=one, args=(node,)) for node in nodes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        result['node_rc'] = rcs
        bad = [rc for rc in rcs.values() if rc != 0]
        result['rc'] = 255 if 255 in bad else (bad[0] if bad else 0)
        result['ran_on'] = sorted(rcs)
    errors = ''
    for path in sorted(adir.glob('stderr*.txt')):
        errors += path.read_text(encoding='utf-8', errors='replace')
    result['transient_hint'] = bool(TRANSIENT_TEXT.search(errors)) or result['rc'] == 255
    result['stderr_tail'] = errors[-4000:]
    return result


def describe(params: dict) -> str:
    if params['mode'] == 'slurm':
        return shlex.join(slurm_argv(params['job_id'], params['nodes'], params['command']))
    if params['mode'] == 'local':
        return shlex.join(['bash', '-lc', params['command']])
    return 'ssh %s -- <node> %s' % (' '.join(SSH_OPTIONS), shlex.quote(params['command']))

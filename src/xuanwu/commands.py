"""Command jobs (``{name, command, nodes}``): through Slurm's ``srun`` when a scheduler is there, else over
SSH (BatchMode) on each node, or locally for ``localhost``/``127.0.0.1``.

``run_command`` runs inside the attempt process (``xuanwu._attempt``): every process it starts belongs to
the attempt's tree (its cgroup, session and marker), so a timeout or a cancel kills them all.

A command is a shell line (``bash -lc``), or, for the tasks of a batch with a command template, an argv
run without a shell. Failures are classed per mode (``classify``): the command's own exit status and
stderr are the user's, permanent unless the batch lists the status in ``retry_on_exit_codes``; only the
transport is transient: the ssh client's own failure to reach a node (rc 255 with ssh's message),
Slurm's node failures and allocation errors (srun's own lines).
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
# srun's own lines (they start with "srun: ") that say a node or the controller failed, not the command.
SLURM_TRANSIENT = re.compile(r'^srun: .*(NODE_FAIL|Node failure|Unable to allocate resources: (Socket timed out|'
                             r'Unable to contact)|Unable to contact slurm controller|Communication connection failure|'
                             r'Job step aborted: Waiting up to)', re.I | re.M)
# The ssh client's own messages when it cannot reach a node (then it exits 255).
SSH_TRANSPORT = re.compile(r'^(ssh: (connect to host .*: (Connection (refused|timed out)|No route to host|'
                           r'Network is unreachable)|Could not resolve hostname .*)|'
                           r'kex_exchange_identification: .*|Connection (closed|reset|timed out) by .*|'
                           r'Connection timed out during banner exchange|Connection to .* port [0-9]+ timed out|'
                           r'Timeout, server .* not responding\.?)\s*$', re.I | re.M)


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


def _run(argv, out_path: Path, err_path: Path, cwd=None) -> int:
    with open(out_path, 'ab') as out, open(err_path, 'ab') as err:
        try:
            return subprocess.run(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, check=False,
                                  cwd=cwd).returncode
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            # the user's program itself cannot be run: the shell's status for it (127, 126)
            err.write(('xuanwu: cannot run %s: %s\n' % (argv[0], exc.strerror)).encode())
            return 127 if isinstance(exc, FileNotFoundError) else 126


def shell_line(params: dict) -> str:
    """The command as one shell line (a batch's argv quoted), for bash, ssh and srun."""
    return shlex.join(params['argv']) if params.get('argv') else params['command']


def run_command(adir: Path, params: dict) -> dict:
    nodes, command, mode = params['nodes'], shell_line(params), params['mode']
    out_path, err_path = adir / 'stdout.txt', adir / 'stderr.txt'
    result = {'mode': mode, 'nodes': list(nodes)}
    cwd = params.get('cwd') or None
    if mode == 'slurm':
        result['rc'] = _run(slurm_argv(params['job_id'], nodes, command), out_path, err_path, cwd)
        marks = SLURM_MARK_RE.findall(err_path.read_text(encoding='utf-8', errors='replace'))
        result['slurm_job_id'] = marks[0][0] if marks else None
        result['ran_on'] = sorted(set(mark[1] for mark in marks))
    elif mode == 'local':
        argv = params['argv'] if params.get('argv') else ['bash', '-lc', command]
        result['rc'] = _run(argv, out_path, err_path, cwd)
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
        unreached = sorted(node for node, rc in rcs.items() if rc == 255 and SSH_TRANSPORT.search(
            (adir / ('stderr-%s.txt' % node)).read_text(encoding='utf-8', errors='replace')))
        result['unreached'] = unreached
        bad = [rc for rc in rcs.values() if rc != 0]
        result['rc'] = 255 if unreached else (bad[0] if bad else 0)
        result['ran_on'] = sorted(rcs)
        result['transport_failure'] = bool(unreached)
    errors = ''
    for path in sorted(adir.glob('stderr*.txt')):
        errors += path.read_text(encoding='utf-8', errors='replace')
    if mode == 'slurm':
        result['transport_failure'] = result['rc'] != 0 and bool(SLURM_TRANSIENT.search(errors))
    result['stderr_tail'] = errors[-4000:]
    return result


def classify(exit_info: dict, retry_on_exit_codes=()) -> dict:
    """status, error_class and reason of a failed command attempt (see the module's text)."""
    rc = exit_info.get('rc')
    if exit_info.get('transport_failure'):
        where = {'ssh': 'ssh could not reach %s' % ', '.join(exit_info.get('unreached') or ['a node']),
                 'slurm': 'Slurm reported a node or controller failure'}.get(exit_info.get('mode'), 'transport failure')
        return {'status': 'failed', 'error_class': 'transient',
                'reason': 'the command exited with %s (node or connection failure: %s)' % (rc, where)}
    if rc in (retry_on_exit_codes or ()):
        return {'status': 'failed', 'error_class': 'transient',
                'reason': 'the command exited with %s (listed in retry_on_exit_codes)' % rc}
    return {'status': 'failed', 'error_class': 'permanent', 'reason': 'the command exited with %s' % rc}


def describe(params: dict) -> str:
    if params['mode'] == 'slurm':
        return shlex.join(slurm_argv(params['job_id'], params['nodes'], shell_line(params)))
    if params['mode'] == 'local':
        return shlex.join(params['argv'] if params.get('argv') else ['bash', '-lc', params['command']])
    return 'ssh %s -- <node> %s' % (' '.join(SSH_OPTIONS), shlex.quote(shell_line(params)))

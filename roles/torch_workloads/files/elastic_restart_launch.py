# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Elastic restart (field guide 5.4, "does the job recover by itself"): run elastic_restart.py under torchrun with
--max-restarts, kill one rank with SIGKILL after a checkpoint, and time how the job recovers.

    python3 elastic_restart_launch.py --nproc-per-node 8 --max-restarts 3 --steps 20 --checkpoint-every 5

makes a private checkpoint directory (mode 0700, under --checkpoint-parent), starts ``python -m
torch.distributed.run`` with the c10d rendezvous on 127.0.0.1 (one node; extra launcher options after
``--torchrun-arg``) in its own session, with the job's output on this script's stderr, and reads the job's progress
lines. When the victim rank (default the last) reports that it holds after step --kill-at-step (default: the first
checkpoint plus half an interval, so that the steps after that checkpoint are lost and redone), it gets SIGKILL;
torchrun restarts the worker group, which resumes from the last checkpoint and finishes. A job still running after
--bound-s seconds is hung: torchrun and its workers get SIGTERM, then SIGKILL. The checkpoint directory is removed at the end.

Prints one final line ``XUANWU_RESULT {json}``::

    {"ok", "killed", "victim_rank", "victim_pid", "kill_step", "restarts", "max_restarts", "resumed_from",
     "steps_redone", "checkpoint_every", "steps", "steps_done", "recover_s", "total_s", "final_loss", "first_loss",
     "exit_code", "hung", "bound_s", "nproc_per_node", "world_size", "backend", "device", "cuda_available",
     "device_count", "torch_nccl_version", "torch_version", "checkpoint_dir_removed", "error", "command"}

``restarts``: the worker group's restart count when it finished (TORCHELASTIC_RESTART_COUNT), else the highest one
seen. ``resumed_from``: the step of the checkpoint the restarted group loaded. ``steps_redone``: the kill step less
that step (the steps trained twice). ``recover_s``: from the kill to the end of the first step after the restart, as
this script read the lines. ``total_s``: the whole job. ``ok``: killed, restarted, finished every step with exit 0
and a loss that fell. The exit status is 0 when ok, else 1. Needs only the standard library (and torch for the job);
Python 3.8+.
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload_common as common  # noqa: E402  pylint: disable=wrong-import-position
from fault_isolation_launch import free_port  # noqa: E402  pylint: disable=wrong-import-position

RESULT_TAG = common.RESULT_TAG
EVENT_TAG = 'XUANWU_ELASTIC'
HERE = os.path.dirname(os.path.abspath(__file__))
# what the launcher's result takes from the job's own result line
FROM_JOB = ('steps_done', 'final_loss', 'first_loss', 'world_size', 'backend', 'device', 'cuda_available', 'device_count',
            'torch_nccl_version', 'torch_version', 'init_s')


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', 1)[0])
    parser.add_argument('--nproc-per-node', type=int, default=2)
    parser.add_argument('--max-restarts', type=int, default=3)
    parser.add_argument('--steps', type=int, default=20)
    parser.add_argument('--checkpoint-every', type=int, default=5)
    parser.add_argument('--kill-at-step', type=int, default=0, help='0: checkpoint-every + max(1, checkpoint-every // 2)')
    parser.add_argument('--victim-rank', type=int, default=-1, help='-1: the last rank')
    parser.add_argument('--hold-s', type=float, default=30.0, help='how long the victim waits for its kill')
    parser.add_argument('--bound-s', type=float, default=600.0, help='the whole job must end within this')
    parser.add_argument('--monitor-interval', type=float, default=0.5, help='torchrun --monitor-interval')
    parser.add_argument('--backend', choices=('auto', 'nccl', 'gloo'), default='auto')
    parser.add_argument('--python', default=sys.executable, help='the interpreter that holds torch')
    parser.add_argument('--script', default=os.path.join(HERE, 'elastic_restart.py'))
    parser.add_argument('--checkpoint-parent', default=None, help='where the private checkpoint directory is made '
                                                                  '(default: the system temporary directory)')
    parser.add_argument('--torchrun-arg', action='append', default=[],
                        help='extra launcher option, repeatable (default: c10d rendezvous on 127.0.0.1, a free port)')
    parser.add_argument('--grace-s', type=float, default=10.0, help='SIGTERM to SIGKILL delay for a hung job')
    return parser


def kill_step_of(args):
    return args.kill_at_step or args.checkpoint_every + max(1, args.checkpoint_every // 2)


def config_error(args):
    """Why the options cannot test a restart, or None."""
    kill = kill_step_of(args)
    if args.checkpoint_every < 1 or args.max_restarts < 1:
        return '--checkpoint-every and --max-restarts must be 1 or more'
    if kill <= args.checkpoint_every:
        return '--kill-at-step %d is not after the first checkpoint (step %d)' % (kill, args.checkpoint_every)
    if kill >= args.steps:
        return '--steps %d leaves no step after the kill at step %d' % (args.steps, kill)
    return None


def launcher_command(args, checkpoint_dir):
    command = [args.python, '-m', 'torch.distributed.run', '--nproc_per_node', str(args.nproc_per_node),
               '--max_restarts', str(args.max_restarts), '--monitor_interval', str(args.monitor_interval)]
    if args.torchrun_arg:
        command += args.torchrun_arg
    else:
        command += ['--nnodes', '1', '--rdzv_backend', 'c10d', '--rdzv_endpoint', '127.0.0.1:%d' % free_port(),
                    '--rdzv_id', 'xuanwu-elastic-%d' % os.getpid()]
    command += [args.script, '--checkpoint-dir', checkpoint_dir, '--steps', str(args.steps),
                '--checkpoint-every', str(args.checkpoint_every), '--hold-at-step', str(kill_step_of(args)),
                '--victim-rank', str(args.victim_rank), '--hold-s', str(args.hold_s), '--backend', args.backend,
                '--timeout-s', str(max(60.0, args.hold_s * 2))]
    return command


def tagged(line, tag):
    """The JSON object after ``tag`` in ``line`` (anywhere in it: a launcher may prefix the workers' lines), or None."""
    at = line.find(tag + ' ')
    if at < 0:
        return None
    try:
        value = json.loads(line[at + len(tag) + 1:])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def parent_of(pid):
    """The parent pid of ``pid`` (from /proc; torchrun starts each worker in a session of its own), or None."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            stat = handle.read()
    except (IOError, OSError):
        return None
    fields = stat[stat.rfind(')') + 2:].split()
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def descendants(root):
    """The pids below ``root`` (children first), from /proc."""
    children = {}
    for name in os.listdir('/proc'):
        if name.isdigit():
            parent = parent_of(int(name))
            if parent is not None:
                children.setdefault(parent, []).append(int(name))
    out, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop(0)
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


class Watch(object):
    """Reads the job's output, kills the victim when it holds, and notes the times of the kill and the recovery."""

    def __init__(self, root, kill_step):
        self.root = root
        self.kill_step = kill_step
        self.state = {'killed': False, 'victim_pid': None, 'victim_rank': None, 'kill_at': None, 'recovered_at': None,
                      'resumed_from': None, 'restart_seen': 0, 'job_result': None, 'errors': [], 'kill_error': None}
        self.lines = []

    def _ours(self, pid):
        """The pid is a descendant of the job's torchrun (never kill anything else on a line's word)."""
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
            return False
        for _level in range(64):
            if pid == self.root:
                return True
            if pid <= 1:
                return False
            pid = parent_of(pid)
            if pid is None:
                return False
        return False

    def line(self, text):
        state = self.state
        result = tagged(text, RESULT_TAG)
        if result is not None:
            state['job_result'] = result
            return
        ev = tagged(text, EVENT_TAG)
        if ev is None:
            return
        restart = ev.get('restart') if isinstance(ev.get('restart'), int) else 0
        state['restart_seen'] = max(state['restart_seen'], restart)
        kind = ev.get('event')
        if kind == 'hold' and restart == 0 and not state['killed'] and ev.get('step') == self.kill_step:
            pid = ev.get('pid')
            if not self._ours(pid):
                state['kill_error'] = 'the holding rank reported pid %r, not a process of the job' % (pid,)
                return
            os.kill(pid, signal.SIGKILL)
            state.update(killed=True, kill_at=time.monotonic(), victim_pid=pid, victim_rank=ev.get('rank'))
            sys.stderr.write('elastic_restart_launch: SIGKILL to rank %s (pid %s) after step %s\n'
                             % (ev.get('rank'), pid, ev.get('step')))
            sys.stderr.flush()
        elif kind == 'resume' and restart >= 1 and state['resumed_from'] is None:
            state['resumed_from'] = ev.get('step')
        elif kind == 'step' and restart >= 1 and state['killed'] and state['recovered_at'] is None:
            state['recovered_at'] = time.monotonic()
        elif kind == 'error':
            state['errors'].append(ev)

    def pump(self, stream):
        for raw in iter(stream.readline, b''):
            text = raw.decode('utf-8', 'replace')
            self.lines.append(text)
            sys.stderr.write(text)
            sys.stderr.flush()
            self.line(text)
        stream.close()


def run_job(args, command, began):
    """Run torchrun to the end or the bound; (exit code, hung, watch)."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    watch = Watch(proc.pid, kill_step_of(args))
    reader = threading.Thread(target=watch.pump, args=(proc.stdout,))
    reader.daemon = True
    reader.start()
    hung = False
    try:
        exit_code = proc.wait(timeout=max(1.0, args.bound_s - (time.monotonic() - began)))
    except subprocess.TimeoutExpired:
        hung = True
        # the workers run in sessions of their own: signalled by pid, found before torchrun is gone
        exit_code = common.stop_job(proc, args.grace_s, lambda sig: signal_all([proc.pid] + descendants(proc.pid), sig))
    reader.join(timeout=5)
    return exit_code, hung, watch


def summary(args, state, exit_code, hung):
    """The result line's figures and verdict from what the job printed."""
    job = state['job_result'] or {}
    restarts = job.get('restart_count') if isinstance(job.get('restart_count'), int) else state['restart_seen']
    resumed = state['resumed_from'] if state['resumed_from'] is not None else job.get('resumed_from')
    kill = kill_step_of(args)
    result = {
        'killed': state['killed'], 'victim_rank': state['victim_rank'], 'victim_pid': state['victim_pid'],
        'kill_step': kill if state['killed'] else None, 'restarts': restarts, 'max_restarts': args.max_restarts,
        'resumed_from': resumed,
        'steps_redone': kill - resumed if state['killed'] and isinstance(resumed, int) else None,
        'checkpoint_every': args.checkpoint_every, 'steps': args.steps,
        'recover_s': (round(state['recovered_at'] - state['kill_at'], 3)
                      if state['kill_at'] is not None and state['recovered_at'] is not None else None),
        'exit_code': exit_code, 'hung': hung, 'bound_s': args.bound_s, 'nproc_per_node': args.nproc_per_node,
        'job_ok': job.get('ok'),
    }
    for key in FROM_JOB:
        result[key] = job.get(key)
    errors = []
    if state['kill_error']:
        errors.append(state['kill_error'])
    if hung:
        errors.append('the job was still running after %.0f s' % args.bound_s)
    elif exit_code not in (0, None):
        errors.append('torchrun exited %s' % exit_code)
    if not state['killed']:
        errors.append('no rank was killed: the victim never reported holding after step %d' % kill)
    elif restarts < 1:
        errors.append('the job finished without a restart')
    if job.get('error'):
        errors.append(str(job['error']))
    elif not job and not hung:
        errors.append('the restarted job printed no result%s' % (
            ': ' + '; '.join(str(e.get('error')) for e in state['errors'][-3:]) if state['errors'] else ''))
    result['ok'] = (not errors and state['killed'] and restarts >= 1 and exit_code == 0 and bool(job.get('ok'))
                    and job.get('steps_done') == args.steps)
    result['error'] = '; '.join(errors) or None
    return result


def main(argv=None):
    args = build_parser().parse_args(argv)
    began = time.monotonic()
    problem = config_error(args)
    if problem:
        common.emit({'ok': False, 'killed': False, 'error': problem, 'exit_code': None, 'hung': False,
                     'steps': args.steps, 'checkpoint_every': args.checkpoint_every, 'max_restarts': args.max_restarts,
                     'nproc_per_node': args.nproc_per_node})
        return 2
    checkpoint_dir = tempfile.mkdtemp(prefix='xuanwu-elastic.', dir=args.checkpoint_parent)
    os.chmod(checkpoint_dir, 0o700)
    command = launcher_command(args, checkpoint_dir)
    try:
        exit_code, hung, watch = run_job(args, command, began)
    finally:
        shutil.rmtree(checkpoint_dir, ignore_errors=True)
    result = summary(args, watch.state, exit_code, hung)
    result.update(total_s=round(time.monotonic() - began, 3), command=command,
                  checkpoint_dir_removed=not os.path.exists(checkpoint_dir))
    common.emit(result)
    return 0 if result['ok'] else 1


if __name__ == '__main__':
    sys.exit(main())

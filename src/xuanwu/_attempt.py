"""One attempt of one job, run as ``python -m xuanwu._attempt ATTEMPT_DIR`` in its own process session.

Reads ``ATTEMPT_DIR/attempt.json`` (written by the executor), moves itself into the attempt's cgroup when
the executor made one, makes everything it writes private (umask 077), runs the playbook through
ansible-runner's Python API (``runner_mode='subprocess'``: ansible-playbook stays in this process group;
its extra variables in the 0600 file ``env/extravars``, given as ``-e @file``, never on a command line)
or the command (``xuanwu.commands``), and writes ``ATTEMPT_DIR/exit.json``
(rc, status, and what the attempt learned) when it ends. The executor, or a restarted one that
re-attached to this process, reads exit.json.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path


def _write_exit(adir: Path, data: dict) -> None:
    tmp = adir / 'exit.json.tmp'
    fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, 'w', encoding='utf-8') as handle:
        json.dump(data, handle, indent=2)
    os.replace(tmp, adir / 'exit.json')


def run_playbook(adir: Path, params: dict) -> dict:
    # imported here: command jobs do not need ansible-runner
    from ansible_runner.config.runner import RunnerConfig
    from ansible_runner.runner import Runner
    env_dir = adir / 'env'
    env_dir.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(str(env_dir / 'extravars'), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, 'w', encoding='utf-8') as handle:
        extravars = dict(params.get('extravars') or {})
        if params.get('secret_vars_file'):
            with open(params['secret_vars_file'], encoding='utf-8') as secret:
                extravars.update(json.load(secret))
        json.dump(extravars, handle)
    config = RunnerConfig(
        private_data_dir=str(adir), project_dir=params['project_dir'], playbook=params['playbook'],
        inventory=params['inventory'], limit=params.get('limit'), ident=params['ident'], quiet=True)
    config.prepare()
    # RunnerConfig always prepares for pexpect, which starts ansible-playbook in a session of its own (a
    # pty); the subprocess mode keeps it in this process group, where a timeout or a cancel reaches it.
    config.runner_mode = 'subprocess'
    config.subprocess_timeout = None
    runner = Runner(config)
    runner.run()
    return {'rc': runner.rc, 'runner_status': runner.status,
            'artifacts': str(adir / 'artifacts' / params['ident'])}


def main(argv) -> int:
    os.umask(0o077)
    adir = Path(argv[1]).resolve()
    params = json.loads((adir / 'attempt.json').read_text(encoding='utf-8'))
    from .proctree import join_cgroup
    join_cgroup(params.get('cgroup'))
    started = time.time()
    try:
        if params['kind'] == 'playbook':
            out = run_playbook(adir, params)
        else:
            from . import commands
            out = commands.run_command(adir, params)
    except Exception:   # the attempt could not run what it should: recorded, with its stack, in exit.json
        out = {'rc': 250, 'error': traceback.format_exc(), 'launch_error': True}
    out.update(started=started, finished=time.time(), pid=os.getpid())
    try:
        _write_exit(adir, out)
    except OSError as err:
        # a full disk: the executor finds exit.json.tmp without exit.json and says so (``runner.unwritten_result``)
        sys.stderr.write('xuanwu: the result of this attempt could not be written: %s\n' % err)
        return 1
    return out['rc'] if isinstance(out.get('rc'), int) and 0 <= out['rc'] < 256 else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))

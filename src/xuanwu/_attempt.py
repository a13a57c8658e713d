"""One attempt of one job, run as ``python -m xuanwu._attempt ATTEMPT_DIR`` in its own process session.

Reads ``ATTEMPT_DIR/attempt.json`` (written by the executor), runs the playbook through ansible-runner's
Python API (``runner_mode='subprocess'``: ansible-playbook stays in this process group, so that killing
the group kills the whole tree) or the command (``xuanwu.commands``), and writes ``ATTEMPT_DIR/exit.json``
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
    tmp.write_text(json.dumps(data, indent=2), encoding='utf-8')
    os.replace(tmp, adir / 'exit.json')


def run_playbook(adir: Path, params: dict) -> dict:
    # imported here: command jobs do not need ansible-runner
    from ansible_runner.config.runner import RunnerConfig
    from ansible_runner.runner import Runner
    config = RunnerConfig(
        private_data_dir=str(adir), project_dir=params['project_dir'], playbook=params['playbook'],
        inventory=params['inventory'], limit=params.get('limit'), ident=params['ident'],
        extravars=params.get('extravars') or {}, envvars=dict(params.get('envvars') or {}), quiet=True)
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
    adir = Path(argv[1]).resolve()
    params = json.loads((adir / 'attempt.json').read_text(encoding='utf-8'))
    started = time.time()
    try:
        if params['kind'] == 'playbook':
            out = run_playbook(adir, params)
        else:
            from . import commands
            out = commands.run_command(adir, params)
    except Exception:   # any failure of the attempt itself is recorded, with its stack, in exit.json
        out = {'rc': 250, 'error': traceback.format_exc()}
    out.update(started=started, finished=time.time(), pid=os.getpid())
    _write_exit(adir, out)
    return out['rc'] if isinstance(out.get('rc'), int) and 0 <= out['rc'] < 256 else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))

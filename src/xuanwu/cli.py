"""The ``xuanwu`` command: run jobs and batches of the collection's playbooks and commands, list, show and
cancel them, compare run records, serve the HTTP API. ``xuanwu --help``; docs/jobs.md.

Exit status: 0 succeeded, 2 failed, 3 cancelled, 4 bad input (nothing ran), 1 other errors.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import threading
import time
from pathlib import Path

import yaml

from . import FINAL_STATES, STATES, __version__, rundiff
from .config import Config, ConfigError
from .spec import SpecError, parse_batch, parse_job
from .store import Store, StoreError, open_store

EXIT = {'succeeded': 0, 'failed': 2, 'cancelled': 3}
EXIT_BAD_INPUT = 4


class BadInput(Exception):
    """Input that cannot be used (exit 4); the message is one line."""


def _load_file(path: str):
    try:
        with open(path, encoding='utf-8') as handle:
            text = handle.read()
    except OSError as exc:
        raise BadInput('%s: cannot read: %s' % (path, exc.strerror or exc)) from None
    try:
        if path.endswith('.json'):
            return json.loads(text)
        return yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise BadInput('%s: not valid %s: %s' % (path, 'JSON' if path.endswith('.json') else 'YAML/JSON',
                                                 str(exc).splitlines()[0])) from None


def _extra_vars(items) -> dict:
    out = {}
    for item in items or []:
        if item.startswith('@'):
            data = _load_file(item[1:])
        elif item.lstrip().startswith('{'):
            try:
                data = json.loads(item)
            except ValueError as exc:
                raise BadInput('--extra-vars: not valid JSON: %s' % exc) from None
        elif '=' in item:
            key, value = item.split('=', 1)
            data = {key: value}
        else:
            raise BadInput('--extra-vars: expected KEY=VALUE, a JSON object or @FILE, got %r' % item)
        if not isinstance(data, dict):
            raise BadInput('--extra-vars: %r is not a mapping' % item)
        out.update(data)
    return out


def _job_data(args) -> dict:
    if args.file:
        if args.playbook or args.command:
            raise BadInput('give either a job file or --playbook/--command, not both')
        return _load_file(args.file)
    if bool(args.playbook) == bool(args.command):
        raise BadInput('give a job file, or --playbook NAME --inventory INV, or --command CMD --nodes N1,N2')
    data = {'name': args.name or (args.playbook if args.playbook else 'command')}
    if args.playbook:
        data.update(playbook=args.playbook)
        if args.inventory is not None:
            data['inventory'] = args.inventory
        if args.limit:
            data['limit'] = args.limit
        if args.extra_vars:
            data['extra_vars'] = _extra_vars(args.extra_vars)
    else:
        data.update(command=args.command, nodes=[n for n in (args.nodes or '').split(',') if n])
    if args.timeout_sec is not None:
        data['timeout_sec'] = args.timeout_sec
    if args.retry_count is not None:
        data['retry_count'] = args.retry_count
    if args.retry_on_timeout:
        data['retry_on_timeout'] = True
    return data


def _emit(args, data: dict, text: str) -> None:
    if getattr(args, 'json', False):
        print(json.dumps(data, indent=2, default=str))
    else:
        print(text)


def _when(stamp) -> str:
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(stamp)) if stamp else '-'


def describe_job(job: dict) -> str:
    info = job.get('info') or {}
    lines = ['job %s (%s, %s): %s' % (job['id'], job['name'], job['kind'], job['status'])]
    if job.get('reason'):
        lines.append('  reason: %s' % job['reason'])
    if job.get('error_class'):
        lines.append('  error class: %s' % job['error_class'])
    if job.get('task_id'):
        lines.append('  batch %s, task %s' % (job.get('batch_id'), job['task_id']))
    lines.append('  created %s, started %s, finished %s'
                 % (_when(job.get('created')), _when(job.get('started')), _when(job.get('finished'))))
    for attempt in job.get('attempt_list') or []:
        lines.append('  attempt %d: %s, rc %s%s, %s .. %s, artifacts %s' % (
            attempt['n'], attempt.get('status'), attempt.get('rc'),
            ', ' + attempt['error_class'] if attempt.get('error_class') else '', _when(attempt.get('started')),
            _when(attempt.get('finished')), attempt.get('artifact_dir')))
    if info.get('mode'):
        slurm = ' (Slurm job %s)' % info['slurm_job_id'] if info.get('slurm_job_id') else ''
        lines.append('  ran %s%s on %s' % (info['mode'], slurm, ', '.join(info.get('ran_on') or [])))
    if info.get('report'):
        lines.append('  report: %s' % info['report'])
    return '\n'.join(lines)


def _executor(config: Config, store: Store, concurrency=None):
    """A scheduler for this command's own jobs and batches (and those of a command that died on them)."""
    from .runner import Executor  # noqa: the runner is only needed by the commands that run jobs
    return Executor(config, store, concurrency, serve_all=False)


def follow(job_id: str, wait, cancel, where: str = '') -> dict:
    """``wait(job_id)``; on Ctrl-C (SIGINT) ``cancel(job_id)`` first: it stops the job, not only this command
    (the job runs in a session of its own). Also used by ``run --server`` (xuanwu.client)."""
    try:
        return wait(job_id)
    except KeyboardInterrupt:
        print('xuanwu run: interrupted; cancelling job %s%s' % (job_id, where), file=sys.stderr)
        cancel(job_id)
        return wait(job_id)


def cmd_run(args, config: Config) -> int:
    spec = parse_job(_job_data(args), config)
    store = open_store(config)
    executor = _executor(config, store)
    job = follow(executor.submit(spec), executor.wait, executor.cancel)
    executor.shutdown()
    _emit(args, job, describe_job(job))
    return EXIT.get(job['status'], 1)


def cmd_batch(args, config: Config) -> int:
    from .batch import run_batch
    data = _load_file(args.file)
    spec = parse_batch(data, config, base_dir=os.path.dirname(os.path.abspath(args.file)))
    store = open_store(config)
    # every running job of the store counts against the limit: the batch's own limit is kept by the store
    executor = _executor(config, store)
    resumed = store.find_open_batch(spec.output_dir)
    if resumed is not None:
        print('xuanwu batch: resuming batch %s (unfinished, writing to %s)' % (resumed['id'], spec.output_dir),
              file=sys.stderr)
    cancel, done, result = threading.Event(), threading.Event(), {}

    def body():
        try:
            result['summary'] = run_batch(spec, executor, batch_id=resumed and resumed['id'], cancel=cancel)
        finally:
            done.set()
    threading.Thread(target=body, daemon=True).start()
    try:
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        # Ctrl-C cancels the batch: no task starts any more, running ones are cancelled (their trees killed).
        # (An Event, not Thread.join: a join interrupted by Ctrl-C may return at once afterwards.)
        print('xuanwu batch: interrupted; cancelling the batch', file=sys.stderr)
        cancel.set()
        while not done.wait(0.5):
            pass
    executor.shutdown()
    if 'summary' not in result:
        raise RuntimeError('the batch ended without a summary (see the error above)')
    summary = result['summary']
    lines = ['batch %s (%s): %s, %s' % (summary['batch_id'], summary['name'], summary['status'],
                                        ', '.join('%d %s' % (n, s) for s, n in summary['counts'].items() if n))]
    for task in summary['tasks']:
        lines.append('  %s: %s after %d attempt(s)%s' % (task['task_id'], task['status'], task['attempts'],
                                                         ' (%s: %s)' % (task['error_class'], task['reason'])
                                                         if task.get('reason') else ''))
    lines.append('summary: %s' % os.path.join(summary['output_dir'], 'summary.json'))
    _emit(args, summary, '\n'.join(lines))
    return EXIT.get(summary['status'], 1)


def describe_jobs(jobs) -> str:
    lines = []
    for job in jobs:
        reason = '  (%s)' % job['reason'] if job.get('reason') else ''
        lines.append('%s  %-9s  %-10s %s  %s%s' % (job['id'], job['status'], job['kind'], _when(job['created']),
                                                   job['name'], reason))
    return '\n'.join(lines) or 'no jobs'


def cmd_jobs(args, config: Config) -> int:
    jobs = open_store(config).list_jobs(status=args.status, limit=args.limit, offset=args.offset)
    _emit(args, jobs, describe_jobs(jobs))
    return 0


def _job(store: Store, job_id: str) -> dict:
    job = store.get_job(job_id)
    if job is None:
        raise BadInput('no job %s in %s' % (job_id, store.path))
    return job


def cmd_show(args, config: Config) -> int:
    job = _job(open_store(config), args.job_id)
    _emit(args, job, describe_job(job))
    return 0


def cmd_cancel(args, config: Config) -> int:
    store = open_store(config)
    if args.job_id.startswith('b-'):
        batch = store.get_batch(args.job_id)
        if batch is None:
            raise BadInput('no batch %s in %s' % (args.job_id, store.path))
        cancelled = _executor(config, store).cancel_batch(args.job_id)
        print('batch %s: %s' % (args.job_id, 'cancelled' if cancelled else 'already %s' % batch['status']))
        return 0 if cancelled else 1
    job = _job(store, args.job_id)
    if job['status'] in FINAL_STATES:
        print('job %s is already %s; nothing to cancel' % (job['id'], job['status']))
        return 1
    cancelled = _executor(config, store).cancel(args.job_id)
    print('job %s: %s' % (args.job_id, 'cancelled' if cancelled else 'could not be cancelled (it just ended)'))
    return 0 if cancelled else 1


def cmd_diff(args, config: Config) -> int:
    return rundiff.main(args.diff_args, sys.stdout, sys.stderr)


def cmd_token(args, config: Config) -> int:
    path = Path(args.output)
    if os.path.lexists(path) and not args.force:
        raise BadInput('%s exists; pass --force to replace it' % path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if args.force and os.path.lexists(path):
        if not os.path.isfile(path) or os.path.islink(path) or os.lstat(path).st_uid != os.geteuid():
            raise BadInput('%s is not a regular file of this user; not replaced' % path)
        os.unlink(path)    # a new file, never one opened through a link or owned by another user
    try:
        fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise BadInput('%s appeared while the token was made; not replaced' % path) from None
    with os.fdopen(fd, 'w') as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(secrets.token_urlsafe(32) + '\n')
    print('a new token is in %s (mode 0600); give it to clients as "Authorization: Bearer <token>"' % path)
    return 0


def cmd_serve(args, config: Config) -> int:
    from . import server
    from .serve_options import ServeError
    try:
        return server.serve(args, config)
    except ServeError as exc:
        raise BadInput(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='xuanwu', description='Jobs and batches of the xuanwu.cluster playbooks '
                                     'and commands, on ansible-runner. Exit status: 0 succeeded, 2 failed, '
                                     '3 cancelled, 4 bad input.')
    parser.add_argument('--version', action='version', version='xuanwu %s' % __version__)
    parser.add_argument('--config', help='configuration file (YAML; default $XUANWU_CONFIG, else built-in '
                                         'defaults); docs/jobs.md')
    parser.add_argument('--data-dir', help='where jobs are kept (default $XUANWU_HOME or ~/.local/state/xuanwu)')
    sub = parser.add_subparsers(dest='cmd', metavar='COMMAND')
    sub.required = True

    run = sub.add_parser('run', help='run one job and wait for its end')
    run.add_argument('file', nargs='?', help='a job file (JSON or YAML) instead of the options below')
    run.add_argument('--name', help='job name (default: the playbook name, or "command")')
    run.add_argument('--playbook', help='a registered playbook name: validate, site, provision, capture, ...')
    run.add_argument('--inventory', help='inventory file or folder, inside the configured inventory roots')
    run.add_argument('--limit', help='Ansible host pattern')
    run.add_argument('-e', '--extra-vars', action='append', help='KEY=VALUE, a JSON object or @FILE; repeatable')
    run.add_argument('--command', help='a shell command to run on --nodes (Slurm, SSH or locally)')
    run.add_argument('--nodes', help='comma-separated nodes of --command')
    run.add_argument('--timeout-sec', type=int, help='kill the job after this many seconds')
    run.add_argument('--retry-count', type=int, help='retries of a transient failure (default 0)')
    run.add_argument('--retry-on-timeout', action='store_true',
                     help='a timeout is transient (retried within --retry-count); by default it is the job\'s own, permanent')
    run.add_argument('--json', action='store_true', help='print the job record as JSON')
    run.set_defaults(func=cmd_run)

    batch = sub.add_parser('batch', help='run a batch file (JSON or YAML) and wait for its end')
    batch.add_argument('file')
    batch.add_argument('--json', action='store_true', help='print the summary as JSON')
    batch.set_defaults(func=cmd_batch)

    jobs = sub.add_parser('jobs', help='list jobs, newest first')
    jobs.add_argument('--status', choices=STATES)
    jobs.add_argument('--limit', type=int, default=50)
    jobs.add_argument('--offset', type=int, default=0)
    jobs.add_argument('--json', action='store_true')
    jobs.set_defaults(func=cmd_jobs)

    show = sub.add_parser('show', help='a job: status, attempts, artifacts, report')
    show.add_argument('job_id')
    show.add_argument('--json', action='store_true')
    show.set_defaults(func=cmd_show)

    cancel = sub.add_parser('cancel', help='cancel a queued or running job (kills its process tree), or a batch '
                                           '(b-...: its tasks not started never start, running ones are cancelled)')
    cancel.add_argument('job_id', help='a job id (j-...) or a batch id (b-...)')
    cancel.set_defaults(func=cmd_cancel)

    diff = sub.add_parser('diff', help='differences between two run records or launch kits (RUN_A RUN_B [--json] '
                                       '[--tolerance PERCENT]); docs/run-record.md', add_help=False)
    diff.add_argument('diff_args', nargs=argparse.REMAINDER)
    diff.set_defaults(func=cmd_diff)

    token = sub.add_parser('token', help='write a new random API token to a file of mode 0600')
    token.add_argument('--output', '-o', required=True, help='the token file')
    token.add_argument('--force', action='store_true', help='replace an existing file')
    token.set_defaults(func=cmd_token)

    # --server URL --token-file F: these four talk to a xuanwu service instead (xuanwu.client)
    from .client import add_server_options
    for remote_capable in (run, jobs, show, cancel):
        add_server_options(remote_capable)

    serve = sub.add_parser('serve', help='serve the HTTP API (docs/service.md)')
    from .serve_options import add_serve_arguments
    add_serve_arguments(serve)
    serve.set_defaults(func=cmd_serve)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, 'server', None):
        from .client import main_remote
        return main_remote(args, sys.modules[__name__])
    umask = os.umask(0o077)    # the store, job folders, batch outputs and tokens are the user's only
    try:
        config = Config.load(args.config, data_dir=args.data_dir)
        return args.func(args, config)
    except (BadInput, SpecError, ConfigError, StoreError) as exc:
        print('xuanwu %s: %s' % (args.cmd, exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    finally:
        os.umask(umask)


if __name__ == '__main__':
    sys.exit(main())

"""The client side of the job service: ``xuanwu run|jobs|show|cancel --server URL --token-file FILE`` talk
to a ``xuanwu serve`` instead of the local store. Output and exit codes are those of the local commands."""
from __future__ import annotations

import sys

from . import FINAL_STATES
from .auth import TokenError, load_token

TIMEOUT = 30


class ClientError(Exception):
    """The service could not be reached or refused the request; the message says which and why."""

    def __init__(self, message: str, bad_input: bool = True):
        super().__init__(message)
        self.bad_input = bad_input


def add_server_options(parser) -> None:
    parser.add_argument('--server', metavar='URL', help='a xuanwu service (http[s]://host:port) instead of the '
                                                        'local store; docs/service.md')
    parser.add_argument('--token-file', help='with --server: the API token file, mode 0600 '
                                             '(default: XUANWU_API_TOKEN)')
    parser.add_argument('--ca-cert', help='with --server https://...: the CA certificate that signed the service\'s')


class ApiClient:
    def __init__(self, base: str, token: str, verify=True):
        import requests     # here: the local commands do not need it
        self.requests = requests
        self.base = base.rstrip('/')
        self.session = requests.Session()
        self.session.headers['Authorization'] = 'Bearer %s' % token
        self.session.verify = verify

    def _call(self, method: str, path: str, **kwargs):
        try:
            resp = self.session.request(method, self.base + path, timeout=kwargs.pop('timeout', TIMEOUT), **kwargs)
        except self.requests.RequestException as exc:
            raise ClientError('cannot reach the service at %s: %s' % (self.base, type(exc).__name__),
                              bad_input=False) from None
        if resp.status_code >= 400:
            try:
                detail = resp.json().get('detail', resp.text)
            except ValueError:
                detail = resp.text[:300]
            if resp.status_code == 401:
                detail = 'the service refused the token (%s)' % detail
            raise ClientError('%s %s: %d %s' % (method, path, resp.status_code, detail),
                              bad_input=resp.status_code != 409 and resp.status_code < 500)
        return resp

    def submit(self, job: dict) -> str:
        return self._call('POST', '/api/v1/jobs', json=job).json()['job_id']

    def job(self, job_id: str) -> dict:
        return self._call('GET', '/api/v1/jobs/%s' % job_id).json()

    def jobs(self, status=None, limit=50, offset=0) -> list:
        params = {'limit': limit, 'offset': offset}
        if status:
            params['status'] = status
        return self._call('GET', '/api/v1/jobs', params=params).json()['jobs']

    def cancel(self, job_id: str) -> dict:
        return self._call('POST', '/api/v1/jobs/%s/cancel' % job_id).json()

    def wait(self, job_id: str) -> dict:
        """The job once final: follows its event stream (which ends at the final state), then reads it."""
        while True:
            with self._call('GET', '/api/v1/jobs/%s/events' % job_id, stream=True, timeout=(TIMEOUT, 120)) as resp:
                for dummy in resp.iter_lines():
                    pass
            job = self.job(job_id)
            if job['status'] in FINAL_STATES:
                return job


def client_for(args) -> ApiClient:
    try:
        token = load_token(args.token_file)
    except TokenError as exc:
        raise ClientError(str(exc)) from None
    if token is None:
        raise ClientError('--server needs a token: --token-file FILE or XUANWU_API_TOKEN')
    if not args.server.startswith(('http://', 'https://')):
        raise ClientError('--server must be an http:// or https:// URL, got %r' % args.server)
    return ApiClient(args.server, token, verify=args.ca_cert or True)


def remote(args, cli) -> int:
    """Run ``args.cmd`` against the service; ``cli`` is the xuanwu.cli module (its output and exit codes)."""
    # pylint: disable=protected-access
    api = client_for(args)
    if args.cmd == 'run':
        job = cli.follow(api.submit(cli._job_data(args)), api.wait, api.cancel, ' on the service')
        cli._emit(args, job, cli.describe_job(job))
        return cli.EXIT.get(job['status'], 1)
    if args.cmd == 'jobs':
        jobs = api.jobs(args.status, args.limit, args.offset)
        cli._emit(args, jobs, cli.describe_jobs(jobs))
        return 0
    if args.cmd == 'show':
        job = api.job(args.job_id)
        cli._emit(args, job, cli.describe_job(job))
        return 0
    answer = api.cancel(args.job_id)
    print('job %s: %s' % (args.job_id, answer['status']))
    return 0


def main_remote(args, cli) -> int:
    """``remote`` with its errors printed as one line: exit 4 for refused input, 1 when the service is unreachable."""
    try:
        return remote(args, cli)
    except ClientError as exc:
        print('xuanwu %s: %s' % (args.cmd, exc), file=sys.stderr)
        return cli.EXIT_BAD_INPUT if exc.bad_input else 1
    except cli.BadInput as exc:
        print('xuanwu %s: %s' % (args.cmd, exc), file=sys.stderr)
        return cli.EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130

"""``xuanwu serve``'s start-up checks: token file mode, binding rules, TLS options; metrics text; webhooks."""
import argparse
import hashlib
import hmac
import http.server
import json
import os
import threading

import pytest
from prometheus_client.parser import text_string_to_metric_families

from xuanwu.auth import bearer_matches, load_token
from xuanwu.metrics import Metrics
from xuanwu.serve_options import ServeError, add_serve_arguments, serve_settings
from xuanwu.server import EventHub
from xuanwu.webhooks import Notifier, check_url, verify

TOKEN = 'settings-test-token-0123456789'


def _args(*argv):
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    return parser.parse_args(list(argv))


def _token_file(tmp_path, mode, content=TOKEN):
    path = tmp_path / 'token'
    path.write_text(content + '\n')
    os.chmod(path, mode)
    return str(path)


@pytest.mark.parametrize('mode', [0o600, 0o400])
def test_token_file_owner_only_accepted(tmp_path, mode):
    assert serve_settings(_args('--token-file', _token_file(tmp_path, mode)), environ={})['token'] == TOKEN


@pytest.mark.parametrize('mode', [0o644, 0o640, 0o604, 0o660, 0o666])
def test_token_file_readable_by_others_refused_with_the_fix(tmp_path, mode):
    path = _token_file(tmp_path, mode)
    with pytest.raises(ServeError) as err:
        serve_settings(_args('--token-file', path), environ={})
    assert 'chmod 600 %s' % path in str(err.value) and '%04o' % mode in str(err.value)
    assert TOKEN not in str(err.value)


@pytest.mark.parametrize('argv, environ, message', [
    ([], {}, 'no API token'),
    (['--bind', '0.0.0.0', '--insecure-no-token'], {}, 'refusing to serve on 0.0.0.0 without a token'),
    (['--bind', '10.1.2.3', '--insecure-no-token'], {}, 'refusing to serve on 10.1.2.3 without a token'),
    (['--bind', '::', '--insecure-no-token'], {}, 'without a token'),
    (['--insecure-no-token'], {'XUANWU_API_TOKEN': TOKEN}, 'contradicts'),
    (['--tls-cert', '/nonexistent/cert.pem'], {'XUANWU_API_TOKEN': TOKEN}, 'go together'),
    (['--tls-cert', '/nonexistent/c.pem', '--tls-key', '/nonexistent/k.pem'], {'XUANWU_API_TOKEN': TOKEN},
     'does not exist'),
    (['--port', '70000'], {'XUANWU_API_TOKEN': TOKEN}, '--port'),
    ([], {'XUANWU_API_TOKEN': 'short'}, 'at least 16'),
    ([], {'XUANWU_API_TOKEN': 'has a space inside it ok'}, 'whitespace'),
    (['--token-file', '/nonexistent/token'], {}, 'xuanwu token'),
], ids=['none', 'any-v4', 'private-v4', 'any-v6', 'both', 'cert-alone', 'tls-missing', 'port', 'short', 'space',
        'missing-file'])
def test_refused_settings(argv, environ, message):
    with pytest.raises(ServeError) as err:
        serve_settings(_args(*argv), environ=environ)
    assert message in str(err.value)
    assert TOKEN not in str(err.value)


@pytest.mark.parametrize('argv', [['--insecure-no-token'], ['--insecure-no-token', '--bind', '::1'],
                                  ['--insecure-no-token', '--bind', 'localhost']])
def test_loopback_without_token_only_when_asked(argv):
    assert serve_settings(_args(*argv), environ={})['token'] is None


def test_environment_token_and_non_loopback_bind_only_with_tls_or_when_asked():
    with pytest.raises(ServeError) as err:
        serve_settings(_args('--bind', '0.0.0.0'), environ={'XUANWU_API_TOKEN': TOKEN})
    assert '--insecure-plaintext' in str(err.value)
    settings = serve_settings(_args('--bind', '0.0.0.0', '--insecure-plaintext'), environ={'XUANWU_API_TOKEN': TOKEN})
    assert settings['token'] == TOKEN and settings['plaintext_remote'] is True
    assert load_token(None, {}) is None


@pytest.mark.parametrize('header, ok', [('Bearer ' + TOKEN, True), ('bearer ' + TOKEN, True), ('Bearer  ' + TOKEN, True),
                                        ('Bearer ' + TOKEN + 'x', False), ('Basic ' + TOKEN, False), (TOKEN, False),
                                        ('', False), (None, False), ('Bearer \u00e9' + TOKEN, False)])
def test_bearer_matches(header, ok):
    assert bearer_matches(header, TOKEN) is ok


def test_metrics_text_parses_and_counts():
    metrics = Metrics()
    for status, duration in (('succeeded', 0.5), ('succeeded', 70), ('failed', 4000), ('cancelled', None)):
        metrics.attempt_started()
        metrics.finished(status, duration)
    text = metrics.render({'queued': 3, 'running': 2, 'succeeded': 2, 'failed': 1, 'cancelled': 1})
    families = {f.name: f for f in text_string_to_metric_families(text)}
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families.values() for s in f.samples}
    assert families['xuanwu_job_duration_seconds'].type == 'histogram'
    assert samples[('xuanwu_jobs', (('state', 'queued'),))] == 3
    assert samples[('xuanwu_queue_depth', ())] == 3 and samples[('xuanwu_jobs_running', ())] == 2
    assert samples[('xuanwu_job_attempts_total', ())] == 4
    assert samples[('xuanwu_job_duration_seconds_count', ())] == 3
    assert samples[('xuanwu_job_duration_seconds_bucket', (('le', '1.0'),))] == 1
    assert samples[('xuanwu_job_duration_seconds_bucket', (('le', '120.0'),))] == 2
    assert samples[('xuanwu_job_duration_seconds_bucket', (('le', '+Inf'),))] == 3
    assert samples[('xuanwu_job_duration_seconds_sum', ())] == 4070.5


class _Flaky(http.server.BaseHTTPRequestHandler):
    answers = []
    bodies = []

    def do_POST(self):  # noqa: N802
        _Flaky.bodies.append((self.headers.get('X-Xuanwu-Signature'), self.rfile.read(int(self.headers['Content-Length']))))
        self.send_response(_Flaky.answers.pop(0) if _Flaky.answers else 200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.mark.parametrize('answers, delivered, posts', [([500, 503], True, 3), ([400], False, 1),
                                                       ([500, 500, 500], False, 3)])
def test_webhook_retries_server_errors_only(answers, delivered, posts):
    server = http.server.HTTPServer(('127.0.0.1', 0), _Flaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Flaky.answers, _Flaky.bodies = list(answers), []
    notifier = Notifier(b'k' * 32, attempts=3, backoff=0.01)
    try:
        url = 'http://127.0.0.1:%d/hook' % server.server_address[1]
        assert notifier.deliver(url, {'id': 'j-0123456789ab', 'status': 'failed'}) is delivered
    finally:
        notifier.close()
        server.shutdown()
    assert len(_Flaky.bodies) == posts
    for signature, body in _Flaky.bodies:
        assert verify(b'k' * 32, body, signature)
        assert signature == 'sha256=' + hmac.new(b'k' * 32, body, hashlib.sha256).hexdigest()
        assert json.loads(body)['job']['id'] == 'j-0123456789ab'
    assert not verify(b'other-key', _Flaky.bodies[0][1], _Flaky.bodies[0][0])


@pytest.mark.parametrize('url', ['file:///etc/passwd', 'ftp://x/y', 'http://', 'http://user:pw@host/', '/relative'])
def test_webhook_url_checked(url):
    with pytest.raises(ValueError):
        check_url(url)


def test_event_history_is_bounded_and_keeps_the_final_state():
    hub = EventHub(job_bytes=64 * 1024, finished_jobs=2)
    big = {'type': 'ansible', 'event': 'runner_on_ok', 'stdout': 'x' * 10000}
    for job in ('j-1', 'j-2', 'j-3'):
        for dummy in range(100):
            hub.publish(job, big)
        hub.publish(job, {'type': 'state', 'status': 'succeeded'})
    assert hub.kept_bytes() <= 2 * (64 * 1024 + 10200)
    kept = hub.subscribe('j-3', None, None)
    assert kept[-1][1] is True and '"status":"succeeded"' in kept[-1][2]
    assert [serial for serial, dummy, dummy2 in kept] == sorted(serial for serial, dummy, dummy2 in kept)
    assert not hub.subscribe('j-1', None, None)      # the oldest finished job's events are dropped

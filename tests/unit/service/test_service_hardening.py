"""``xuanwu serve``'s hardening: idle and slow connections cannot starve /health; token and secret files must
be the service user's and 0600; ``xuanwu token`` never follows a link nor takes over a file; webhook URLs
carry no credentials and name a host; a TLS key readable by others is refused."""
import argparse
import os
import resource
import socket
import subprocess
import sys
import threading
import time

import pytest
import requests
import uvicorn

from real_jobs import config, env, wait_for, write_config
from xuanwu import cli
from xuanwu.config import Config, ConfigError
from xuanwu.httpguard import guarded_protocol
from xuanwu.serve_options import ServeError, add_serve_arguments, serve_settings
from xuanwu.server import create_app
from xuanwu.spec import SpecError, parse_job
from xuanwu.store import Store

from executor_double import ExecutorDouble

TOKEN = 'hardening-test-token-0123456789'
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason='needs root to give a file to another user')


def _args(*argv):
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.fixture
def guarded(tmp_path):
    cfg = config(tmp_path)
    store = Store(cfg.data_dir / 'jobs.db')
    app = create_app(cfg, store, ExecutorDouble(store), TOKEN)
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False, timeout_keep_alive=1,
                                           http=guarded_protocol(header_timeout=1.0, max_connections=8)))
    thread = threading.Thread(target=server.run, kwargs={'sockets': [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    yield sock.getsockname()
    server.should_exit = True
    thread.join(10)


def _limit_descriptors():
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))


def test_idle_and_slow_sockets_cannot_starve_health_under_a_64_descriptor_limit(tmp_path):
    """The service as a process with 64 descriptors: 70 idle connections and a never-ending head, then
    /health still answers at once (before, accept() ran out of descriptors and /health timed out)."""
    token_file = tmp_path / 'token'
    token_file.write_text(TOKEN + '\n')
    os.chmod(token_file, 0o600)
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, '-m', 'xuanwu.cli', '--config', write_config(tmp_path), 'serve',
                             '--port', str(port), '--token-file', str(token_file), '--header-timeout', '5'],
                            env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_limit_descriptors)
    base = 'http://127.0.0.1:%d' % port
    idle = []
    try:
        wait_for(lambda: _health(base), timeout=30, what='the service to start')
        slow = socket.create_connection(('127.0.0.1', port), timeout=5)
        slow.sendall(b'GET /health HTTP/1.1\r\nHost: x\r\n')
        idle.append(slow)
        for dummy in range(70):
            conn = socket.socket()
            conn.setblocking(False)
            conn.connect_ex(('127.0.0.1', port))
            idle.append(conn)
        time.sleep(0.5)
        started = time.monotonic()
        for dummy in range(5):
            assert requests.get(base + '/health', timeout=3).status_code == 200
        assert time.monotonic() - started < 4
    finally:
        for conn in idle:
            conn.close()
        proc.terminate()
        err = proc.communicate(timeout=20)[1]
    assert 'Too many open files' not in err


def _health(base):
    try:
        return requests.get(base + '/health', timeout=1).status_code == 200
    except requests.RequestException:
        return False


def test_a_connection_without_a_request_is_closed_after_the_head_timeout(guarded):
    conn = socket.create_connection(guarded, timeout=5)
    started = time.monotonic()
    assert conn.recv(10) == b'' and 0.8 < time.monotonic() - started < 5
    conn.close()


@ROOT_ONLY
@pytest.mark.parametrize('option', ['--token-file', '--webhook-secret-file'])
def test_a_secret_file_of_another_user_is_refused(tmp_path, option):
    path = tmp_path / 'secret'
    path.write_text(TOKEN + '\n')
    os.chmod(path, 0o600)
    os.chown(path, 4242, 4242)
    argv = [option, str(path)] + (['--token-file', _mine(tmp_path)] if option != '--token-file' else [])
    with pytest.raises(ServeError) as err:
        serve_settings(_args(*argv), environ={})
    assert 'owned by uid 4242' in str(err.value) and TOKEN not in str(err.value)


def _mine(tmp_path):
    path = tmp_path / 'mine'
    path.write_text(TOKEN + '\n')
    os.chmod(path, 0o600)
    return str(path)


def test_token_output_never_follows_a_link_nor_replaces_anothers_file(tmp_path, capsys):
    victim = tmp_path / 'victim'
    victim.write_text('keep me\n')
    link = tmp_path / 'planted'
    link.symlink_to(victim)
    config_path = write_config(tmp_path)
    assert cli.main(['--config', config_path, 'token', '--output', str(link)]) == 4
    assert cli.main(['--config', config_path, 'token', '--output', str(link), '--force']) == 4
    assert victim.read_text() == 'keep me\n' and link.is_symlink()
    fresh = tmp_path / 'fresh'
    assert cli.main(['--config', config_path, 'token', '--output', str(fresh)]) == 0
    assert os.stat(fresh).st_mode & 0o777 == 0o600
    capsys.readouterr()


@ROOT_ONLY
def test_token_force_does_not_take_over_another_users_file(tmp_path, capsys):
    theirs = tmp_path / 'theirs'
    theirs.write_text('their content\n')
    os.chown(theirs, 4242, 4242)
    assert cli.main(['--config', write_config(tmp_path), 'token', '--output', str(theirs), '--force']) == 4
    assert theirs.read_text() == 'their content\n'
    capsys.readouterr()


@pytest.mark.parametrize('url', ['http://user:s3cr3t@hooks.example/x', 'https://s3cr3t@hooks.example/x',
                                 'http:///nohost', 'http://hooks.example:99999/x'])
def test_webhook_urls_with_credentials_or_without_host_are_refused(tmp_path, url):
    with pytest.raises(SpecError) as err:
        parse_job({'name': 'h', 'command': 'true', 'nodes': ['localhost'], 'webhook_url': url}, config(tmp_path))
    assert err.value.field == 'webhook_url' and 's3cr3t' not in str(err.value)
    with pytest.raises(ConfigError):
        Config(data_dir=str(tmp_path / 'home'), webhook_url=url)


def test_a_tls_key_readable_by_others_is_refused(tmp_path):
    cert, key = tmp_path / 'cert.pem', tmp_path / 'key.pem'
    cert.write_text('cert')
    key.write_text('key')
    os.chmod(key, 0o644)
    argv = ['--tls-cert', str(cert), '--tls-key', str(key), '--bind', '0.0.0.0']
    with pytest.raises(ServeError) as err:
        serve_settings(_args(*argv), environ={'XUANWU_API_TOKEN': TOKEN})
    assert 'TLS key' in str(err.value) and 'chmod 600' in str(err.value)
    os.chmod(key, 0o600)
    assert serve_settings(_args(*argv), environ={'XUANWU_API_TOKEN': TOKEN})['plaintext_remote'] is False


def test_webhook_secret_of_the_configuration_needs_a_private_file(tmp_path):
    path = tmp_path / 'xuanwu.yml'
    path.write_text('data_dir: %s\nwebhook_secret: hook-secret-0123456789\n' % (tmp_path / 'home'))
    os.chmod(path, 0o644)
    loaded = Config.load(str(path))
    with pytest.raises(ServeError) as err:
        serve_settings(_args(), environ={'XUANWU_API_TOKEN': TOKEN}, config=loaded)
    assert 'webhook_secret' in str(err.value) and '0644' in str(err.value)
    assert 'hook-secret' not in str(err.value)
    os.chmod(path, 0o600)
    assert serve_settings(_args(), environ={'XUANWU_API_TOKEN': TOKEN},
                          config=Config.load(str(path)))['webhook_secret'] == 'hook-secret-0123456789'


def test_a_request_path_cannot_forge_or_colour_lines_of_the_service_log(guarded, caplog):
    """An unauthenticated request whose path holds %0a and escape bytes: one log line, the controls shown as \\xNN."""
    import logging
    caplog.set_level(logging.INFO, logger='xuanwu.server')
    conn = socket.create_connection(guarded, timeout=5)
    conn.sendall(b'GET /api/v1/jobs%0a2026-12-06%2000:00:00%20INFO%20job%20j-1%20succeeded%1b[31m HTTP/1.1\r\n'
                 b'Host: x\r\nConnection: close\r\n\r\n')
    while conn.recv(4096):
        pass
    conn.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not [r for r in caplog.records if 'INFO job' in r.getMessage()]:
        time.sleep(0.05)
    lines = [r.getMessage() for r in caplog.records if 'INFO job' in r.getMessage()]
    assert len(lines) == 1 and '\n' not in lines[0] and '\x1b' not in lines[0], lines
    assert '/api/v1/jobs\\x0a2026-12-06 00:00:00 INFO job j-1 succeeded\\x1b[31m 401' in lines[0]

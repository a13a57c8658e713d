"""``kill -9`` of ``xuanwu serve`` while jobs run, then a restart on the same data folder: every job is
accounted for. A job whose process lives on is re-attached and ends normally; one whose process died
with the service is failed with the reason; a queued one runs. None stays 'running'. The survivor is a
playbook job (ansible-runner), the others are command jobs (quicker to start)."""
import json
import os
import signal
import time

import pytest

# The service's packages (requirements/service.txt) are in the newest controller's venv only; elsewhere the
# module is skipped as a whole, as one_controller tests are.
requests = pytest.importorskip('requests', reason='one_controller: the service tests run with .venv only')

from service_process import INVENTORY, Service, start_service, wait_gone  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.one_controller


def _sleep_job(name, seconds, pid_file):
    return {'name': name, 'playbook': 'sleep', 'inventory': INVENTORY,
            'extra_vars': {'sleep_sec': seconds, 'pid_file': str(pid_file)}}


def _wait_file(path, timeout=60):
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, '%s not written' % path
        time.sleep(0.1)


def test_kill_9_and_restart_accounts_for_every_job(tmp_path):
    first = start_service(tmp_path, {'max_concurrency': 2})
    survivor = first.submit(_sleep_job('survivor', 5, tmp_path / 'survivor.pid'))
    orphan = first.submit({'name': 'orphan', 'command': 'echo $$ > %s; sleep 300' % (tmp_path / 'orphan.pid'),
                           'nodes': ['localhost']})
    queued = first.submit({'name': 'queued', 'command': 'true', 'nodes': ['localhost']})
    _wait_file(tmp_path / 'survivor.pid')
    _wait_file(tmp_path / 'orphan.pid')
    assert first.job(queued)['status'] == 'queued'
    orphan_job = first.job(orphan)
    first.kill9()
    # the orphan's process dies while no service watches it (as on an OOM kill of the whole tree)
    os.killpg(orphan_job['pgid'], signal.SIGKILL)
    assert wait_gone(os.killpg, orphan_job['pgid'])
    assert first.proc.returncode == -signal.SIGKILL
    with pytest.raises(requests.ConnectionError):
        requests.get(first.base + '/health', timeout=5)

    second = Service(tmp_path, first.config, first.token, first.token_file, env=first.env).start()
    try:
        failed = second.wait(orphan, timeout=30)
        assert failed['status'] == 'failed'
        assert failed['reason'] == ('the service stopped while this job ran (pid %d gone); its artifacts: %s'
                                    % (orphan_job['pid'], orphan_job['artifact_dir']))
        stream = requests.get('%s/api/v1/jobs/%s/events' % (second.base, survivor), headers=second.headers,
                              stream=True, timeout=60)
        events = [json.loads(line[6:]) for line in stream.iter_lines(decode_unicode=True) if line.startswith('data: ')]
        assert events[-1]['type'] == 'state' and events[-1]['status'] == 'succeeded', events
        assert second.wait(survivor)['status'] == 'succeeded'
        assert second.wait(queued)['status'] == 'succeeded'
        jobs = second.get('/api/v1/jobs?limit=100').json()['jobs']
        assert sorted(j['id'] for j in jobs) == sorted([survivor, orphan, queued])
        assert all(j['status'] in ('succeeded', 'failed') for j in jobs), jobs
        assert '"reattached": ["%s"]' % survivor in second.log()
    finally:
        second.stop()

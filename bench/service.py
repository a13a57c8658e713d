# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Job service benchmark: what the service adds to a playbook run, and how fast it accepts jobs.

    .venv/bin/python bench/service.py [--rounds 5] [--playbook validate] [--inventory inventories/demo]
                                      [--submissions 200] [--clients 8] [--json out.json]

1. Per-job overhead. Each round runs the same playbook on the same inventory twice, back to back,
   the order alternating between rounds: (a) bare, ``ansible-runner run`` in a fresh private data
   folder (``--project-dir`` the repository, ``ANSIBLE_CONFIG`` its ansible.cfg, as the executor
   sets them); (b) through the service: ``POST /api/v1/jobs`` to a ``xuanwu serve`` on 127.0.0.1
   (max_concurrency 1), the time from the request to the end of the job's event stream (which ends
   at the final state). Both must end alike (the demo inventory's validate run fails three nodes
   on purpose: rc 2 bare, ``failed`` through the service). Medians, their difference (the overhead)
   and their ratio are reported.
2. Submission throughput. ``--clients`` threads POST ``--submissions`` command jobs (``true`` on
   localhost) as fast as the service answers; accepted jobs per second from the first request to
   the last answer. The jobs then run (max_concurrency 4) and the time until all are final is
   reported too.

Results: a table and ``bench/results/service-<UTC date>.json`` (or ``--json``). Needs the demo
bundles (``make demo-bundles``) for the demo inventory.
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import requests
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, 'src')
sys.path.insert(0, SRC)

from xuanwu.config import Config  # noqa: E402  pylint: disable=wrong-import-position


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class Service:
    def __init__(self, folder, max_concurrency):
        self.folder = folder
        self.token = os.urandom(24).hex()
        token_file = os.path.join(folder, 'token')
        with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), 'w') as handle:
            handle.write(self.token)
        config = os.path.join(folder, 'xuanwu-%d.yml' % max_concurrency)
        with open(config, 'w') as handle:
            yaml.safe_dump({'project_root': ROOT, 'data_dir': os.path.join(folder, 'data'), 'scheduler': 'local',
                            'max_concurrency': max_concurrency}, handle)
        self.port = free_port()
        self.base = 'http://127.0.0.1:%d' % self.port
        self.headers = {'Authorization': 'Bearer ' + self.token}
        home = os.path.join(folder, 'home')
        os.makedirs(home, exist_ok=True)
        env = dict(os.environ, HOME=home, PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get('PYTHONPATH')])))
        self.log = open(os.path.join(folder, 'service-%d.log' % self.port), 'ab')
        self.proc = subprocess.Popen([sys.executable, '-m', 'xuanwu.cli', '--config', config, 'serve', '--port',
                                      str(self.port), '--token-file', token_file], stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env, cwd=folder, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if requests.get(self.base + '/health', timeout=2).ok:
                    return
            except requests.ConnectionError:
                time.sleep(0.1)
        raise SystemExit('xuanwu serve did not start; see %s' % self.log.name)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        self.log.close()

    def submit(self, body):
        resp = requests.post(self.base + '/api/v1/jobs', json=body, headers=self.headers, timeout=60)
        resp.raise_for_status()
        return resp.json()['job_id']

    def run_job(self, body):
        """Seconds from the POST to the end of the job's event stream, and the job's final status."""
        started = time.perf_counter()
        job_id = self.submit(body)
        with requests.get('%s/api/v1/jobs/%s/events' % (self.base, job_id), headers=self.headers, stream=True,
                          timeout=3600) as resp:
            for dummy in resp.iter_lines():
                pass
        elapsed = time.perf_counter() - started
        job = requests.get('%s/api/v1/jobs/%s' % (self.base, job_id), headers=self.headers, timeout=60).json()
        return elapsed, job['status']


def bare_run(folder, n, playbook, inventory):
    """Seconds of one ``ansible-runner run`` of the playbook, and its rc."""
    private = os.path.join(folder, 'bare-%d' % n)
    os.makedirs(private)
    runner = shutil.which('ansible-runner') or os.path.join(os.path.dirname(sys.executable), 'ansible-runner')
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'))
    started = time.perf_counter()
    proc = subprocess.run([runner, 'run', private, '--project-dir', ROOT, '-p', playbook, '--inventory', inventory,
                           '--ident', 'bare-%d' % n], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                          check=False)
    elapsed = time.perf_counter() - started
    with open(os.path.join(private, 'artifacts', 'bare-%d' % n, 'rc')) as handle:
        return elapsed, int(handle.read().strip() or proc.returncode)


def throughput(service, submissions, clients):
    body = {'name': 'throughput', 'command': 'true', 'nodes': ['localhost'], 'timeout_sec': 600}
    ids, lock = [], threading.Lock()
    per_client = [submissions // clients + (1 if i < submissions % clients else 0) for i in range(clients)]

    def client(count):
        for dummy in range(count):
            job_id = service.submit(body)
            with lock:
                ids.append(job_id)
    threads = [threading.Thread(target=client, args=(count,)) for count in per_client]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    accepted = time.perf_counter() - started
    while True:
        listed = requests.get(service.base + '/api/v1/jobs?limit=1000', headers=service.headers, timeout=60).json()
        done = [j for j in listed['jobs'] if j['id'] in set(ids) and j['status'] in ('succeeded', 'failed', 'cancelled')]
        if len(done) == len(ids):
            break
        time.sleep(0.2)
    all_final = time.perf_counter() - started
    return {'submissions': len(ids), 'clients': clients, 'accept_sec': round(accepted, 3),
            'accepted_per_sec': round(len(ids) / accepted, 1), 'all_final_sec': round(all_final, 2),
            'statuses': sorted(set(j['status'] for j in done))}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--playbook', default='validate', help='a registered playbook name (default validate)')
    parser.add_argument('--inventory', default='inventories/demo')
    parser.add_argument('--submissions', type=int, default=200)
    parser.add_argument('--clients', type=int, default=8)
    parser.add_argument('--json', help='results file (default bench/results/service-<UTC date>.json)')
    args = parser.parse_args(argv)
    playbook = str(Config(project_root=ROOT).playbook_path(args.playbook))
    inventory = os.path.join(ROOT, args.inventory)
    folder = tempfile.mkdtemp(prefix='xuanwu-bench-service-')
    body = {'name': 'bench', 'playbook': args.playbook, 'inventory': args.inventory}
    bare, served, outcomes = [], [], []
    service = Service(folder, 1)
    try:
        for n in range(1, args.rounds + 1):
            order = ('bare', 'service') if n % 2 else ('service', 'bare')
            for what in order:
                if what == 'bare':
                    elapsed, rc = bare_run(folder, n, os.path.relpath(playbook, ROOT), inventory)
                    bare.append(elapsed)
                    outcomes.append(('bare', rc))
                else:
                    elapsed, status = service.run_job(body)
                    served.append(elapsed)
                    outcomes.append(('service', status))
                print('round %d %-7s %7.2f s  %s' % (n, what, elapsed, outcomes[-1][1]), flush=True)
    finally:
        service.stop()
    service = Service(folder, 4)
    try:
        accepted = throughput(service, args.submissions, args.clients)
    finally:
        service.stop()
    bare_rcs = sorted(set(o for w, o in outcomes if w == 'bare'))
    statuses = sorted(set(o for w, o in outcomes if w == 'service'))
    agree = (bare_rcs == [0] and statuses == ['succeeded']) or (0 not in bare_rcs and statuses == ['failed'])
    result = {
        'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ'),
        'machine': {'cpus': os.cpu_count(), 'load_avg_1m_at_end': round(os.getloadavg()[0], 2)},
        'playbook': args.playbook, 'inventory': args.inventory, 'rounds': args.rounds,
        'bare_sec': [round(x, 3) for x in bare], 'service_sec': [round(x, 3) for x in served],
        'bare_median_sec': round(statistics.median(bare), 3), 'service_median_sec': round(statistics.median(served), 3),
        'overhead_median_sec': round(statistics.median(served) - statistics.median(bare), 3),
        'ratio': round(statistics.median(served) / statistics.median(bare), 3),
        'bare_rcs': bare_rcs, 'service_statuses': statuses, 'outcomes_agree': agree,
        'throughput': accepted,
    }
    print('bare ansible-runner  median %.2f s' % result['bare_median_sec'])
    print('through the service  median %.2f s  (+%.2f s, ratio %.3f)'
          % (result['service_median_sec'], result['overhead_median_sec'], result['ratio']))
    print('submissions: %d accepted in %.2f s by %d clients = %.1f jobs/s; all final after %.1f s'
          % (accepted['submissions'], accepted['accept_sec'], accepted['clients'], accepted['accepted_per_sec'],
             accepted['all_final_sec']))
    out = args.json or os.path.join(ROOT, 'bench', 'results', 'service-%s.json'
                                    % datetime.datetime.now(datetime.timezone.utc).strftime('%Y%m%d'))
    with open(out, 'w') as handle:
        json.dump(result, handle, indent=2)
        handle.write('\n')
    print('XUANWU_BENCH %s' % json.dumps(result))
    shutil.rmtree(folder, ignore_errors=True)
    return 0 if agree else 1


if __name__ == '__main__':
    sys.exit(main())

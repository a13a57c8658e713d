# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time xuanwu.cluster.mesh_check with 1 and with N workers against a local sshd (docs/ssh-mesh.md).

Starts sshd on 127.0.0.1 (a free port, its own host and client keys in a temporary folder, as the
integration tests do), then runs the module as Ansible runs it (a child process reading its arguments
from a file) with PEERS peers that all point at that sshd, and prints the wall time, the findings (its records judged
as its action plugin judges them, ``_mesh.judged``) and how many peers logged in. Needs paramiko importable by the Python that runs it and `make setup`'s
.collections link. Usage: .venv/bin/python bench/mesh_check.py [--peers 64] [--workers 1 16]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
sys.path.insert(0, os.path.join(ROOT, 'src'))
from sshd_server import Sshd, keygen  # noqa: E402  pylint: disable=wrong-import-position
from xuanwu.collection import import_module  # noqa: E402  pylint: disable=wrong-import-position


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--peers', type=int, default=64)
    parser.add_argument('--workers', type=int, nargs='+', default=[1, 16])
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix='xuanwu-mesh-bench-')
    host_key = keygen(os.path.join(work, 'host_key'))
    client = keygen(os.path.join(work, 'client_key'))
    with open(os.path.join(work, 'authorized_keys'), 'w') as handle:
        handle.write(client + '\n')
    sshd = Sshd(work, [os.path.join(work, 'host_key')], os.path.join(work, 'authorized_keys')).start()
    try:
        with open(os.path.join(work, 'known_hosts'), 'w') as handle:
            handle.write('[127.0.0.1]:%d %s\n' % (sshd.port, host_key))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, '.collections')] + sys.path[1:]))
        for workers in args.workers:
            peers = [{'name': 'n%04d' % i, 'address': '127.0.0.1', 'port': sshd.port} for i in range(args.peers)]
            path = os.path.join(work, 'args.json')
            with open(path, 'w') as handle:
                json.dump({'ANSIBLE_MODULE_ARGS': {'peers': peers, 'key_file': os.path.join(work, 'client_key'),
                                                   'known_hosts': os.path.join(work, 'known_hosts'),
                                                   'workers': workers, 'interface': 'lo'}}, handle)
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, os.path.join(ROOT, 'plugins', 'modules', 'mesh_check.py'), path],
                                  stdout=subprocess.PIPE, env=env, check=False)
            wall = time.perf_counter() - start
            result = import_module('plugins.module_utils._mesh').judged(json.loads(proc.stdout.decode('utf-8')))
            print('workers=%d peers=%d wall=%.2fs findings=%d ssh_ok=%d load=%s' % (
                workers, args.peers, wall, len(result.get('findings', [])),
                sum(1 for p in result.get('peers', []) if p['ssh_ok']), ' '.join('%.1f' % x for x in os.getloadavg())))
    finally:
        sshd.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()

"""mesh_check run as Ansible runs a module (a child process reading its arguments from a file): paramiko missing
on the node is a clear failure naming it (TCP-only still works), bad peers are a clear failure naming the entry."""
import json
import os
import subprocess
import sys

from ansible_collections.xuanwu.cluster.plugins.module_utils import _mesh

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def run(tmp_path, args, without_paramiko=False):
    paths = [p for p in sys.path if p]
    if without_paramiko:
        # a paramiko that cannot be imported, first on the path: the node has none
        (tmp_path / 'paramiko').mkdir()
        (tmp_path / 'paramiko' / '__init__.py').write_text("raise ImportError('No module named paramiko')\n")
        paths.insert(0, str(tmp_path))
    args_file = tmp_path / 'args.json'
    args_file.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': args}))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, 'plugins', 'modules', 'mesh_check.py'), str(args_file)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=os.pathsep.join(paths)),
                          timeout=120, check=False)
    assert not proc.stderr.strip(), proc.stderr
    return json.loads(proc.stdout.decode('utf-8'))


def test_paramiko_missing_is_a_clear_failure(tmp_path):
    result = run(tmp_path, {'peers': ['127.0.0.1']}, without_paramiko=True)
    assert result['failed'] and 'paramiko' in result['msg'] and 'ssh: false' in result['msg']
    assert 'findings' not in result


def test_tcp_only_needs_no_paramiko(tmp_path):
    answer = run(tmp_path, {'peers': [{'name': 'n1', 'address': '127.0.0.1'}], 'ssh': False, 'name': 'n0'},
                 without_paramiko=True)
    # the module reads; its action plugin judges the records on the controller
    assert not answer.get('failed') and 'findings' not in answer and answer['records'][0]['resolved'] == '127.0.0.1'
    result = _mesh.judged(answer)
    assert not result.get('failed') and result['findings'] == [] and result['peers'][0]['tcp_ok'] is None


def test_bad_peers_are_a_clear_failure(tmp_path):
    result = run(tmp_path, {'peers': [{'name': 'n1', 'adress': '10.0.0.1'}], 'ssh': False})
    assert result['failed'] and result['msg'] == 'peers[0] has unknown keys adress (allowed: name, address, port)'


def test_no_peer_is_an_error_not_a_pass(tmp_path):
    result = run(tmp_path, {'peers': [], 'ssh': False})
    assert result['failed'] and result['msg'].startswith('peers is empty')

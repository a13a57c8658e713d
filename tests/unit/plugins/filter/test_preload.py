"""xuanwu.cluster.preload: the per-host action plugins imported in the process that templates a play's hosts (Ansible's
main process, which each host's worker is forked from), the pattern returned unchanged, a failed import a warning."""
import subprocess
import sys

from ansible_collections.xuanwu.cluster.plugins.filter import preload


def test_every_per_host_action_is_imported_and_the_pattern_kept():
    code = ('import sys\n'
            'from ansible_collections.xuanwu.cluster.plugins.filter import preload\n'
            'names = [preload.PACKAGE + name for name in preload.PER_HOST_ACTIONS]\n'
            'before = [name in sys.modules for name in names]\n'
            'kept = preload.preload(["all", "!gpu-node03"])\n'
            'print(before, [name in sys.modules for name in names], kept)\n')
    out = subprocess.run([sys.executable, '-c', code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True,
                         env={'PYTHONPATH': ':'.join(p for p in sys.path if p)}).stdout.decode()
    assert out.strip() == "[False, False] [True, True] ['all', '!gpu-node03']"


def test_a_plugin_that_does_not_import_is_a_warning(monkeypatch):
    warned = []
    monkeypatch.setattr(preload, 'PER_HOST_ACTIONS', ('no_such_action',))
    monkeypatch.setattr(preload.display, 'warning', warned.append)
    assert preload.preload('all') == 'all'
    assert len(warned) == 1 and warned[0].startswith('xuanwu.cluster.preload: no_such_action not imported')


def test_validate_yml_probes_the_nodes_through_it():
    import os
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..')
    with open(os.path.join(root, 'playbooks', 'validate.yml')) as handle:
        text = handle.read()
    probe_play = text[text.index('- name: Probe each node and compare it with its profile'):]
    assert probe_play.splitlines()[1] == '''  hosts: "{{ 'all' | xuanwu.cluster.preload }}"'''
    assert preload.FilterModule().filters() == {'preload': preload.preload}

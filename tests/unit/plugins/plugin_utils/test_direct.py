"""The probe's direct answer (plugin_utils/_direct): the node's Python runs _probe_node from standard input and gives
the answer the node_probe module gives, from the same code; where it cannot go, the module runs as a module."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _probe_node
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _direct
from ansible_collections.xuanwu.cluster.tests.unit.plugins.modules.test_bundle_modules import run_module

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))
DEMO = os.path.join(ROOT, 'inventories', 'demo-bundles')


class _Built(object):
    def __init__(self, shebang):
        self.shebang = shebang


class _Action(object):
    """What _direct and node_validate's _probe use of an ActionModule; the command really runs (/bin/sh -c)."""

    def __init__(self, interpreter=sys.executable, become=None, pipelining=True, has_pipelining=True,
                 old_shape=False, discovered=None, env=''):
        action = self
        self.commands = []
        self.cwd = None

        class Connection(object):
            _shell = type('Shell', (), {'tmpdir': None, 'SHELL_FAMILY': 'sh'})()

        Connection.has_pipelining = has_pipelining
        Connection.become = become
        self._connection = Connection()
        self._remove_tmp_path = lambda path: None
        self._is_pipelining_enabled = lambda module_style, wrap_async=False: pipelining and module_style == 'new'
        self.executed_modules = []

        def configure(module_name, module_args, task_vars):
            if discovered:
                action._discovered_interpreter_key = 'discovered_interpreter_python'
                action._discovered_interpreter = discovered
            shebang = '#!' + interpreter if interpreter else None
            return ('new', shebang, b'', '/m.py') if old_shape else (_Built(shebang), '/m.py')

        def execute(module_name, module_args, task_vars):
            self.executed_modules.append((module_name, module_args))
            return run_module(pathlib.Path(os.environ.get('PYTEST_TMP', '/tmp')), module_name.rsplit('.', 1)[1], module_args)

        self._configure_module = configure
        self._execute_module = execute
        self._compute_environment_string = lambda: env

    def _low_level_execute_command(self, cmd, sudoable=True, in_data=None):
        self.commands.append((cmd, in_data))
        proc = subprocess.run(['/bin/sh', '-c', cmd], input=in_data, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                              check=False, cwd=self.cwd)
        return {'rc': proc.returncode, 'stdout': proc.stdout.decode('utf-8', 'replace'),
                'stderr': proc.stderr.decode('utf-8', 'replace')}


def test_the_payload_is_the_entry_and_what_it_imports_and_nothing_of_ansible():
    assert sorted(_direct.closure()) == ['_bundle', '_collect', '_commands', '_probe_node']
    sources = {'_probe_node': 'from ansible_collections.xuanwu.cluster.plugins.module_utils import _a\n',
               '_a': 'import os\nfrom ansible_collections.xuanwu.cluster.plugins.module_utils._b import (X,\n  Y)\n',
               '_b': 'X = Y = 1\n'}
    assert sorted(_direct.closure(read=sources.__getitem__)) == ['_a', '_b', '_probe_node']
    sources['_b'] = 'from ansible.module_utils.basic import AnsibleModule\n'
    with pytest.raises(_direct.DirectError, match='module_utils _b imports Ansible'):
        _direct.closure(read=sources.__getitem__)
    sources['_b'] = 'from ansible_collections.community.general.plugins.module_utils import x\n'
    with pytest.raises(_direct.DirectError, match='another collection'):
        _direct.closure(read=sources.__getitem__)


@pytest.mark.parametrize('node', ['gpu-node01', 'gpu-node02', 'gpu-node03'])
@pytest.mark.parametrize('old_shape', [False, True], ids=['ansible-core 2.19', 'ansible-core 2.16'])
def test_the_direct_answer_is_the_modules_answer(tmp_path, monkeypatch, node, old_shape):
    monkeypatch.setenv('PYTEST_TMP', str(tmp_path))
    args = {'replay_dir': os.path.join(DEMO, node), 'disk_paths': ['/', '/var/lib/docker'], 'timeout': 60,
            'process_patterns': [r'(^|/)torchrun(\s|$)'], 'gather': ['all']}
    action = _Action(old_shape=old_shape)
    answer = _direct.run(action, 'xuanwu.cluster.node_probe', args, {})
    module = run_module(tmp_path, 'node_probe', dict(args, parse=False))
    module.pop('invocation', None)
    assert answer == module and answer['source'] == 'replay'
    (command, data), = action.commands
    # the options travel on standard input, never on the command line
    assert r'torchrun' not in command and node not in command and json.loads(data.decode())['args'] == args


def test_node_validate_takes_the_direct_answer_and_builds_the_same_facts(tmp_path, monkeypatch):
    monkeypatch.setenv('PYTEST_TMP', str(tmp_path))
    from ansible_collections.xuanwu.cluster.plugins.action import node_validate
    args = {'replay_dir': os.path.join(DEMO, 'gpu-node02'), 'disk_paths': ['/'], 'gather': ['all']}
    direct = _Action()
    facts, error = node_validate.ActionModule._probe(direct, dict(args), {})
    module = _Action(has_pipelining=False)
    expected, error2 = node_validate.ActionModule._probe(module, dict(args), {})
    assert (error, error2) == ('', '') and facts == expected
    assert len(direct.commands) == 1 and direct.executed_modules == [] and len(module.executed_modules) == 1


def test_node_validate_says_how_it_probed_and_its_switch_sends_the_module(tmp_path, monkeypatch):
    monkeypatch.setenv('PYTEST_TMP', str(tmp_path))
    from ansible_collections.xuanwu.cluster.plugins.action import node_validate
    args = {'replay_dir': os.path.join(DEMO, 'gpu-node01'), 'disk_paths': ['/'], 'gather': ['all']}
    direct = _Action()
    facts, _error = node_validate.ActionModule._probe(direct, dict(args), {})
    assert direct._probe_via == 'direct' and direct.executed_modules == []
    off = _Action()
    facts_off, _error = node_validate.ActionModule._probe(off, dict(args), {}, direct=False)
    assert off.commands == [] and len(off.executed_modules) == 1 and facts_off == facts
    assert off._probe_via == 'module: switched off (direct: false, xuanwu_probe_direct)'
    unpiped = _Action(has_pipelining=False)
    node_validate.ActionModule._probe(unpiped, dict(args), {})
    assert unpiped._probe_via == 'module: the connection cannot pass data on standard input'
    # the inventory variable reaches the option (the role runs node_validate with variables: true)
    read = node_validate.options_from_variables({}, {'xuanwu_probe_direct': False}, lambda value: value)
    assert read['direct'] is False and 'direct' not in node_validate.options_from_variables({}, {}, lambda value: value)


@pytest.mark.parametrize('kwargs, why', [
    ({'has_pipelining': False}, 'cannot pass data on standard input'),
    ({'become': object(), 'pipelining': False}, 'become without pipelining'),
])
def test_where_the_direct_answer_cannot_go_the_module_runs(kwargs, why):
    usable, reason = _direct.usable(_Action(**kwargs))
    assert not usable and why in reason
    assert _direct.usable(_Action(become=object(), pipelining=True)) == (True, '')
    assert _direct.usable(_Action()) == (True, '')


def test_a_payload_that_cannot_be_sent_runs_the_module(monkeypatch):
    monkeypatch.setattr(_direct, '_SOURCES', [])
    monkeypatch.setattr(_direct, 'UTILS', '/nonexistent/module_utils')
    usable, reason = _direct.usable(_Action())
    assert not usable and 'cannot read module_utils _probe_node' in reason


def test_nothing_planted_in_the_working_folder_or_the_environment_is_imported(tmp_path, monkeypatch):
    marker = tmp_path / 'planted-ran'
    for name in ('json', 'importlib', 'os', 'subprocess'):
        (tmp_path / (name + '.py')).write_text('open(%r, "w").write("%s")\nraise SystemExit(3)\n' % (str(marker), name))
    monkeypatch.setenv('PYTHONPATH', str(tmp_path))
    action = _Action()
    action.cwd = str(tmp_path)
    answer = _direct.run(action, 'xuanwu.cluster.node_probe', {'replay_dir': os.path.join(DEMO, 'gpu-node01')}, {})
    assert answer.get('source') == 'replay' and not marker.exists(), answer


def test_a_discovered_interpreter_is_handed_back():
    answer = _direct.run(_Action(discovered=sys.executable), 'xuanwu.cluster.node_probe',
                         {'replay_dir': os.path.join(DEMO, 'gpu-node01')}, {})
    assert answer['ansible_facts'] == {'discovered_interpreter_python': sys.executable}


def test_facts_the_node_writes_are_not_taken(tmp_path):
    fake = tmp_path / 'python3'
    fake.write_text('#!/bin/sh\ncat > /dev/null\necho \'{"outputs": [], "ansible_facts": {"discovered_interpreter_python": "/tmp/evil"}}\'\n')
    fake.chmod(0o755)
    answer = _direct.run(_Action(interpreter=str(fake)), 'xuanwu.cluster.node_probe', {}, {})
    assert answer == {'outputs': []}


def test_the_tasks_environment_applies():
    answer = _direct.run(_Action(env='XUANWU_BUNDLE=%s' % os.path.join(DEMO, 'gpu-node01')), 'xuanwu.cluster.node_probe',
                         {'replay_dir': '$XUANWU_BUNDLE'}, {})
    assert answer.get('source') == 'replay', answer


@pytest.mark.parametrize('args, message', [
    ({'replay_dir': '/nonexistent/bundle'}, 'nonexistent'),
    ({'timeout': -1}, 'node_probe: timeout must be 0 or more'),
    ({'gather': ['gpu', 'bogus']}, 'node_probe: gather: bogus is not one of'),
    ({'process_patterns': ['(']}, "node_probe: process_patterns: '(' is not a regular expression"),
    ({'read_tests': [{'path': 'relative'}]}, "read_tests[0].path: 'relative' is not an absolute path"),
    ({'surprise': 1}, 'node_probe: unknown option(s): surprise'),
])
def test_a_bad_option_or_bundle_is_a_failure_naming_it(args, message):
    answer = _direct.run(_Action(), 'xuanwu.cluster.node_probe', args, {})
    assert answer['failed'] and message in answer['msg'], answer


def test_a_node_without_the_interpreter_is_an_error_naming_it_and_no_traceback():
    answer = _direct.run(_Action(interpreter='/nonexistent/python3'), 'xuanwu.cluster.node_probe', {}, {})
    assert answer['failed'] and "the node's Python (/nonexistent/python3) gave no answer (rc 127)" in answer['msg'], answer
    answer = _direct.run(_Action(interpreter=None), 'xuanwu.cluster.node_probe', {}, {})
    assert answer == {'failed': True, 'msg': 'no Python interpreter for xuanwu.cluster.node_probe on the node'}


def test_an_old_python_on_the_node_is_named(tmp_path):
    fake = tmp_path / 'python3'
    # a Python that says it is 3.6: the bootstrap's first lines run on any Python
    fake.write_text('#!/bin/sh\nexec %s -c "import sys; sys.version_info = (3, 6, 9); sys.version = \'3.6.9 x\'; '
                    'exec(sys.argv[2])" -c "$3"\n' % sys.executable)
    fake.chmod(0o755)
    answer = _direct.run(_Action(interpreter=str(fake)), 'xuanwu.cluster.node_probe', {}, {})
    assert answer['failed'] and 'needs Python 3.8 or newer on the node' in answer['msg'] and '3.6.9' in answer['msg'], answer


def test_a_tool_that_outlives_its_bound_is_stopped_with_its_group(tmp_path):
    script = tmp_path / 'hang'
    script.write_text('#!/bin/sh\nsleep 60 &\nsleep 60\n')
    script.chmod(0o755)
    rc, out, err = _probe_node.run_tool([str(script)], bound=1)
    assert rc == 124 and 'stopped after 1s' in err
    rc, out, err = _probe_node.run_tool(['/bin/sh', '-c', 'echo "$LC_ALL $TERM"; read x; echo "[$x]"'])
    assert (rc, out) == (0, 'C dumb\n[]\n')
    assert _probe_node.run_tool(['/nonexistent/tool'])[0] == 127


def test_tools_are_found_as_ansible_finds_them(tmp_path, monkeypatch):
    first, second = tmp_path / 'a', tmp_path / 'b'
    for folder in (first, second):
        folder.mkdir()
        tool = folder / 'tool'
        tool.write_text('#!/bin/sh\n')
        tool.chmod(0o755)
    (tmp_path / 'c').mkdir()
    (tmp_path / 'c' / 'tool').mkdir()
    monkeypatch.setenv('PATH', '%s:%s' % (tmp_path / 'c', second))
    assert _probe_node.find_tool('tool', [str(first)]) == str(first / 'tool')
    assert _probe_node.find_tool('tool', []) == str(second / 'tool')
    assert _probe_node.find_tool('no-such-tool', []) is None

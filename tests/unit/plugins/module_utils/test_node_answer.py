"""The node answers, the controller parses (node_probe ``parse: false``, node_validate): the node collects the raw
outputs without loading a parser (_collect), filters the process list before it leaves (command lines can carry
secrets), and the controller builds from the answer exactly the facts that node_probe builds on the node. A node's
answer is untrusted: one that is not what the node writes is an error naming the field, never a traceback."""
import json
import os
import re
import subprocess
import sys

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _collect, _parse_host, _parse_net, _probe
from ansible_collections.xuanwu.cluster.plugins.module_utils._commands import QUERY_GPU_FIELDS
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils import amd_node, node_answer
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils.test_facts import BUNDLES, ROOT

FIXTURES = os.path.join(ROOT, 'tests', 'fixtures')
PARSERS = ('_parse_host', '_parse_nvidia', '_parse_net', '_parse_ib', '_parse_amd', '_probe', '_errors', '_text')


def read(relative):
    with open(os.path.join(FIXTURES, relative)) as handle:
        return handle.read()


@pytest.mark.parametrize('bundle', BUNDLES, ids=[os.path.relpath(path, ROOT) for path in BUNDLES])
@pytest.mark.parametrize('stage', ['start', 'end'])
def test_the_facts_of_an_answer_are_the_facts_of_the_node(bundle, stage):
    expected = _probe.probe(_probe.ReplayRunner(bundle), stage=stage)
    assert node_answer.facts(_probe.ReplayRunner(bundle), stage=stage) == expected
    assert expected['source'] == 'replay'


def test_the_node_loads_no_parser():
    """What node_probe imports for ``parse: false`` (_collect and what it imports) names no parser module."""
    code = ('import sys; sys.path[:0] = %r\n'
            'from ansible_collections.xuanwu.cluster.plugins.module_utils import _collect\n'
            'print(sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("ansible_collections.xuanwu.cluster.plugins.module_utils.")))'
            % [p for p in sys.path if p])
    loaded = json.loads(subprocess.check_output([sys.executable, '-c', code]).decode().replace("'", '"'))
    assert loaded == ['_bundle', '_collect', '_commands'], loaded
    assert not set(loaded) & set(PARSERS)


# ------------------------------------------------------------------------------------------------ a live node

def live_node(outputs, ran=None):
    """A LiveRunner whose tools print ``outputs`` (command line -> text); every other tool is not installed."""
    def which(name):
        return '/usr/bin/' + name if any(line.split(' ')[0] == name for line in outputs) else None

    def run(argv):
        if ran is not None:
            ran.append(argv)
        line = ' '.join([os.path.basename(argv[0])] + list(argv[1:]))
        return (0, outputs[line], '') if line in outputs else (127, '', 'not found')

    return _probe.LiveRunner(run, which, timeout=0)


def steady(facts):
    """The facts without what this machine's own /proc/meminfo says (the fake node reads the real files; free memory
    moves between two reads)."""
    facts.get('host', {}).pop('memory', None)
    return facts


SECRET = 'hunter2-not-for-the-controller'


def gpu_node(ps_extra=''):
    """A live 4-GPU node with a leftover job on its GPUs, a network, and one process whose command line holds a secret."""
    ps = read('derived/host/ps_gpu_node_leftover_torchrun.txt') + ps_extra
    ps += ' 9001     1 alice                                 12 python serve.py --db-password %s\n' % SECRET
    return {
        'ps -e -ww -o %s' % _collect.PS_FORMAT: ps,
        'nvidia-smi --query-gpu=%s --format=csv' % ','.join(QUERY_GPU_FIELDS): read('hardware/h200x4-nvlink/nvidia-smi_--query-gpu.csv'),
        'nvidia-smi -q -x': read('derived/nvidia/q-x_leftover-job-4gpu.xml'),
        'ip -j -d link show': read('derived/net/ip_-j_-d_link_show_gpu_node.json'),
        'ethtool ens1np0': read('derived/net/ethtool_ens1np0_mlx5_400g.txt'),
        'ethtool -i ens1np0': read('derived/net/ethtool_-i_ens1np0_mlx5_core.txt'),
        'uname -a': 'Linux gpu-node01 6.8.0-49-generic #49-Ubuntu SMP x86_64 GNU/Linux\n',
    }


def test_a_live_node_answers_what_it_would_have_parsed():
    outputs = gpu_node()
    expected = steady(_probe.probe(live_node(outputs)))
    assert steady(node_answer.facts(live_node(outputs))) == expected
    # the leftover job was kept, with the command lines of the GPU processes and their parents
    assert expected['host']['processes']['matched_total'] > 0
    procs = [proc for device in expected['gpu']['devices'] for proc in device['processes']]
    assert procs and all(proc.get('command') and proc.get('parent_command') for proc in procs)
    # every interface that is no loopback, container bridge or tunnel was probed, as on the node
    assert sorted(k for k in expected['probes'] if k.startswith('ethtool:')) == \
        sorted('ethtool:' + name for name in ('eth0', 'ens1np0', 'ens2np0', 'ens3np0', 'ens4np0', 'ens5np0', 'ens6np0', 'ens7np0', 'ens8np0'))


def test_the_process_list_is_filtered_before_it_leaves_the_node():
    records = node_answer.answer(live_node(gpu_node()))
    [ps] = [record for record in records if record['probe'] == 'processes']
    assert SECRET not in json.dumps(records)
    full = _parse_host.parse_ps(gpu_node()['ps -e -ww -o %s' % _collect.PS_FORMAT])
    kept = _parse_host.parse_ps(ps['stdout'])
    assert ps['rows'] == len(full) == 20 and len(kept) == 5
    # what is kept: the job processes, the GPU processes (pids of nvidia-smi -q -x) and their parents
    pids = set(int(pid) for pid in re.findall(r'<pid>(\d+)</pid>', read('derived/nvidia/q-x_leftover-job-4gpu.xml')))
    parents = set(row['ppid'] for row in full if row['pid'] in pids)
    assert pids | parents <= set(row['pid'] for row in kept)
    assert _probe.facts_from_answer(records)['host']['processes']['count'] == len(full)


def test_the_filter_keeps_what_the_parser_must_judge():
    text = ('PID PPID USER ELAPSED COMMAND\n'
            '    2     0 root 100 [kthreadd]\n'
            '   10     2 root 100 [kworker/0:1]\n'
            '  100     1 bob   50 torchrun --nproc-per-node 8 train.py\n'
            '  200   100 bob   49 python train.py --token %s\n'
            'this is not a ps line\n' % SECRET)
    kept, rows = _collect.filter_processes(text, _collect.DEFAULT_LEFTOVER_PATTERNS)
    assert rows == 2 and SECRET not in kept and 'torchrun' in kept
    assert 'this is not a ps line' in kept and 'PID PPID' in kept and 'kthreadd' not in kept
    with pytest.raises(ParseError, match='not a "pid ppid user etimes args" line'):
        _parse_host.parse_ps(kept)
    # a GPU process keeps its own line and its parent's
    kept, _rows = _collect.filter_processes(text, [], keep_pids=[200])
    assert SECRET in kept and 'torchrun' in kept
    # a pattern that does not compile matches nothing
    assert _collect.filter_processes(text, ['(unclosed'])[0].count('\n') == 2


IP_LINKS = ['derived/net/ip_-j_-d_link_show_gpu_node.json', 'derived/net/ip_-j_-d_link_show_mtu_mismatch.json',
            'derived/net/ip_-j_-d_link_show_data_nic_down.json', 'hardware/debian12-vm-noaccel/ip_-j_link_show.json',
            'hardware/h200x1-bundle/ip_link.txt', 'hardware/h200x2-nvlink-bundle/ip_link.txt']
HOSTILE_LINKS = ['', 'not json', '{}', '[1]', '[{"mtu": 1500}]', '[{"ifname": ""}]', '[{"ifname": 5}]',
                 '[{"ifname": "eth0", "linkinfo": "veth"}]', '[{"ifname": "eth0", "linkinfo": {"info_kind": 7}}]',
                 '[{"ifname": "v0", "linkinfo": {"info_kind": "veth"}}, {"ifname": "eth1", "link_type": ["ether"]}]',
                 '[{"ifname": "lo", "link_type": "loopback"}, {"ifname": "ib0", "link_type": "infiniband"}]']


@pytest.mark.parametrize('text', [read(name) for name in IP_LINKS] + HOSTILE_LINKS, ids=IP_LINKS + HOSTILE_LINKS)
def test_the_node_selects_the_interfaces_the_parser_would(text):
    try:
        parsed = _parse_net.parse_ip_link(text)
    except ParseError:
        parsed = {}
    assert _collect.select_interfaces(_collect.link_kinds(text)) == _collect.select_interfaces(parsed)
    assert _collect.select_interfaces(_collect.link_kinds(text), ['e*']) == _collect.select_interfaces(parsed, ['e*'])


@pytest.mark.parametrize('tools', [('amd-smi', 'rocm-smi'), ('rocm-smi',)])
def test_an_amd_node_answers_what_it_would_have_parsed(tools):
    assert steady(node_answer.facts(amd_node.runner(tools))) == steady(_probe.probe(amd_node.runner(tools)))


def test_the_groups_asked_and_the_end_stage():
    outputs = gpu_node()
    for groups in (('host',), ('gpu', 'xid'), ('network',)):
        assert steady(node_answer.facts(live_node(outputs), groups=groups)) == steady(_probe.probe(live_node(outputs), groups=groups))
    assert node_answer.facts(live_node(outputs), stage='end') == _probe.probe(live_node(outputs), stage='end')


# ------------------------------------------------------------------------------------------------ a hostile answer

GOOD = {'probe': 'uname', 'alternative': 0, 'status': 'ok', 'command': 'uname -a', 'rc': 0, 'stdout': 'Linux n1 6.8.0 x86_64\n',
        'stderr': ''}


@pytest.mark.parametrize('records, message', [
    ({'uname': GOOD}, 'outputs: expected a list'),
    (['uname'], r'outputs\[0\]: expected a mapping'),
    ([dict(GOOD, probe=None)], r'outputs\[0\]\.probe: expected text'),
    ([dict(GOOD, stdout=5)], r'outputs\[0\]\.stdout: expected text'),
    ([dict(GOOD, note=['x'])], r'outputs\[0\]\.note: expected text'),
    ([dict(GOOD, alternative=True)], r'outputs\[0\]\.alternative: expected a whole number'),
    ([dict(GOOD, alternative=-1)], r'outputs\[0\]\.alternative: expected a whole number'),
    ([dict(GOOD, rc='0')], r'outputs\[0\]\.rc: expected an integer'),
    ([dict(GOOD, rows=-3)], r'outputs\[0\]\.rows: expected a whole number'),
    ([dict(GOOD, status='fine')], r"outputs\[0\]\.status: 'fine' is not one of ok, missing"),
    ([GOOD, GOOD], r"outputs\[1\]\.probe: 'uname' is answered twice"),
])
def test_an_answer_that_is_not_what_the_node_writes_names_the_field(records, message):
    with pytest.raises(_probe.AnswerError, match=message):
        _probe.facts_from_answer(records)


def test_only_the_process_list_says_how_many_processes_there_were():
    records = node_answer.answer(live_node(gpu_node()))
    for record in records:
        record['rows'] = 7 if record['probe'] != 'processes' else record['rows']
    assert _probe.facts_from_answer(records)['host']['processes']['count'] == 20


def test_an_answer_with_an_unknown_way_or_probe_spoils_only_that_probe():
    release = dict(GOOD, probe='os_release', command='cat /etc/os-release', stdout='ID=ubuntu\nVERSION_ID="24.04"\n')
    records = [dict(GOOD, alternative=3), dict(GOOD, probe='no_such_probe'), release]
    facts = _probe.facts_from_answer(records, groups=('host',))
    assert facts['probes']['uname']['status'] == 'parse_error' and 'way 4' in facts['probes']['uname']['error']
    assert 'no_such_probe' not in facts['probes'] and facts['host']['os']['id'] == 'ubuntu'
    assert facts['probes']['chrony']['status'] == 'skipped'


# ------------------------------------------------------------------------------------------------ module and action

class _Action(object):
    """What node_validate's _probe uses of its ActionModule: the module run as Ansible runs it (a child process)."""

    def __init__(self, tmp_path, answer=None):
        from ansible_collections.xuanwu.cluster.tests.unit.plugins.modules.test_bundle_modules import run_module
        # a connection that cannot pass data on standard input: the module runs as a module (plugin_utils/_direct)
        self._connection = type('Connection', (), {'_shell': type('Shell', (), {'tmpdir': None})(), 'has_pipelining': False})()
        self.asked = []

        def execute(module_name, module_args, task_vars):
            self.asked.append((module_name, module_args))
            return answer if answer is not None else run_module(tmp_path, module_name.rsplit('.', 1)[1], module_args)

        self._execute_module = execute
        self._remove_tmp_path = lambda path: None

    def probe(self, probe_args):
        from ansible_collections.xuanwu.cluster.plugins.action import node_validate
        return node_validate.ActionModule._probe(self, probe_args, {})


DEMO = os.path.join(ROOT, 'inventories', 'demo-bundles', 'gpu-node02')


def test_the_action_asks_for_the_answer_and_builds_the_facts_the_module_builds(tmp_path):
    from ansible_collections.xuanwu.cluster.tests.unit.plugins.modules.test_bundle_modules import run_module
    args = {'replay_dir': DEMO, 'disk_paths': ['/', '/var/lib/docker'], 'process_patterns': [r'(^|/)torchrun(\s|$)']}
    action = _Action(tmp_path)
    facts, error = action.probe(dict(args))
    assert error == '' and action.asked == [('xuanwu.cluster.node_probe', dict(args, parse=False))]
    expected = run_module(tmp_path, 'node_probe', args)['ansible_facts']['xuanwu_facts']
    assert facts == expected and facts['source'] == 'replay'
    answered = run_module(tmp_path, 'node_probe', dict(args, parse=False))
    assert 'ansible_facts' not in answered and (answered['source'], answered['disk_paths']) == ('replay', ['/', '/var/lib/docker'])


@pytest.mark.parametrize('answer, message', [
    ({'failed': True, 'msg': 'replay_dir: no manifest.json'}, 'Probe the node (one round trip): replay_dir: no manifest.json'),
    ({'changed': False}, 'Probe the node (one round trip): failed'),
    ({'outputs': [dict(GOOD, rc='zero')]}, r"the node's probe answer is not what node_probe returns: outputs\[0\]\.rc"),
    ({'outputs': 'nothing'}, "the node's probe answer is not what node_probe returns: outputs: expected a list"),
])
def test_an_answer_the_action_cannot_use_is_the_hosts_error(tmp_path, answer, message):
    facts, error = _Action(tmp_path, answer).probe({'disk_paths': ['/']})
    assert facts is None and re.match(re.escape(message) if '\\' not in message else message, error), error


MOUNT_SECRET = 'mount-secret-not-for-the-controller'


@pytest.mark.parametrize('name', ['derived/host/proc_mounts_gpu_node_nfs_dataset.txt', 'derived/host/proc_mounts_parallel_file_systems.txt'])
def test_the_mount_options_stay_on_the_node(name):
    text = read(name) + ('//fs1/share /mnt/share cifs rw,relatime,vers=3.0,username=svc,password=%s 0 0\n'
                         'sshfs#svc@fs2:/data /mnt/fs2 fuse ro,user_id=0,ssh_command=sshpass\\040-p\\040%s 0 0\n'
                         % (MOUNT_SECRET, MOUNT_SECRET))
    kept = _collect.filter_mounts(text)
    assert MOUNT_SECRET not in kept
    assert _parse_host.parse_proc_mounts(kept) == _parse_host.parse_proc_mounts(text)
    assert [m['read_only'] for m in _parse_host.parse_proc_mounts(kept)][-2:] == [False, True]
    # a line that is not six fields is kept, so that the parser still says why it is not a mount
    with pytest.raises(ParseError, match='not "device mount type options dump pass"'):
        _parse_host.parse_proc_mounts(_collect.filter_mounts(text + 'garbage line\n'))

"""inventories/production-example, the example of a whole site (its README.md): ``site.yml --check --diff`` takes it
as it is, every node's role variables are ones their roles declare, of the declared types, the roles' own input checks
pass in every rack, a mistyped value in a copy of it is refused, naming the variable, and the batches and failure limit
it keeps in group_vars/all are the ones the rollout uses.

The example's nodes do not exist. The plan runs until its first connection to a node, which never leaves this
machine: ``--ssh-extra-args '-o ProxyCommand=false'`` makes ssh fail before it opens a socket, after Ansible has put
the example's own SSH options on its command line. The roles' input checks run on the local connection, as
test_firewall_preflight.py runs them."""
import fnmatch
import ipaddress
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from hostcases import by_host, recap
from test_site_rollout import Cluster, latest
from test_validate_playbook import ROOT, playbook

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')

EXAMPLE = os.path.join(ROOT, 'inventories', 'production-example')
RUN = 'CHG-4711'
OFFLINE = ('--ssh-extra-args', '-o ProxyCommand=false')
RACKS = ('rack_r01', 'rack_r02', 'rack_r03')
LOCAL = ('-e', 'ansible_python_interpreter={{ ansible_playbook_python }}', '-e', 'ansible_become=false')


def nodes(folder=EXAMPLE):
    """[(inventory name, ansible_host)] of hosts.yml, rack by rack: the order the rollout takes them in."""
    with open(os.path.join(folder, 'hosts.yml')) as handle:
        racks = yaml.safe_load(handle)['all']['children']
    return [(name, spec['ansible_host']) for rack in RACKS for name, spec in racks[rack]['hosts'].items()]


def hostvars(folder=EXAMPLE):
    """Every host's variables as Ansible merges them from the inventory (not templated)."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'))
    proc = subprocess.run(['ansible-inventory', '-i', folder, '--list'], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(proc.stdout)['_meta']['hostvars']


def batches(names, serial):
    """The batches Ansible makes of ``names`` for a ``serial`` list of sizes (the last size repeats)."""
    out, sizes = [], list(serial)
    while names:
        size = sizes.pop(0) if len(sizes) > 1 else sizes[0]
        out.append(names[:size])
        names = names[size:]
    return out


def example_batches():
    with open(os.path.join(EXAMPLE, 'group_vars', 'all', 'rollout.yml')) as handle:
        serial = yaml.safe_load(handle)['xuanwu_serial']
    names = [name for name, _address in nodes()]
    # not the batches of the default [1, "20%"] (1, 2, 2, ... of 12 hosts): a plan that ignored the example's would fail
    assert batches(names, serial) != batches(names, [1, 2])
    return batches(names, serial)


def site_plan(tmp_path, folder=EXAMPLE, *extra):
    return playbook('-i', folder, 'site.yml', '--check', '--diff', '-e', 'xuanwu_run_id=%s' % RUN,
                    '-e', 'xuanwu_runs_dir=%s' % (tmp_path / 'runs'), '-e', 'xuanwu_reports_dir=%s' % (tmp_path / 'reports'),
                    *(OFFLINE + extra))


@pytest.mark.both_controllers
def test_site_check_diff_takes_the_example_as_it_is(tmp_path):
    rc, out = site_plan(tmp_path, EXAMPLE, '-vvv')
    assert 'invalid inventory or profile' not in out and 'Traceback' not in out, out[-4000:]
    assert [line for line in out.splitlines() if '[WARNING]' in line] == []
    # the preflight: every node's xuanwu_* variables and its profile, the RoCE overrides applied
    preflight = out[out.index("TASK [Validate every host's inventory variables"):out.index('PLAY [Open the run record')]
    assert re.search(r'^\s+hosts: 12$', preflight, re.M), preflight
    assert dict((n, int(c)) for n, c in re.findall(r'profiles/([\w.-]+)\.yml: (\d+)', preflight)) == {'h200-sxm-8': 8, 'h100-sxm-8': 4}

    # the record of the plan (runs/<run id>/check/): every node in rack order, both profiles, the hostfile
    record = tmp_path / 'runs' / RUN / 'check'
    state = json.loads((record / 'state.json').read_text())
    assert state['check_mode'] is True and state['hosts'] == [name for name, _address in nodes()]
    assert sorted(os.listdir(str(record / 'profiles'))) == ['h100-sxm-8.yml', 'h200-sxm-8.yml']
    assert (record / 'hostfile').read_text().splitlines() == ['%s slots=8' % address for _name, address in nodes()]
    recorded = yaml.safe_load((record / 'inventory.yml').read_text())['hosts']
    known_hosts = os.path.join(EXAMPLE, 'known_hosts.txt')
    for name, _address in nodes():
        assert recorded[name]['ansible_ssh_common_args'] == '-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes' % known_hosts
    assert recorded['gpu-r03-n01.cluster.example.com']['xuanwu_profile_overrides']['infiniband']['link_layer'] == 'Ethernet'

    # the batches the plan announces are those of the example's xuanwu_serial (group_vars/all) in rack order, the
    # canary the first node of r01
    flat = ' '.join(out.split())
    announced = [hosts.split(', ') for _index, _size, hosts in re.findall(r'batch (\d+): (\d+) host\(s\) \(([^)]*)\)', flat)]
    assert announced and announced == example_batches()[:len(announced)], announced
    assert announced[0] == ['gpu-r01-n01.cluster.example.com']

    # nothing before the batch's reach check needs a node; there ssh is told to verify the canary's key against the
    # example's known_hosts.txt, and to refuse an unknown one
    assert out.index('ESTABLISH SSH CONNECTION') > out.index('TASK [Reach the node before anything of the batch needs it]')
    ssh = [line for line in out.splitlines() if 'SSH: EXEC ssh' in line and line.startswith('<10.20.1.11>')]
    assert ssh and all('-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes' % known_hosts in line for line in ssh), ssh
    assert 'StrictHostKeyChecking=no' not in out and 'accept-new' not in out
    assert 'fatal: [gpu-r01-n01.cluster.example.com]: UNREACHABLE!' in out

    # the canary cannot be reached (no such node): its batch is recorded, the canary unreachable with ssh's message,
    # the plan stops there with the rest of the nodes never reached, and the exit status is Ansible's for it, 4
    state = json.loads((record / 'state.json').read_text())
    canary = 'gpu-r01-n01.cluster.example.com'
    assert [b['hosts'] for b in state['batches']] == [[canary]], state
    entry = state['batches'][0]['outcomes'][canary]
    # ssh's own words, as the connection plugin reports them (ansible-core 2.16 says "Data could not be sent", 2.19
    # "Failed to connect to the host via ssh"); the ProxyCommand's refusal is in both
    assert entry['outcome'] == 'unreachable', entry
    assert any(words in entry['reasons'][0] for words in ('Failed to connect to the host via ssh', 'Data could not be sent to remote host'))
    assert 'kex_exchange_identification' in entry['reasons'][0] or 'Connection closed' in entry['reasons'][0], entry
    assert (state['outcome'], state['stopped_at_batch']) == ('stopped', 1), state
    assert state['not_run_hosts'] == [name for name, _address in nodes()][1:], state
    assert 'TASK [xuanwu.cluster.scheduler : Scheduler action on the node slurm plan]' not in out
    assert rc == 4, out[-4000:]


def _role_specs():
    """{role: its main entry point's options}, and {variable: role} of every variable a role declares."""
    specs, owner = {}, {}
    for role in sorted(os.listdir(os.path.join(ROOT, 'roles'))):
        path = os.path.join(ROOT, 'roles', role, 'meta', 'argument_specs.yml')
        if not os.path.isfile(path):
            continue
        with open(path) as handle:
            entries = yaml.safe_load(handle)['argument_specs']
        specs[role] = {}
        for entry in entries.values():
            for name, spec in (entry.get('options') or {}).items():
                specs[role].setdefault(name, spec)
                owner.setdefault(name, role)
    return specs, owner


def test_every_role_variable_of_the_example_is_declared_typed_and_consistent():
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _exporter_web
    specs, owner = _role_specs()
    prefixes = sorted(((role + '_', role) for role in specs), key=lambda pair: -len(pair[0]))
    variables = hostvars()
    assert list(variables) == [name for name, _address in nodes()]
    problems = []
    for host, hv in variables.items():
        # every variable with a role's prefix is one that role declares (a typo would be silently ignored), and its value
        # has the declared type, elements and choices (Ansible's own validator, as include_role runs it)
        by_role = {}
        for name, value in hv.items():
            role = owner.get(name) or next((r for prefix, r in prefixes if name.startswith(prefix)), None)
            if role and name not in specs[role]:
                problems.append('%s: %s is not a variable of the role %s' % (host, name, role))
            elif role:
                by_role.setdefault(role, {})[name] = value
        for role, provided in sorted(by_role.items()):
            spec = dict((n, dict(s, required=False)) for n, s in specs[role].items() if n in provided)
            result = ArgumentSpecValidator(spec).validate(provided)
            problems.extend('%s: %s' % (host, message) for message in result.error_messages)
        # what a rollout applies needs what its role requires
        if 'roce_qos' in hv.get('xuanwu_provision', []):
            assert hv.get('roce_qos_interfaces'), host
        # the exporters listen on the node's management address (the one Prometheus scrapes), never every interface,
        # and the firewall lets Prometheus reach exactly those ports
        for service, port in (('node_exporter', 9100), ('dcgm_exporter', 9400)):
            bind = _exporter_web.listen(hv['%s_listen_address' % service], '%s_listen_address' % service,
                                        hv['%s_port' % service], '%s_port' % service, allow_wildcard=False,
                                        allow_variable='%s_allow_wildcard' % service, host=host,
                                        inventory_address=hv['ansible_host'], host_addresses=[hv['ansible_host']])
            assert bind['listen'] == '%s:%d' % (hv['ansible_host'], port) and not bind['wildcard'], bind
        scrape = [rule for rule in hv['firewall_nftables_extra_input_rules'] if 'Prometheus' in rule]
        assert len(scrape) == 1 and '{ 9100, 9400 }' in scrape[0], scrape
        # the node is inside the subnets whose traffic the firewall lets through; the controller keeps SSH
        subnets = [ipaddress.ip_network(s) for s in hv['firewall_cluster_subnets']]
        assert any(ipaddress.ip_address(hv['ansible_host']) in net for net in subnets), host
        assert ipaddress.ip_address(hv['firewall_controller_address']) in ipaddress.ip_network(hv['firewall_ssh_sources'][0])
    assert problems == []

    # RoCE: what roce_qos sets is what the profile of those nodes requires
    roce = variables['gpu-r03-n01.cluster.example.com']
    wanted = roce['xuanwu_profile_overrides']['network']
    assert all(any(fnmatch.fnmatchcase(i, g) for g in wanted['roce']['interfaces']) for i in roce['roce_qos_interfaces'])
    assert roce['roce_qos_pfc_priorities'] == [wanted['roce']['pfc_priority']] == roce['roce_qos_ecn_priorities']
    assert roce['roce_qos_trust'] == wanted['roce']['trust'] and roce['roce_qos_ecn'] is wanted['roce']['ecn'] is True
    assert dict((int(k), v) for k, v in roce['roce_qos_dscp2prio'].items())[26] == wanted['roce']['pfc_priority']  # JSON keys
    assert [spec['mtu'] for spec in wanted['interfaces'].values()] == [roce['roce_qos_mtu']]

    # known_hosts.txt: one line per node, naming it by its inventory name and by the address ssh connects to
    with open(os.path.join(EXAMPLE, 'known_hosts.txt')) as handle:
        lines = [line.split() for line in handle if line.strip() and not line.startswith('#')]
    assert sorted(tuple(fields[0].split(',')) for fields in lines) == sorted(nodes())
    assert all(fields[1] == 'ssh-ed25519' and len(fields) == 3 for fields in lines)


def input_checks(tmp_path, folder, *extra):
    """The input checks of chrony and firewall (tasks/preflight.yml, which only read) for the example's nodes."""
    play = [{'name': 'Input checks of the roles a rollout applies', 'hosts': 'gpu_nodes', 'connection': 'local',
             'gather_facts': True, 'gather_subset': ['min'],
             'tasks': [{'name': 'Check the %s inputs' % role,
                        'ansible.builtin.include_role': {'name': 'xuanwu.cluster.%s' % role, 'tasks_from': 'preflight'}}
                       for role in ('chrony', 'firewall')]}]
    path = tmp_path / 'input-checks.yml'
    path.write_text(yaml.safe_dump(play))
    rc, out = playbook('-i', folder, str(path), '--check', *(LOCAL + extra))
    return rc, out, by_host(out), recap(out)


def test_the_roles_input_checks_pass_in_every_rack_and_refuse_a_subnet_that_is_none(tmp_path):
    # a node's role variables are those of its rack's groups (the test above compares every node's with the specs):
    # one node of each rack meets every combination
    one_a_rack = [name for name, _address in nodes() if name.startswith(('gpu-r01-n01.', 'gpu-r02-n04.', 'gpu-r03-n02.'))]
    rc, out, _texts, counts = input_checks(tmp_path, EXAMPLE, '--limit', ','.join(one_a_rack))
    assert rc == 0, out[-4000:]
    assert sorted(counts) == sorted(one_a_rack)
    assert all(c['failed'] == 0 and c['unreachable'] == 0 and c['ok'] > 10 for c in counts.values()), counts
    assert "TASK [xuanwu.cluster.firewall : Check that the rendered ruleset accepts the controller's SSH connection]" in out

    # the same files with one subnet mistyped (an octet missing): refused, naming the variable and the value
    copy = tmp_path / 'production-example'
    shutil.copytree(EXAMPLE, str(copy))
    firewall = copy / 'group_vars' / 'gpu_nodes' / 'firewall.yml'
    text = firewall.read_text()
    assert text.count('- 10.22.3.0/24 ') == 1
    firewall.write_text(text.replace('- 10.22.3.0/24 ', '- 10.22.3/24 '))
    host = 'gpu-r03-n04.cluster.example.com'
    rc, out, texts, counts = input_checks(tmp_path, str(copy), '--limit', host)
    assert rc != 0 and counts[host]['failed'] == 1, out[-3000:]
    assert 'firewall: firewall_cluster_subnets: "10.22.3/24" is not an IPv4 or IPv6 address or subnet' in texts[host]
    assert 'Nothing was changed.' in texts[host]


@pytest.mark.both_controllers
def test_a_mistyped_value_stops_site_yml_before_anything(tmp_path):
    """A copy of the example with the failure limit written as a share and a RoCE priority that does not exist: the
    preflight names both, for every node they reach, and the rollout neither opens a record nor connects."""
    copy = tmp_path / 'production-example'
    shutil.copytree(EXAMPLE, str(copy))
    for path, old, new in (('group_vars/all/rollout.yml', 'xuanwu_max_fail_percentage: 0\n', 'xuanwu_max_fail_percentage: 10%\n'),
                           ('group_vars/h100_roce.yml', 'pfc_priority: 3 ', 'pfc_priority: 8 ')):
        text = (copy / path).read_text()
        assert text.count(old) == 1, path
        (copy / path).write_text(text.replace(old, new))
    rc, out = site_plan(tmp_path, str(copy))
    assert rc != 0
    flat = ' '.join(out.split())
    for name, _address in nodes():
        problems = flat[flat.index('host %s: invalid inventory or profile, nothing was changed:' % name):]
        problems = problems[:problems.find(' host ', 1)]
        assert "variable 'xuanwu_max_fail_percentage' must be of type int" in problems and "'10%'" in problems, problems
        assert ('network.roce.pfc_priority' in problems) == name.startswith('gpu-r03-'), problems
    assert 'PLAY [Open the run record' not in out and 'PLAY [Roll out batch by batch]' not in out and 'UNREACHABLE' not in out
    assert not (tmp_path / 'runs').exists()


class GroupVarsAll(Cluster):
    """test_site_rollout.py's cluster of replayed nodes under the Slurm double, with the batches and the failure limit
    in group_vars/all beside the inventory, as the example has them, instead of on the command line."""

    def inventory(self):
        path = super(GroupVarsAll, self).inventory()
        (self.dir / 'group_vars').mkdir(exist_ok=True)
        (self.dir / 'group_vars' / 'all.yml').write_text(yaml.safe_dump({'xuanwu_serial': 2, 'xuanwu_max_fail_percentage': 50}))
        return path


@pytest.mark.both_controllers
def test_the_batches_and_the_failure_limit_of_group_vars_all_are_the_rollouts(tmp_path):
    """Ansible templates a play's serial and max_fail_percentage without any host's variables: the rollout reads them
    from localhost, which has group_vars/all. Batches of 2 (the default [1, "20%"] makes 1, 1, 1 of three hosts) and a
    limit of 50 % (the default 0 would stop after the first batch, 1 failed of 2): the rollout goes on to the last batch."""
    cluster = GroupVarsAll(tmp_path, ['node1', 'node2', 'node3'], faulty={'node2'})
    rc, out = cluster.run()
    assert rc == 2, out[-4000:]
    state = cluster.state()
    assert [b['hosts'] for b in state['batches']] == [['node1', 'node2'], ['node3']], state
    assert state['stopped_at_batch'] is None and state['held_drained'] == ['node2'], state
    assert latest(state)['node3']['outcome'] == 'passed'


def test_provision_yml_takes_the_batches_and_the_failure_limit_of_group_vars_all(tmp_path):
    """playbooks/provision.yml reads xuanwu_serial and xuanwu_max_fail_percentage from localhost as the rollout does, so
    the values of group_vars/all are used: batches of 2 (the default [1, "20%"] makes 1, 1, 1 of three hosts), and a
    limit of 50 % (the default 0 stops after the first batch, where node1's fact gathering fails: 1 of 2), so node3 is
    provisioned in a second batch."""
    (tmp_path / 'group_vars').mkdir()
    (tmp_path / 'group_vars' / 'all.yml').write_text(yaml.safe_dump({'xuanwu_serial': 2, 'xuanwu_max_fail_percentage': 50}))
    hosts = {'node1': {'ansible_python_interpreter': '/bin/false'}, 'node2': {}, 'node3': {}}
    inventory = tmp_path / 'inventory.yml'
    variables = {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}',
                 'xuanwu_profile': 'h200x4-nvlink', 'xuanwu_provision': []}
    inventory.write_text(yaml.safe_dump({'all': {'vars': variables, 'hosts': hosts}}))
    rc, out = playbook('-i', str(inventory), 'playbooks/provision.yml')
    assert rc == 2, out[-4000:]
    plays = out.split('PLAY [Provision the nodes in batches]')[1:]
    assert len(plays) == 2, out[-4000:]
    assert [sorted(set(re.findall(r'^(?:ok|fatal): \[(node\d)\]', play, re.M))) for play in plays] == [['node1', 'node2'], ['node3']]
    counts = recap(out)
    assert counts['node1']['failed'] == 1 and counts['node3']['failed'] == 0 and counts['node3']['ok'] >= 1, counts

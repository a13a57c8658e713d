"""The run record's pure helpers: redaction of inventory variables, the state of a rollout and its resume
decision, the atomic write of state.json, and the versions read from real node facts."""
import hashlib
import json
import os

import pytest
import yaml

from ansible_collections.xuanwu.cluster.plugins.module_utils import _probe
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _runrecord as rr

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
BUNDLES = {
    'h200x2': os.path.join(ROOT, 'tests', 'fixtures', 'hardware', 'h200x2-nvlink-bundle'),
    'demo-gpu-node01': os.path.join(ROOT, 'inventories', 'demo-bundles', 'gpu-node01'),
}

# (variables, the secrets that must not appear, values that must stay)
REDACTION_CASES = [
    pytest.param({'ansible_password': 'pw-1', 'ansible_user': 'ops'}, ['pw-1'], ['ops'], id='ansible_password'),
    pytest.param({'ansible_become_pass': 'bp-2', 'ansible_ssh_pass': 'sp-3', 'ansible_become_password': 'bp-4'},
                 ['bp-2', 'sp-3', 'bp-4'], [], id='become and ssh passwords'),
    pytest.param({'ansible_ssh_private_key_passphrase': 'pp-5', 'ansible_ssh_private_key_file': '/k/id'}, ['pp-5', '/k/id'], [],
                 id='key passphrase and private_key'),
    pytest.param({'site': {'proxies': [{'url': 'http://u:pp6@proxy:3128', 'api_key': 'ak-7'}], 'Credentials': {'x': 'c-8'}}},
                 ['pp6', 'ak-7', 'c-8'], ['proxy:3128'], id='nested: url password, api_key in a list, credential mapping'),
    pytest.param({'xuanwu_nccl_env': {'HF_TOKEN': 'tok-9', 'NCCL_SOCKET_IFNAME': 'eth0', 'WANDB_KEY': 'wk-10'},
                  'xuanwu_redact_env_keys': ['WANDB_KEY']},
                 ['tok-9', 'wk-10'], ['eth0'], id='env: secret keys and xuanwu_redact_env_keys'),
    pytest.param({'xuanwu_nccl_env': {'HF_TOKEN': 'tok-11'}, 'xuanwu_job_note': 'uses tok-11 for the hub'},
                 ['tok-11'], ['for the hub'], id='a secret value of the env copied into another variable'),
    pytest.param({'vault_db_secret': 'vs-12', 'db_passwd': 'dp-13', 'gh_token': 'gt-14'}, ['vs-12', 'dp-13', 'gt-14'], [],
                 id='secret|passwd|token in the name'),
]


@pytest.mark.parametrize('variables, secrets, kept', REDACTION_CASES)
def test_secrets_never_reach_the_written_inventory(variables, secrets, kept):
    shown, found = rr.redact_variables(variables)
    text = yaml.safe_dump(shown)
    for secret in secrets:
        assert secret not in text, (secret, text)
    for value in kept:
        assert value in text, (value, text)
    assert rr.MASK in text
    # every secret value is returned too, so that it is masked wherever else it appears (the command line)
    for secret in secrets:
        assert any(secret in value for value in found), (secret, found)


def test_non_secret_values_are_kept_as_they_are():
    variables = {'xuanwu_profile': 'h200x4-nvlink', 'xuanwu_multinode_slots': 8, 'xuanwu_check_variables': True,
                 'ansible_host': '10.0.0.3', 'xuanwu_profile_overrides': {'gpu': {'count': 4}}, 'empty_password': ''}
    assert rr.redact_variables(variables)[0] == variables


class FakeVaultValue(str):
    """Stands in for a vault-encrypted value: reading its text would decrypt it."""
    __ENCRYPTED__ = True

    def __str__(self):
        raise AssertionError('the vault value was read')


def test_a_vault_value_is_masked_without_being_read():
    shown, _found = rr.redact_variables({'xuanwu_job_note': FakeVaultValue('x'), 'nested': {'v': FakeVaultValue('y')}})
    assert shown == {'xuanwu_job_note': rr.MASK, 'nested': {'v': rr.MASK}}


@pytest.mark.parametrize('line, secret', [
    ('ansible-playbook site.yml -e ansible_password=cl-1 -e xuanwu_run_id=r1', 'cl-1'),
    ('ansible-playbook site.yml --extra-vars {"api_token": "cl-2"}', 'cl-2'),
    ('ansible-playbook site.yml -e https_proxy=http://u:cl-3@p:3128', 'cl-3'),
])
def test_the_command_line_and_the_log_are_masked(line, secret):
    text = rr.redact_free_text(line)
    assert secret not in text and 'site.yml' in text


@pytest.mark.parametrize('argv, expected', [
    (['-i', 'inv.yml', 'site.yml', '-e', 'x=1'], ['site.yml']),
    (['--inventory', 'hosts.yaml', '-b', '--limit', 'a.yml', 'a.yml', 'b.yml'], ['a.yml', 'b.yml']),
    (['-i', 'inv.yml', '-e@vars.yml'], None),
])
def test_the_playbooks_of_a_command_line(argv, expected):
    assert rr.playbooks_of(argv) == expected


def test_nccl_env_groups_hosts_with_the_same_environment():
    text = rr.env_text({'b': {'X': '1'}, 'a': {'X': '1'}, 'c': {'X': '2'}, 'd': None})
    assert text == '# hosts: a, b\nX=1\n\n# hosts: c\nX=2\n'
    assert rr.env_text({}).startswith('#')


@pytest.mark.parametrize('configured, gpus, expected', [(8, 4, 8), (None, 4, 4), (None, None, 1), ('x', None, 1), (True, 2, 2), (0, None, 1)])
def test_hostfile_slots(configured, gpus, expected):
    assert rr.slots(configured, gpus) == expected


def state_with(*batches):
    state = rr.new_state('r1', 't0', ['a', 'b', 'c', 'd'])
    for index, outcomes in enumerate(batches):
        state = rr.add_batch(state, index, list(outcomes), outcomes, 't%d' % index, 't%d' % (index + 1))
    return state


# (batches of outcomes, redo, the hosts that remain)
RESUME_CASES = [
    pytest.param([], False, ['a', 'b', 'c', 'd'], id='nothing done'),
    pytest.param([{'a': 'passed'}], False, ['b', 'c', 'd'], id='canary passed'),
    pytest.param([{'a': 'passed'}, {'b': 'failed', 'c': 'passed'}], False, ['b', 'd'], id='a failed host is done again'),
    pytest.param([{'a': 'failed'}, {'a': 'passed'}], False, ['b', 'c', 'd'], id='the latest outcome wins'),
    pytest.param([{'a': 'passed'}, {'a': 'failed'}], False, ['a', 'b', 'c', 'd'], id='passed then failed remains'),
    pytest.param([{'a': 'reboot_required', 'b': 'not_ours', 'c': 'unreachable'}], False, ['a', 'b', 'c', 'd'], id='not passed remains'),
    pytest.param([{'a': 'passed', 'b': 'passed'}], True, ['a', 'b', 'c', 'd'], id='redo includes finished hosts'),
]


@pytest.mark.parametrize('batches, redo, expected', RESUME_CASES)
def test_the_resume_decision(batches, redo, expected):
    assert rr.remaining(state_with(*batches), ['a', 'b', 'c', 'd'], redo=redo) == expected


def test_no_state_means_every_host_remains():
    assert rr.remaining(None, ['x', 'y']) == ['x', 'y']


def test_progress_names_done_and_failed_hosts_and_counts_each_batch():
    state = state_with({'a': 'passed'}, {'b': 'failed', 'c': 'unreachable', 'd': 'reboot_required'})
    got = rr.progress(state)
    assert got['done_hosts'] == ['a'] and got['failed_hosts'] == ['b', 'c']
    assert [b['counts'] for b in got['batches']] == [{'passed': 1}, {'failed': 1, 'unreachable': 1, 'reboot_required': 1}]


@pytest.mark.parametrize('hosts, outcomes, message', [
    (['a', 'b'], {'a': {'outcome': 'passed'}}, 'no outcome for host(s) of the batch: b'),
    (['a'], {'a': {'outcome': 'ok'}}, "outcome of a is 'ok'; expected one of passed, failed"),
    (['a'], {'a': {'outcome': 'failed', 'reasons': 'x'}}, 'reasons and failed_checks of a must be lists'),
    (['a'], ['a'], 'outcomes must be a mapping'),
])
def test_bad_outcomes_are_named(hosts, outcomes, message):
    with pytest.raises(rr.RecordError, match=message.replace('(', r'\(').replace(')', r'\)')):
        rr.add_batch(rr.new_state('r', 't', hosts), 0, hosts, outcomes, 't', 't')


@pytest.mark.parametrize('batches, stopped, outcome, at, not_run', [
    ([{'a': 'passed', 'b': 'passed', 'c': 'passed', 'd': 'passed'}], None, 'passed', None, []),
    ([{'a': 'passed', 'b': 'passed', 'c': 'passed', 'd': 'failed'}], None, 'failed', None, []),
    # hosts no batch reached and no stop: the run has not ended (after a batch, or killed before the next one)
    ([{'a': 'passed'}, {'b': 'failed', 'c': 'failed'}], None, 'interrupted', None, ['d']),
    ([{'a': 'failed'}], 0, 'stopped', 0, ['b', 'c', 'd']),
    ([], None, 'failed', None, ['a', 'b', 'c', 'd']),
    # someone else's drain, left as it was, is no failure of the run
    ([{'a': 'passed', 'b': 'not_ours'}, {'c': 'passed', 'd': 'passed'}], None, 'passed', None, []),
    ([{'a': 'passed', 'b': 'not_ours'}, {'c': 'reboot_required', 'd': 'passed'}], None, 'failed', None, []),
])
def test_the_outcome_of_the_run(batches, stopped, outcome, at, not_run):
    done = rr.finish(state_with(*batches), 'tz', stopped)
    assert (done['outcome'], done['stopped_at_batch'], done['not_run_hosts'], done['finished']) == (outcome, at, not_run, 'tz')


def test_an_interrupted_run_names_the_nodes_it_holds_drained_until_a_resume_finishes():
    interrupted = rr.finish(state_with({'a': 'passed', 'b': 'failed'}, {'c': 'reboot_required'}), 't1')
    assert interrupted['outcome'] == 'interrupted' and interrupted['held_drained'] == ['b', 'c'] and interrupted['not_run_hosts'] == ['d']
    # the resume redoes b and c, reaches d: the run has ended, passed, holding nothing
    resumed = rr.finish(state_with({'a': 'passed', 'b': 'failed'}, {'c': 'reboot_required'}, {'b': 'passed', 'c': 'passed', 'd': 'not_ours'}), 't2')
    assert (resumed['outcome'], resumed['held_drained'], resumed['not_ours_hosts']) == ('passed', [], ['d'])


def test_a_batch_killed_after_its_drain_began_is_named_held_drained_until_its_outcome_is_written():
    # the canary passed; batch 1 wrote its intent (b, c) and the run was killed before their outcome
    state = rr.begin_drain(state_with({'a': 'passed'}), 1, ['b', 'c'], 't1')
    killed = rr.finish(state, 't1')
    assert (killed['outcome'], killed['held_drained'], killed['drain_in_progress']) == ('interrupted', ['b', 'c'], ['b', 'c'])
    # killed during the first batch's drain: interrupted (not "failed, no batch ran"), the canary named
    first = rr.finish(rr.begin_drain(state_with(), 0, ['a'], 't0'), 't0')
    assert (first['outcome'], first['held_drained'], first['not_run_hosts']) == ('interrupted', ['a'], ['a', 'b', 'c', 'd'])
    # the resume writes their outcomes: what the outcome says replaces the intent
    resumed = rr.add_batch(state, 1, ['b', 'c'], {'b': 'passed', 'c': 'failed'}, 't1', 't2')
    assert resumed['draining'] == {}
    done = rr.finish(rr.add_batch(resumed, 2, ['d'], {'d': 'passed'}, 't2', 't3'), 't3')
    assert (done['outcome'], done['held_drained'], done['drain_in_progress']) == ('failed', ['c'], [])
    with pytest.raises(rr.RecordError, match='index of the batch'):
        rr.begin_drain(state_with(), None, ['a'], 't0')


@pytest.mark.parametrize('state, message', [
    ([], 'not a run state'),
    ({'schema_version': 9, 'batches': []}, 'schema_version 9, expected 1'),
    ({'schema_version': 1, 'batches': [{'index': 0}]}, 'batches must be a list of objects with outcomes'),
])
def test_a_bad_state_file_is_named(state, message):
    with pytest.raises(rr.RecordError, match=message):
        rr.check_state(state, 'runs/r1/state.json')


def test_the_atomic_write_replaces_the_file_whole(tmp_path):
    path = str(tmp_path / 'state.json')
    rr.write_atomic(path, rr.dump_json(state_with({'a': 'passed'})))
    assert oct(os.stat(path).st_mode & 0o777) == oct(rr.FILE_MODE)
    assert rr.check_state(rr.load_json(path, 'run state'), path)['batches'][0]['outcomes']['a']['outcome'] == 'passed'


def test_a_crash_during_the_write_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    path = str(tmp_path / 'state.json')
    old = rr.dump_json(state_with({'a': 'passed'}))
    rr.write_atomic(path, old)

    def crash(_fd):
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(rr.os, 'fsync', crash)
    with pytest.raises(OSError):
        rr.write_atomic(path, rr.dump_json(state_with({'a': 'passed'}, {'b': 'failed'})))
    assert open(path).read() == old
    assert os.listdir(str(tmp_path)) == ['state.json']


def test_an_unreadable_state_is_a_record_error(tmp_path):
    path = tmp_path / 'state.json'
    path.write_text('{"schema_version": 1, "batc')
    with pytest.raises(rr.RecordError, match='is not valid JSON'):
        rr.load_json(str(path), 'run state')
    with pytest.raises(rr.RecordError, match='cannot read run state'):
        rr.load_json(str(tmp_path / 'none.json'), 'run state')


@pytest.mark.parametrize('bundle', sorted(BUNDLES))
def test_versions_come_from_real_facts(bundle):
    facts = json.loads(json.dumps(_probe.probe(_probe.ReplayRunner(BUNDLES[bundle]))))
    got = rr.versions(facts)
    assert got['gpu_driver'] == facts['software']['driver_version'] == '580.159.04'
    assert got['cuda_driver'] == facts['software']['cuda_driver_version'] == '13.0'
    assert got['nccl'] == facts['software']['nccl_version'] and got['nccl']
    assert got['kernel'] == facts['host']['kernel']['release'] == '6.18.44-fc-v657-gpu'
    assert got['gpu_kernel_module'] == (facts['gpu'].get('kernel_module') or {}).get('version')
    # the probes read no OFED/rdma-core version: unknown, never invented
    assert got['ofed'] is None
    cas = facts['infiniband'].get('cas') or {}
    assert got['hca_firmware'] == (dict((n, c['firmware']) for n, c in sorted(cas.items())) if cas else None)


def test_versions_of_a_node_not_probed_are_all_unknown():
    assert set(rr.versions(None).values()) == {None}
    assert set(rr.versions({'software': {'driver_version': ''}, 'gpu': {'installed': False}}).values()) == {None}


def test_venv_locks_hash_the_requirements_file(tmp_path):
    req = tmp_path / 'req.txt'
    req.write_bytes(b'six==1.16.0 --hash=sha256:00\n')

    def read(path):
        with open(path, 'rb') as handle:
            return handle.read()
    locks = rr.venv_locks([{'path': '/opt/a/', 'requirements': str(req)}, {'path': '/opt/b', 'requirements': str(tmp_path / 'gone')}], read)
    assert locks == {'/opt/a': hashlib.sha256(req.read_bytes()).hexdigest(), '/opt/b': None}
    assert rr.venv_locks([], read) is None and rr.venv_locks(None, read) is None


def test_secrets_as_sites_name_them_are_masked_by_name_and_then_by_value_everywhere():
    # the names of issue reports: none was masked before; each value is then masked wherever else it appears
    variables = {
        'db_pwd': 'pw-db-1', 'vault_pw': 'pw-vault-2', 'ldap_bind_pw': 'pw-ldap-3', 'slurm_jwt': 'eyJ.slurm.4',
        'munge_key': 'munge-5', 'ssh_key': '/secure/id_ed25519', 'site': {'apiKey': 'api-6', 'WANDB_KEY': 'wandb-7'},
        'ipmi_pwd': 'pw-ipmi-8',
        'ansible_ssh_common_args': '-o ProxyCommand="sshpass -p pw-jump-9 ssh -W %h:%p jump"',
        'xuanwu_torch_env': {'WANDB_KEY': 'wandb-7', 'HTTP_HEADER': 'Authorization: Bearer tok-abcdefgh-10'},
        'note': 'copied: pw-db-1 and munge-5 and tok-abcdefgh-10 and pw-jump-9',
        'ansible_host': '10.0.0.5', 'xuanwu_profile': 'h200x4-nvlink',
    }
    shown, secrets = rr.redact_variables(variables)
    text = json.dumps(shown)
    for value in ('pw-db-1', 'pw-vault-2', 'pw-ldap-3', 'eyJ.slurm.4', 'munge-5', 'id_ed25519', 'api-6', 'wandb-7', 'pw-ipmi-8',
                  'pw-jump-9', 'tok-abcdefgh-10'):
        assert value not in text, (value, text)
        assert any(value in s for s in secrets), value
    assert shown['note'] == 'copied: *** and *** and *** and ***'
    assert shown['ansible_ssh_common_args'] == '-o ProxyCommand="sshpass -p *** ssh -W %h:%p jump"'
    assert shown['ansible_host'] == '10.0.0.5' and shown['xuanwu_profile'] == 'h200x4-nvlink'
    # free text of the run (a command line, a log line) with the same secrets
    line = 'ansible-playbook -e db_pwd=pw-db-1 -e munge_key=munge-5 ... Authorization: Bearer tok-abcdefgh-10'
    assert rr.redact_free_text(line, secrets) == 'ansible-playbook -e db_pwd=*** -e munge_key=*** ... Authorization: Bearer ***'

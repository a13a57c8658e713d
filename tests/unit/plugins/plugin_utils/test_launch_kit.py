"""The launch kit of a validation that passed (plugins/plugin_utils/_launch_kit.py): the files of a pass, a partial pass
and none for a failed run; hostile values quoted or refused (proved by sourcing env.sh and running the scripts with
stand-in mpirun and python); secrets left out of every file; bash -n and shellcheck on the scripts."""
import json
import os
import shutil
import stat
import subprocess

import pytest
import yaml

from ansible_collections.xuanwu.cluster.plugins.module_utils import _probe
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _launch_kit as lk
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _runrecord as rr

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
BUNDLE = os.path.join(ROOT, 'inventories', 'demo-bundles', 'gpu-node01')
SCRIPTS = ('launch-mpirun.sh', 'launch-torchrun.sh')


@pytest.fixture(name='real_versions', scope='module')
def fixture_real_versions():
    """The versions of the demo's healthy node, read from its real capture as the action reads them."""
    return rr.versions(_probe.probe(_probe.ReplayRunner(BUNDLE)))


def node(address, versions, env=None, slots=4, stages=()):
    return {'address': address, 'slots': slots, 'versions': versions, 'env': env or {}, 'stages': list(stages)}


def write(kit, folder):
    """The kit's files as the action writes them (mode included)."""
    os.makedirs(folder)
    for name, (text, mode) in kit['files'].items():
        path = os.path.join(folder, name)
        with open(path, 'w', encoding='utf-8') as handle:
            handle.write(text)
        os.chmod(path, mode)
    return folder


def every_text(kit):
    return '\n'.join(text for text, _mode in kit['files'].values()) + json.dumps(kit['note'])


ENV = {'NCCL_SOCKET_IFNAME': 'eth0', 'NCCL_IB_HCA': '=mlx5_0:1,mlx5_3:1', 'NCCL_IB_GID_INDEX': 3, 'TORCH_NCCL_ASYNC_ERROR_HANDLING': '1'}


def test_a_pass_writes_every_file_of_the_kit(tmp_path, real_versions):
    nodes = {'gpu-node01': node('10.0.0.1', real_versions, ENV, stages=['ddp_smoke: ddp_smoke']),
             'gpu-node02': node('10.0.0.2', real_versions, ENV)}
    kit = lk.build('r1', ['gpu-node01', 'gpu-node02'], {}, nodes, {}, '2026-12-01T01:00:00Z')
    assert kit['written'] and kit['reason'] is None
    assert sorted(kit['files']) == sorted(lk.FILES)
    assert dict((n, m) for n, (_t, m) in kit['files'].items()) == {
        'hostfile': 0o644, 'env.sh': 0o644, 'versions.json': 0o644, 'kit.json': 0o644, 'launch-mpirun.sh': 0o755, 'launch-torchrun.sh': 0o755}
    text = dict((n, t) for n, (t, _m) in kit['files'].items())
    assert text['hostfile'].splitlines()[1:] == ['10.0.0.1 slots=4', '10.0.0.2 slots=4']
    assert [line for line in text['env.sh'].splitlines() if line.startswith('export ')] == [
        'export NCCL_IB_GID_INDEX=3', "export NCCL_IB_HCA='=mlx5_0:1,mlx5_3:1'", 'export NCCL_SOCKET_IFNAME=eth0',
        'export TORCH_NCCL_ASYNC_ERROR_HANDLING=1']
    versions = json.loads(text['versions.json'])
    assert versions['hosts']['gpu-node01']['gpu_driver'] == '580.159.04' and versions['differ'] == {}
    manifest = json.loads(text['kit.json'])
    assert manifest['partial'] is False and manifest['left_out_hosts'] == {}
    assert manifest['hosts'] == [{'host': 'gpu-node01', 'address': '10.0.0.1', 'slots': 4}, {'host': 'gpu-node02', 'address': '10.0.0.2', 'slots': 4}]
    assert manifest['launch'] == {'nnodes': 2, 'nproc_per_node': 4, 'np': 8, 'master_addr': '10.0.0.1', 'master_port': 29500,
                                  'rdzv_backend': 'c10d', 'rdzv_endpoint': '10.0.0.1:29500', 'rdzv_id': 'xuanwu-r1',
                                  'python': 'python3', 'mpirun': 'mpirun', 'mpirun_args': []}
    assert manifest['stages'] == {'gpu-node01': ['ddp_smoke: ddp_smoke'], 'gpu-node02': []}
    for name, entry in manifest['files'].items():
        assert entry['sha256'] == lk._digest(text[name]) and entry['mode'] == '%04o' % kit['files'][name][1]
    assert kit['note'] == {'schema_version': 1, 'run_id': 'r1', 'written_at': '2026-12-01T01:00:00Z', 'source': 'validate',
                           'written': True, 'reason': None, 'partial': False, 'hosts': ['gpu-node01', 'gpu-node02'],
                           'left_out_hosts': {}, 'kit': 'launch-kit'}
    folder = write(kit, str(tmp_path / 'kit'))
    for script in SCRIPTS:
        assert stat.S_IMODE(os.stat(os.path.join(folder, script)).st_mode) == 0o755
        assert subprocess.run(['bash', '-n', os.path.join(folder, script)], check=False).returncode == 0


@pytest.mark.skipif(shutil.which('shellcheck') is None, reason='shellcheck not installed')
@pytest.mark.parametrize('slots', [(4, 4), (4, 8)], ids=['same GPUs', 'different GPUs'])
def test_the_scripts_are_shellcheck_clean(tmp_path, real_versions, slots):
    hostile = dict(ENV, SITE_NOTE="it's $(touch pwned) `id` ${HOME} \\ \"q\"")
    nodes = {'a': node('10.0.0.1', real_versions, hostile, slots[0]), 'b': node('10.0.0.2', real_versions, hostile, slots[1])}
    kit = lk.build("r'$(x)`y`", ['a', 'b'], {}, nodes, {'mpirun_args': ['--mca', 'btl_tcp_if_include', 'eth0', '-x', 'A B']}, 't')
    folder = write(kit, str(tmp_path / 'kit'))
    proc = subprocess.run(['shellcheck', '-x', '-s', 'bash'] + list(SCRIPTS) + ['env.sh'], cwd=folder, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout


def test_a_partial_pass_writes_the_kit_of_the_hosts_that_passed(real_versions):
    nodes = {'gpu-node01': node('gpu-node01', real_versions, ENV), 'gpu-node03': node('10.0.0.3', real_versions, ENV, slots=8)}
    failed = {'gpu-node02': 'gpu-node02 FAILED 2 check(s):\n  [nvlink.width] gpu1<->gpu2: measured NV12'}
    kit = lk.build('r2', ['gpu-node01', 'gpu-node02', 'gpu-node03'], failed, nodes, {}, 't')
    assert kit['written'] and kit['note']['partial'] is True
    assert kit['note']['hosts'] == ['gpu-node01', 'gpu-node03']
    # the reason as one line
    assert kit['note']['left_out_hosts'] == {'gpu-node02': 'gpu-node02 FAILED 2 check(s): [nvlink.width] gpu1<->gpu2: measured NV12'}
    assert kit['files']['hostfile'][0].splitlines()[1:] == ['gpu-node01 slots=4', '10.0.0.3 slots=8']
    manifest = kit['manifest']
    assert manifest['partial'] and manifest['left_out_hosts'] == kit['note']['left_out_hosts']
    assert manifest['launch']['nproc_per_node'] is None and manifest['launch']['np'] == 12
    assert 'a partial pass' in kit['files']['env.sh'][0] and 'gpu-node02' not in kit['files']['hostfile'][0]


@pytest.mark.parametrize('hosts, failed, nodes, reason', [
    (['a', 'b'], {'a': 'a FAILED', 'b': 'b was not validated: unreachable'}, {}, 'no host passed the validation (2 host(s) left out'),
    ([], {}, {}, 'the run has no host'),
    (['a'], {}, {}, 'no host passed the validation (1 host(s) left out'),   # its results could not be read
    (['a'], {}, {'a': node('a b', {})}, 'no host passed'),   # an address that is no hostfile host
    (['a'], {}, {'a': node('a', {})}, None),
], ids=['every host failed', 'no host', 'results not read', 'bad address', 'one host passed'])
def test_a_failed_run_writes_no_kit_and_says_why(hosts, failed, nodes, reason):
    kit = lk.build('r3', hosts, failed, nodes, {}, 't')
    if reason is None:
        assert kit['written']
        return
    assert not kit['written'] and kit['files'] == {} and kit['manifest'] is None
    assert kit['reason'].startswith(reason), kit['reason']
    assert kit['note']['written'] is False and kit['note']['kit'] is None and kit['note']['reason'] == kit['reason']
    assert set(kit['note']['left_out_hosts']) == set(hosts)


@pytest.mark.parametrize('settings, words', [
    ({'master_port': 'abc'}, 'master_port "abc": a TCP port'),
    ({'master_port': 70000}, 'master_port "70000"'),
    ({'master_port': True}, 'master_port "True"'),
    ({'mpirun': 'mpirun\nrm -rf /'}, 'mpirun "mpirun\\nrm -rf /": a command name or path'),
    ({'python': ''}, 'python "": a command name'),
    ({'mpirun_args': '--mca btl tcp'}, 'mpirun_args: a list of arguments is expected'),
    ({'mpirun_args': ['--mca', 'x\x1b[2J']}, 'mpirun_args: an argument holds a control character'),
])
def test_launch_settings_that_cannot_be_written_mean_no_kit(settings, words):
    kit = lk.build('r4', ['a'], {}, {'a': node('a', {})}, settings, 't')
    assert not kit['written'] and words in kit['reason'], kit['reason']


HOSTILE = {
    'QUOTES': "it's \"quoted\"",
    'SUBST': '$(touch pwned) `touch pwned` ${HOME} $HOME',
    'GLOB': '* ? [a-z] ~ ; | & > <',
    'BACKSLASH': 'a\\b\\',
    'EMPTY': '',
    'UNICODE': 'h\u00e9llo \u4e2d\u6587',
    'SPACES': '  two  spaces  ',
}
REFUSED = {
    'NEWLINE': ('a\nexport EVIL=1', 'control character in the value'),
    'NUL': ('a\x00b', 'control character in the value'),
    'ESCAPE': ('\x1b]0;title\x07', 'control character in the value'),
    'RTL': ('safe\u202e', 'control character in the value'),
    'LINESEP': ('a\u2028b', 'control character in the value'),
    'lower_case': ('x', lk.ENV_NAME_WORDS),
    'A-B': ('x', lk.ENV_NAME_WORDS),
    '1ABC': ('x', lk.ENV_NAME_WORDS),
    'A B': ('x', lk.ENV_NAME_WORDS),
    'A\nB': ('x', lk.ENV_NAME_WORDS),
    'LIST': (['a'], 'not a string or a number'),
    'NONE': (None, 'not a string or a number'),
    'MASTER_PORT': ('1234', 'set by the launch scripts'),
}


def test_hostile_values_are_quoted_or_refused(tmp_path, real_versions):
    env = dict(HOSTILE)
    env.update((name, value) for name, (value, _reason) in REFUSED.items())
    hosts = ['n1', 'n2']
    kit = lk.build('run\n$(touch pwned)', hosts, {}, dict((h, node(h, real_versions, env)) for h in hosts), {}, 't')
    assert kit['written']
    manifest = kit['manifest']
    assert manifest['env'] == HOSTILE
    assert manifest['env_left_out'] == dict((lk.comment(name, 80), reason) for name, (_value, reason) in REFUSED.items())
    folder = write(kit, str(tmp_path / 'kit'))
    # env.sh sourced by bash gives exactly the values that passed, and runs nothing
    names = sorted(HOSTILE)
    proc = subprocess.run(['bash', '-c', '. ./env.sh && for n in %s; do printf "%%s\\0" "${!n}"; done' % ' '.join(names)],
                          cwd=folder, stdout=subprocess.PIPE, check=False)
    assert proc.returncode == 0
    assert proc.stdout.decode('utf-8').split('\0')[:-1] == [HOSTILE[n] for n in names]
    assert not os.path.exists(os.path.join(folder, 'pwned'))
    for text, _mode in kit['files'].values():
        assert 'export EVIL' not in text and '\x1b' not in text and '\u202e' not in text and '\x00' not in text
    for name in ('env.sh',) + SCRIPTS:
        # the run id's line break stays inside its comment
        assert '\n$(touch pwned)' not in kit['files'][name][0]
        assert subprocess.run(['bash', '-n', os.path.join(folder, name)], check=False).returncode == 0


SECRETS = ('hf_tok3n_abc', 'hunter2-pw', 'sesame-42', 'Zm9vOmJhcg', 'copied-7')


def test_secrets_are_left_out_of_every_file_and_named():
    env = {'HF_TOKEN': SECRETS[0], 'NCCL_SOCKET_IFNAME': 'eth0',
           'PROXY': 'http://ops:%s@proxy:3128' % SECRETS[1],         # a URL password
           'SITE_KEY_ID': SECRETS[2],                                  # named secret by xuanwu_redact_env_keys
           'HEADER': 'Authorization: Basic %s' % SECRETS[3],           # a credential the text announces
           'COPY': SECRETS[4],                                         # a secret of the run found elsewhere
           'VAULTED': rr.MASK,                                         # a vault value, never read
           'WANDB_API_KEY': 'k'}
    kit = lk.build('r5', ['a'], {}, {'a': node('a', {}, env)}, {}, 't', extra_secret_keys=['site_key_id'], secrets=[SECRETS[4]])
    assert kit['written']
    text = every_text(kit)
    for secret in SECRETS:
        assert secret not in text, secret
    assert kit['manifest']['env'] == {'NCCL_SOCKET_IFNAME': 'eth0'}
    assert kit['manifest']['env_left_out'] == {
        'COPY': 'value looks secret', 'HEADER': 'value looks secret', 'HF_TOKEN': 'secret name', 'PROXY': 'value looks secret',
        'SITE_KEY_ID': 'secret name', 'VAULTED': 'secret value (vault)', 'WANDB_API_KEY': 'secret name'}
    assert '# left out: HF_TOKEN (secret name)' in kit['files']['env.sh'][0]
    assert '-x HF_TOKEN' not in kit['files']['launch-mpirun.sh'][0]


def test_a_secret_in_a_failed_hosts_reason_is_masked():
    kit = lk.build('r6', ['a', 'b'], {'b': 'b: output said token=%s' % SECRETS[0]}, {'a': node('a', {})}, {}, 't', secrets=[SECRETS[0]])
    assert SECRETS[0] not in every_text(kit) and kit['note']['left_out_hosts']['b'] == 'b: output said token=***'


def test_variables_that_differ_between_hosts_are_not_exported(real_versions):
    newer = dict(real_versions, gpu_driver='580.178', hca_firmware={'mlx5_0': '28.40.1000'})
    nodes = {'a': node('a', real_versions, {'NCCL_SOCKET_IFNAME': 'eth0', 'NCCL_ALGO': 'Ring'}),
             'b': node('b', newer, {'NCCL_SOCKET_IFNAME': 'ens1', 'NCCL_ALGO': 'Ring', 'NCCL_PROTO': 'Simple'})}
    kit = lk.build('r7', ['a', 'b'], {}, nodes, {}, 't')
    assert kit['manifest']['env'] == {'NCCL_ALGO': 'Ring'}
    assert kit['manifest']['env_per_host'] == {'NCCL_PROTO': {'b': 'Simple'}, 'NCCL_SOCKET_IFNAME': {'a': 'eth0', 'b': 'ens1'}}
    assert '-x NCCL_SOCKET_IFNAME' not in kit['files']['launch-mpirun.sh'][0]
    versions = json.loads(kit['files']['versions.json'][0])
    assert versions['differ']['gpu_driver'] == [{'value': '580.159.04', 'hosts': ['a']}, {'value': '580.178', 'hosts': ['b']}]
    assert kit['manifest']['versions_differ'] == sorted(versions['differ'])
    assert 'gpu_driver' in versions['differ']


FAKE_MPIRUN = '''#!/usr/bin/env bash
# stands in for mpirun: records its arguments, then runs what follows them as rank 3 of 8 (local rank 1)
printf '%s\\n' "$@" > "$OUT/mpirun.args"
while [ "$1" != bash ]; do shift; done
OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=8 OMPI_COMM_WORLD_LOCAL_RANK=1 exec "$@"
'''
FAKE_PYTHON = '''#!/usr/bin/env bash
# stands in for python: records its arguments and the environment the training script would see
printf '%s\\n' "$@" > "$OUT/python.args"
printf '%s\\n' "RANK=${RANK:-}" "WORLD_SIZE=${WORLD_SIZE:-}" "LOCAL_RANK=${LOCAL_RANK:-}" "MASTER_ADDR=${MASTER_ADDR:-}" \\
    "MASTER_PORT=${MASTER_PORT:-}" "NCCL_IB_HCA=${NCCL_IB_HCA:-}" "SITE_NOTE=${SITE_NOTE:-}" > "$OUT/python.env"
'''


def fakes(tmp_path):
    out = tmp_path / 'out'
    out.mkdir()
    for name, text in (('mpirun', FAKE_MPIRUN), ('python', FAKE_PYTHON)):
        path = tmp_path / name
        path.write_text(text)
        path.chmod(0o755)
    return str(out), dict(os.environ, OUT=str(out), MPIRUN=str(tmp_path / 'mpirun'), PYTHON=str(tmp_path / 'python'))


def lines(path):
    with open(path) as handle:
        return handle.read().splitlines()


def test_launch_mpirun_runs_the_training_script_with_the_environment_that_passed(tmp_path, real_versions):
    env = dict(ENV, SITE_NOTE="it's $(x)")
    nodes = {'a': node('10.0.0.1', real_versions, env), 'b': node('10.0.0.2', real_versions, env)}
    kit = lk.build('r8', ['a', 'b'], {}, nodes, {'mpirun_args': ['--mca', 'pml', 'ucx'], 'master_port': '29600'}, 't')
    folder = write(kit, str(tmp_path / 'kit'))
    out, environ = fakes(tmp_path)
    proc = subprocess.run([os.path.join(folder, 'launch-mpirun.sh'), 'train.py', '--epochs', '2', 'a b'], env=environ,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout
    args = lines(os.path.join(out, 'mpirun.args'))
    args = [a for a in args if a != '--allow-run-as-root']   # added when the test runs as root
    assert args[:6] == ['--hostfile', os.path.join(folder, 'hostfile'), '-np', '8', '--bind-to', 'none']
    assert args[6:9] == ['--mca', 'pml', 'ucx']
    exported = [args[i + 1] for i, a in enumerate(args) if a == '-x']
    assert exported == sorted(env) + ['MASTER_ADDR', 'MASTER_PORT']
    assert lines(os.path.join(out, 'python.args')) == ['train.py', '--epochs', '2', 'a b']
    assert lines(os.path.join(out, 'python.env')) == ['RANK=3', 'WORLD_SIZE=8', 'LOCAL_RANK=1', 'MASTER_ADDR=10.0.0.1',
                                                      'MASTER_PORT=29600', 'NCCL_IB_HCA=' + ENV['NCCL_IB_HCA'], "SITE_NOTE=it's $(x)"]


def test_launch_torchrun_takes_the_settings_that_passed(tmp_path, real_versions):
    nodes = {'a': node('10.0.0.1', real_versions, ENV), 'b': node('10.0.0.2', real_versions, ENV)}
    folder = write(lk.build('r9', ['a', 'b'], {}, nodes, {}, 't'), str(tmp_path / 'kit'))
    out, environ = fakes(tmp_path)
    proc = subprocess.run([os.path.join(folder, 'launch-torchrun.sh'), 'train.py', '--lr', '0.1'], env=environ, check=False,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    assert proc.returncode == 0, proc.stdout
    assert lines(os.path.join(out, 'python.args')) == [
        '-m', 'torch.distributed.run', '--nnodes', '2', '--nproc-per-node', '4', '--rdzv-backend', 'c10d',
        '--rdzv-endpoint', '10.0.0.1:29500', '--rdzv-id', 'xuanwu-r9', 'train.py', '--lr', '0.1']
    assert 'NCCL_IB_HCA=' + ENV['NCCL_IB_HCA'] in lines(os.path.join(out, 'python.env'))
    # without the training script: the usage, exit 2
    proc = subprocess.run([os.path.join(folder, 'launch-torchrun.sh')], env=environ, check=False, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True)
    assert proc.returncode == 2 and 'usage:' in proc.stdout and 'TRAIN_SCRIPT' in proc.stdout


def test_launch_torchrun_of_one_host_is_standalone_and_of_mixed_hosts_asks_for_the_gpus(tmp_path, real_versions):
    out, environ = fakes(tmp_path)
    one = write(lk.build('r10', ['a'], {}, {'a': node('a', real_versions)}, {}, 't'), str(tmp_path / 'one'))
    assert subprocess.run([os.path.join(one, 'launch-torchrun.sh'), 't.py'], env=environ, check=False).returncode == 0
    assert lines(os.path.join(out, 'python.args')) == ['-m', 'torch.distributed.run', '--standalone', '--nproc-per-node', '4', 't.py']
    nodes = {'a': node('a', real_versions, slots=4), 'b': node('b', real_versions, slots=8)}
    mixed = write(lk.build('r11', ['a', 'b'], {}, nodes, {}, 't'), str(tmp_path / 'mixed'))
    proc = subprocess.run([os.path.join(mixed, 'launch-torchrun.sh'), 't.py'], env=environ, check=False, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True)
    assert proc.returncode == 2 and 'set NPROC_PER_NODE' in proc.stdout
    assert subprocess.run([os.path.join(mixed, 'launch-torchrun.sh'), 't.py'], env=dict(environ, NPROC_PER_NODE='8'),
                          check=False).returncode == 0


def test_torch_versions_and_stages_from_the_workload_results():
    workloads = [
        {'kind': 'nccl_tests', 'component': 'all_reduce_perf', 'exit_code': 0},
        {'kind': 'ddp_smoke', 'component': 'ddp_smoke', 'exit_code': 0,
         'result': {'cuda_available': True, 'device_count': 4, 'torch_nccl_version': '2.28.9', 'torch_version': '2.11.0'}},
        {'kind': 'not_measured', 'component': 'multinode all_reduce', 'exit_code': None, 'not_measured': 'no nccl-tests'},
        {'kind': 'torch_allreduce', 'component': 'allreduce_bench', 'exit_code': 1},
        {'kind': 'nccl_tests', 'component': 'all_gather_perf', 'exit_code': 0, 'not_applicable': 'one rank'},
    ]
    assert lk.torch_versions(workloads) == {'torch': '2.11.0', 'torch_nccl': '2.28.9'}
    assert lk.torch_versions([]) == {'torch': None, 'torch_nccl': None}
    assert lk.stages(workloads) == ['nccl_tests: all_reduce_perf', 'ddp_smoke: ddp_smoke']


def test_the_default_settings_are_the_roles_defaults():
    """What the kit launches with where the inventory sets nothing is what the validation's roles launched with."""
    defaults = {}
    for role in ('collectives_multinode', 'torch_workloads'):
        with open(os.path.join(ROOT, 'roles', role, 'defaults', 'main.yml')) as handle:
            defaults.update(yaml.safe_load(handle))
    assert lk.DEFAULT_SETTINGS == {'mpirun': defaults['xuanwu_mpirun'], 'mpirun_args': defaults['xuanwu_mpirun_args'],
                                   'master_port': defaults['xuanwu_torch_master_port'], 'python': defaults['xuanwu_torch_python']}


def test_an_ipv6_head_is_bracketed_in_the_rendezvous_endpoint():
    kit = lk.build('r12', ['a', 'b'], {}, {'a': node('fd00::1', {}), 'b': node('fd00::2', {})}, {}, 't')
    assert kit['manifest']['launch']['rdzv_endpoint'] == '[fd00::1]:29500'


def test_torchrun_runs_the_processes_the_torch_workloads_ran():
    """xuanwu_torch_nproc (a host without GPUs ran 2 processes on the CPU) sets --nproc-per-node; mpirun keeps the slots."""
    kit = lk.build('r13', ['a'], {}, {'a': dict(node('a', {}, slots=1), nproc=2)}, {}, 't')
    assert (kit['manifest']['launch']['nproc_per_node'], kit['manifest']['launch']['np']) == (2, 1)

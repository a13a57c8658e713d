"""The nvidia_container_toolkit role on this machine, without changing it: the preflight refusals (check mode),
and the engine step (tasks_from=runtimes) against configuration files in a temporary folder, with the stand-in
nvidia-ctk of the molecule scenario (tests/fixtures/standin-debs/nvidia-ctk.py, a test double of NVIDIA's
program). The whole role (repository, packages, containerd, CDI, restarts) runs in molecule/container_toolkit."""
import json
import os
import re
import shutil
import sys

import pytest
import yaml

from test_validate_playbook import ROOT, playbook

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')

STANDIN = os.path.join(ROOT, 'tests', 'fixtures', 'standin-debs', 'nvidia-ctk.py')


def run_role(tmp_path, tasks_from, *extra, **role_vars):
    play = [{'name': 'Container toolkit', 'hosts': 'all', 'gather_facts': False,
             'tasks': [{'name': 'Apply the role', 'ansible.builtin.include_role': {
                 'name': 'xuanwu.cluster.nvidia_container_toolkit', 'tasks_from': tasks_from}},
                 {'name': 'Show the engines changed', 'ansible.builtin.debug': {
                     'msg': 'CHANGED={{ nvidia_container_toolkit_runtimes_changed | default("unset") | to_json }}'}}]}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play))
    inv = {'all': {'hosts': {'node01': {}}, 'vars': dict({'ansible_connection': 'local',
                                                          'ansible_python_interpreter': sys.executable}, **role_vars)}}
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inv))
    return playbook('-i', str(tmp_path / 'inventory.yml'), str(tmp_path / 'play.yml'), *extra)


def flat(out):
    """The output on one line; ansible-core 2.16's YAML callback doubles single quotes inside messages."""
    return ' '.join(out.split()).replace("''", "'")


@pytest.mark.parametrize('role_vars, message', [
    ({'nvidia_container_toolkit_version': '1.17.8'},
     'Refusing NVIDIA Container Toolkit 1.17.8: the oldest release this role installs is 1.18.0'),
    ({'nvidia_container_toolkit_version': '1.16.1'},
     'before 1.17.4 also CVE-2025-23359'),
    ({'nvidia_container_toolkit_version': '1.20.0-1'},
     "nvidia_container_toolkit_version must be a release such as \"1.20.0\" (got '1.20.0-1'; the package revision goes to"),
    ({'nvidia_container_toolkit_runtimes': ['docker', 'docker']},
     'nvidia_container_toolkit_runtimes names each of docker, containerd, crio at most once'),
    ({'nvidia_container_toolkit_cdi_generate_args': ['--output=/tmp/x.yaml']},
     'nvidia_container_toolkit_cdi_generate_args must not set --output'),
    ({'nvidia_container_toolkit_cdi_spec_path': 'cdi/nvidia.yaml'},
     "an absolute path ending in .yaml or .json, got 'cdi/nvidia.yaml'"),
])
def test_preflight_refuses_bad_input(tmp_path, role_vars, message):
    rc, out = run_role(tmp_path, 'preflight', '--check', **role_vars)
    assert rc != 0
    assert message in flat(out), out[-3000:]


def test_an_unknown_engine_is_refused_by_the_argument_spec(tmp_path):
    rc, out = run_role(tmp_path, 'main', '--check', nvidia_container_toolkit_runtimes=['podman'])
    assert rc != 0
    assert 'value of nvidia_container_toolkit_runtimes must be one or more of: docker, containerd, crio. Got no match for: podman' in out, \
        out[-3000:]


def test_el_needs_a_repository_configured_by_other_means(tmp_path):
    facts = json.dumps({'ansible_os_family': 'RedHat', 'ansible_distribution': 'Rocky', 'ansible_distribution_version': '9.4',
                        'ansible_distribution_major_version': '9', 'ansible_architecture': 'x86_64'})
    rc, out = run_role(tmp_path, 'preflight', '--check', '-e', facts)
    assert rc != 0
    assert 'NVIDIA signs its repository metadata but not the packages' in flat(out), out[-3000:]
    assert 'set nvidia_container_toolkit_repo_manage: false' in flat(out)
    rc, out = run_role(tmp_path, 'preflight', '--check', '-e', facts, nvidia_container_toolkit_repo_manage=False)
    assert rc == 0, out[-3000:]


def test_a_supported_input_passes_the_preflight(tmp_path):
    rc, out = run_role(tmp_path, 'preflight', '--check', nvidia_container_toolkit_version='1.18.0',
                       nvidia_container_toolkit_runtimes=['docker', 'containerd', 'crio'])
    assert rc == 0, out[-3000:]


@pytest.fixture
def engines(tmp_path):
    """The stand-in nvidia-ctk (as the package installs it) and docker / cri-o files in tmp_path."""
    ctk = tmp_path / 'nvidia-ctk'
    with open(STANDIN) as handle:
        ctk.write_text('#!%s\n' % sys.executable + handle.read().replace('@VERSION@', '1.20.0'))
    ctk.chmod(0o755)
    (tmp_path / 'docker').mkdir()
    (tmp_path / 'docker' / 'daemon.json').write_text('{"log-driver": "journald"}\n')
    files = {'docker': {'config': str(tmp_path / 'docker' / 'daemon.json'), 'drop_in': '', 'unit': 'docker'},
             'crio': {'config': str(tmp_path / 'crio' / 'crio.conf'),
                      'drop_in': str(tmp_path / 'crio' / 'crio.conf.d' / '99-nvidia.toml'), 'unit': 'crio'}}
    override = json.dumps({'__nvidia_container_toolkit_ctk': str(ctk), '__nvidia_container_toolkit_engine_files': files})
    return tmp_path, files, override


def changed_engines(out):
    lines = [line for line in out.splitlines() if 'CHANGED=' in line]
    assert lines, out[-3000:]
    return json.loads(lines[-1].split('CHANGED=', 1)[1].rstrip('"').replace('\\"', '"'))


def test_engines_are_configured_only_when_their_files_differ(engines):
    tmp_path, files, override = engines
    role_vars = {'nvidia_container_toolkit_runtimes': ['docker', 'crio'], 'nvidia_container_toolkit_restart_engines': False,
                 'nvidia_container_toolkit_set_as_default': True}
    work = tmp_path / 'run'
    work.mkdir()
    rc, out = run_role(work, 'runtimes', '-e', override, **role_vars)
    assert rc == 0, out[-3000:]
    assert changed_engines(out) == ['docker', 'crio']
    daemon = json.loads((tmp_path / 'docker' / 'daemon.json').read_text())
    assert daemon['log-driver'] == 'journald', 'the engine\'s own settings are kept'
    assert daemon['runtimes']['nvidia']['path'] == 'nvidia-container-runtime'
    assert daemon['default-runtime'] == 'nvidia'
    assert 'runtime_path = "/usr/bin/nvidia-container-runtime"' in open(files['crio']['drop_in']).read()

    rc, out = run_role(work, 'runtimes', '-e', override, **role_vars)
    assert rc == 0, out[-3000:]
    assert changed_engines(out) == [], 'a second run must find nothing to change'
    assert 'changed=0' in out[out.rindex('PLAY RECAP'):]

    # One engine's file edited by hand: check mode names only that one and writes nothing.
    (tmp_path / 'docker' / 'daemon.json').write_text('{"log-driver": "journald"}')
    rc, out = run_role(work, 'runtimes', '--check', '-e', override, **role_vars)
    assert rc == 0, out[-3000:]
    assert changed_engines(out) == ['docker']
    assert 'Would run nvidia-ctk runtime configure --runtime=docker' in out
    assert (tmp_path / 'docker' / 'daemon.json').read_text() == '{"log-driver": "journald"}'
    assert 'changed=1' in out[out.rindex('PLAY RECAP'):]


def test_a_changed_option_reconfigures(engines):
    tmp_path, files, override = engines
    work = tmp_path / 'run'
    work.mkdir()
    base = {'nvidia_container_toolkit_runtimes': ['docker'], 'nvidia_container_toolkit_restart_engines': False}
    rc, out = run_role(work, 'runtimes', '-e', override, **base)
    assert rc == 0 and changed_engines(out) == ['docker'], out[-3000:]
    rc, out = run_role(work, 'runtimes', '-e', override, nvidia_container_toolkit_enable_cdi_in_runtimes=True, **base)
    assert rc == 0 and changed_engines(out) == ['docker'], out[-3000:]
    assert json.loads((tmp_path / 'docker' / 'daemon.json').read_text())['features'] == {'cdi': True}


GUIDE_LINE = 'deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /'


@pytest.fixture(scope='module')
def source_pattern(tmp_path_factory):
    """The pattern the role gives find (contains: Python's re.match on each line of the apt sources), for x86_64,
    rendered once."""
    tmp_path = tmp_path_factory.mktemp('pattern')
    load = {'name': 'xuanwu.cluster.nvidia_container_toolkit', 'tasks_from': 'preflight', 'public': True}
    write = {'content': '{{ __nvidia_container_toolkit_repo_url_regex }}', 'dest': str(tmp_path / 'regex.txt'), 'mode': '0600'}
    play = [{'name': 'Pattern', 'hosts': 'all', 'gather_facts': False, 'tasks': [
        {'name': 'Load the role', 'ansible.builtin.include_role': load},
        {'name': 'Write the pattern', 'ansible.builtin.copy': write}]}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play))
    inv = {'all': {'hosts': {'node01': {}}, 'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inv))
    rc, out = playbook('-i', str(tmp_path / 'inventory.yml'), str(tmp_path / 'play.yml'), '-e', 'ansible_architecture=x86_64')
    assert rc == 0, out[-3000:]
    return re.compile((tmp_path / 'regex.txt').read_text())


@pytest.mark.parametrize('line, conflict', [
    (GUIDE_LINE, True),                                                              # the install guide's list file
    ('URIs: https://nvidia.github.io/libnvidia-container/stable/deb/amd64', True),   # a deb822 source
    ('deb https://nvidia.github.io/libnvidia-container/stable/deb/amd64/ /', True),
    ('deb http://nvidia.github.io/libnvidia-container/stable/deb/amd64 /', True),
    ('#' + GUIDE_LINE, False),                                                       # commented out
    ('#deb https://nvidia.github.io/libnvidia-container/experimental/deb/$(ARCH) /', False),
    ('deb https://nvidia.github.io/libnvidia-container/experimental/deb/$(ARCH) /', False),   # another repository
    ('deb https://nvidia.github.io/libnvidia-container/stable/deb/amd64-extra /', False),
    ('deb https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/ /', False),
])
def test_other_sources_of_the_repository_are_recognised(source_pattern, line, conflict):
    assert bool(source_pattern.match(line)) is conflict, source_pattern.pattern

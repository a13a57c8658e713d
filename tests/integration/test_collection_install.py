"""The collection installed as a site installs it, with no Galaxy: docs/install/requirements.yml, unchanged, beside the
tarball of this checkout and tarballs of its dependencies (galaxy.yml) made from the copies installed here;
`ansible-galaxy collection install --offline -r requirements.yml -p collections` in that folder, as the file says. The
dependencies resolve from the tarballs; without them the install fails and names them. Then, with only that folder as
the collections path (no ansible.cfg, nothing from sys.path, a Galaxy server that refuses connections): a play of
xuanwu.cluster.ssh_trust and xuanwu.cluster.firewall by FQCN and the playbook xuanwu.cluster.validate pass the syntax
check, and ansible-doc finds every plugin of another collection that the code calls. Last, with ansible-builder:
`ansible-builder create` of docs/install/execution-environment.yml makes a build context whose galaxy stage, run
here as the Containerfile runs it, installs the same collections, and `ansible-builder introspect` of them lists the
Python and system needs of meta/execution-environment.yml."""
import json
import os
import shutil
import subprocess

import pytest
import yaml

from collection_artifact import INSTALL_DIR, ROOT, build, calls, galaxy_yml, installed, manifest, tarball, tool

pytestmark = pytest.mark.skipif(shutil.which('ansible-galaxy') is None or shutil.which('ansible-playbook') is None,
                                reason='ansible-galaxy and ansible-playbook not on PATH')
PLAY = """---
- name: SSH trust and the firewall, from the installed collection
  hosts: gpu_nodes
  gather_facts: false
  roles:
    - role: xuanwu.cluster.ssh_trust
    - role: xuanwu.cluster.firewall
"""


def run(argv, cwd, collections, timeout=120):
    """(returncode, output) of an Ansible command with only ``collections`` as its collections path: no ansible.cfg of
    the checkout or of the user, no collection from Python's sys.path, no reachable Galaxy server."""
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('ANSIBLE_'))
    config = os.path.join(str(cwd), 'ansible.cfg')
    if not os.path.exists(config):
        with open(config, 'w') as handle:
            handle.write('[defaults]\n')
    env.update(ANSIBLE_CONFIG=config, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_COLLECTIONS_SCAN_SYS_PATH='false',
               ANSIBLE_GALAXY_SERVER='http://127.0.0.1:9/', ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
               ANSIBLE_LOCAL_TEMP=os.path.join(str(cwd), '.ansible-tmp'), ANSIBLE_DEPRECATION_WARNINGS='false')
    proc = subprocess.run(argv, cwd=str(cwd), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=timeout, check=False)
    return proc.returncode, proc.stdout


def requirement_names(path):
    with open(path) as handle:
        return [entry['name'] for entry in yaml.safe_load(handle)['collections']]


@pytest.fixture(name='site', scope='module')
def fixture_site(tmp_path_factory):
    """A folder with docs/install/requirements.yml and the tarballs it names: {path, tarballs: {collection: version}}."""
    folder = tmp_path_factory.mktemp('site')
    shutil.copy(os.path.join(INSTALL_DIR, 'requirements.yml'), str(folder))
    made = [build(folder, shutil.which('ansible-galaxy'))]
    versions = {'xuanwu.cluster': galaxy_yml()['version']}
    for collection in sorted(galaxy_yml()['dependencies']):
        source = installed(collection)
        if source is None:
            pytest.skip('no installed copy of %s here (make setup installs the community bundle)' % collection)
        made.append(tarball(source, folder))
        versions[collection] = manifest(source)['version']
    names = requirement_names(os.path.join(str(folder), 'requirements.yml'))
    assert sorted(names) == sorted(os.path.basename(p) for p in made), \
        'docs/install/requirements.yml names %s; the tarballs of this release and of the tested dependencies are %s' \
        % (sorted(names), sorted(os.path.basename(p) for p in made))
    return {'path': folder, 'versions': versions}


@pytest.fixture(name='collections', scope='module')
def fixture_collections(site):
    """The collections folder of the documented offline install, made in the site's folder."""
    target = site['path'] / 'collections'
    rc, out = run(['ansible-galaxy', 'collection', 'install', '--offline', '-r', 'requirements.yml', '-p', 'collections'],
                  site['path'], target)
    assert rc == 0, out
    return target


def installed_versions(collections):
    found = {}
    base = os.path.join(str(collections), 'ansible_collections')
    for ns in sorted(os.listdir(base)):
        for name in sorted(os.listdir(os.path.join(base, ns))):
            found['%s.%s' % (ns, name)] = manifest(os.path.join(base, ns, name))['version']
    return found


@pytest.mark.both_controllers
def test_the_offline_install_takes_every_dependency_from_the_tarballs(site, collections):
    from ansible.galaxy.dependency_resolution.versioning import meets_requirements
    found = installed_versions(collections)
    assert found == site['versions']
    ours = os.path.join(str(collections), 'ansible_collections', 'xuanwu', 'cluster')
    dependencies = manifest(ours)['dependencies']
    assert sorted(dependencies) == sorted(galaxy_yml()['dependencies'])
    assert [c for c, spec in sorted(dependencies.items()) if not meets_requirements(found[c], spec)] == []
    assert not set(os.listdir(ours)) & set(['src', 'tests', 'requirements', 'ansible.cfg'])
    assert os.path.isfile(os.path.join(ours, 'meta', 'execution-environment.yml'))


@pytest.mark.both_controllers
def test_without_the_dependencies_the_offline_install_fails_and_names_them(site, tmp_path):
    shutil.copy(os.path.join(str(site['path']), 'xuanwu-cluster-%s.tar.gz' % site['versions']['xuanwu.cluster']), str(tmp_path))
    with open(os.path.join(str(tmp_path), 'requirements.yml'), 'w') as handle:
        yaml.safe_dump({'collections': [{'name': 'xuanwu-cluster-%s.tar.gz' % site['versions']['xuanwu.cluster'],
                                         'type': 'file'}]}, handle)
    rc, out = run(['ansible-galaxy', 'collection', 'install', '--offline', '-r', 'requirements.yml', '-p', 'collections'],
                  tmp_path, tmp_path / 'collections')
    assert rc != 0, out
    assert 'dependency of xuanwu.cluster' in out and any(c in out for c in galaxy_yml()['dependencies']), out
    assert not os.path.exists(os.path.join(str(tmp_path), 'collections', 'ansible_collections', 'xuanwu', 'cluster'))


@pytest.mark.both_controllers
def test_plays_by_fqcn_pass_the_syntax_check_with_the_install_alone(collections, tmp_path):
    (tmp_path / 'play.yml').write_text(PLAY)
    (tmp_path / 'hosts.yml').write_text('all:\n  children:\n    gpu_nodes:\n      hosts:\n        node1:\n')
    rc, out = run(['ansible-playbook', '--syntax-check', '-i', 'hosts.yml', 'play.yml'], tmp_path, collections)
    assert rc == 0, out
    rc, out = run(['ansible-playbook', '--syntax-check', '-i', 'hosts.yml', 'xuanwu.cluster.validate'], tmp_path, collections)
    assert rc == 0, out
    assert os.path.join('ansible_collections', 'xuanwu', 'cluster', 'playbooks', 'validate.yml') in out, out
    # the same play without community.crypto: the check does look for the modules the roles call
    partial = tmp_path / 'partial' / 'ansible_collections'
    for collection in installed_versions(collections):
        if collection != 'community.crypto':
            ns, name = collection.split('.')
            (partial / ns).mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.join(str(collections), 'ansible_collections', ns, name), str(partial / ns / name))
    rc, out = run(['ansible-playbook', '--syntax-check', '-i', 'hosts.yml', 'play.yml'], tmp_path, partial.parent)
    assert rc != 0 and 'community.crypto.openssh_keypair' in out, out


@pytest.mark.both_controllers
def test_every_plugin_of_another_collection_that_the_code_calls_is_in_the_install(collections, tmp_path):
    kinds = {}
    for name, call in sorted(calls().items()):
        if call['kind']:
            kinds.setdefault(call['kind'], []).append(name)
    assert kinds, 'no call of another collection found: the finder of tests/collection_artifact.py misses them'
    for kind, names in sorted(kinds.items()):
        rc, out = run(['ansible-doc', '--json', '-t', kind] + names, tmp_path, collections)
        assert rc == 0, out
        docs = json.loads(out[out.index('{'):])
        assert sorted(docs) == sorted(names), out


def test_ansible_builder_makes_an_execution_environment_of_the_tarballs(site, tmp_path):
    builder = tool('ansible-builder')
    if not builder:
        pytest.skip('no ansible-builder in this venv or on PATH (requirements/test.txt)')
    ee = tmp_path / 'ee'
    ee.mkdir()
    shutil.copy(os.path.join(INSTALL_DIR, 'execution-environment.yml'), str(ee))
    for name in os.listdir(str(site['path'])):
        if name.endswith('.tar.gz') or name == 'requirements.yml':
            shutil.copy(os.path.join(str(site['path']), name), str(ee))
    proc = subprocess.run([builder, 'create', '-f', 'execution-environment.yml', '-c', 'context'], cwd=str(ee),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout
    context = ee / 'context'
    with open(str(context / 'Containerfile')) as handle:
        containerfile = handle.read()
    assert 'ARG ANSIBLE_GALAXY_CLI_COLLECTION_OPTS="--offline"' in containerfile
    assert 'COPY _build /build' in containerfile and 'WORKDIR /build' in containerfile
    install = [line for line in containerfile.splitlines() if 'ansible-galaxy collection install' in line]
    assert len(install) == 1 and '-r requirements.yml' in install[0], install
    assert 'introspect.py introspect' in containerfile and '/output/scripts/assemble' in containerfile
    build_dir = context / '_build'
    with open(os.path.join(INSTALL_DIR, 'requirements.yml')) as mine, open(str(build_dir / 'requirements.yml')) as theirs:
        assert mine.read() == theirs.read()
    assert [n for n in requirement_names(str(build_dir / 'requirements.yml')) if not (build_dir / n).is_file()] == []
    # the galaxy stage as the Containerfile runs it (in /build, that is _build), then the builder stage's introspection
    target = tmp_path / 'usr-share-ansible-collections'
    rc, out = run(['ansible-galaxy', 'collection', 'install', '--offline', '-r', 'requirements.yml', '--collections-path',
                   str(target)], build_dir, target)
    assert rc == 0, out
    assert installed_versions(target) == site['versions']
    proc = subprocess.run([builder, 'introspect', '--sanitize', str(target)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout
    needs = yaml.safe_load(proc.stdout)
    for key, name in (('python', 'requirements.txt'), ('system', 'bindep.txt')):
        with open(os.path.join(ROOT, name)) as handle:
            wanted = [line.split('#')[0].strip() for line in handle if line.split('#')[0].strip()]
        assert wanted, name
        ours = [line.split('#')[0].strip() for line in needs[key] if line.endswith('# from collection xuanwu.cluster')]
        assert ours == wanted, (key, needs)

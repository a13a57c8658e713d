"""Integration: the nccl_tests_build role against localhost (ansible-playbook from PATH, connection local).

No GPU, CUDA toolkit, NCCL or MPI is needed: the source archive is the stand-in of
tests/fixtures/standin-nccl-tests (not nccl-tests; its Makefile checks the directories it is given
and writes shell scripts), and the CUDA toolkit, NCCL (a directory, or pip wheels' nvidia/nccl)
and OpenMPI are fake directories made here with the files the role looks for. Each test builds into
its own temporary prefix."""
import collections
import json
import os
import re
import shutil
import stat
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STANDIN = os.path.join(ROOT, 'tests', 'fixtures', 'standin-nccl-tests', 'make_archive.py')
VERSION = '0.0.0-standin'

# rc, the output, the nccl_tests_build_result fact (None when the play did not get that far), changed= of the PLAY RECAP.
Run = collections.namedtuple('Run', 'rc out result changed')

pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')

PLAYBOOK = [{
    'name': 'Build nccl-tests (test)',
    'hosts': 'all',
    'gather_facts': False,
    'tasks': [
        {'name': 'Build', 'ansible.builtin.include_role': {'name': 'xuanwu.cluster.nccl_tests_build'}},
        # Printed as JSON (ANSIBLE_CALLBACK_RESULT_FORMAT=json below) and read back from the output.
        {'name': 'Show the result', 'ansible.builtin.debug': {'msg': '{{ nccl_tests_build_result | to_json }}'}},
        {'name': 'Show what was unpacked', 'ansible.builtin.debug': {'msg': "UNPACKED-SRC={{ __nccl_tests_build_unpacked.src | default('none') }}"}},
    ],
}]


def write(path, text='', mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(text)
    os.chmod(path, mode)


def nccl_header(version):
    major, minor, patch = version.split('.')
    return ('#ifndef NCCL_H_\n#define NCCL_H_\n#define NCCL_MAJOR %s\n#define NCCL_MINOR %s\n#define NCCL_PATCH %s\n'
            '#define NCCL_SUFFIX ""\n#endif\n' % (major, minor, patch))


def fake_nccl(home, version):
    """NCCL as a pip wheel ships it: include/nccl.h and lib/libnccl.so.2 only (no libnccl.so)."""
    write(os.path.join(home, 'include', 'nccl.h'), nccl_header(version))
    write(os.path.join(home, 'lib', 'libnccl.so.2'), 'not a library\n')
    return home


class Site(object):
    """A temporary directory with a fake CUDA toolkit and NCCL, the stand-in archive and an inventory."""

    def __init__(self, tmp_path):
        self.tmp = str(tmp_path)
        self.prefix = os.path.join(self.tmp, 'prefix')
        self.cuda = os.path.join(self.tmp, 'cuda-12.4')
        # nvcc --version as CUDA 12.4 prints it.
        write(os.path.join(self.cuda, 'bin', 'nvcc'),
              '#!/bin/sh\necho "nvcc: NVIDIA (R) Cuda compiler driver"\necho "Copyright (c) 2005-2024 NVIDIA Corporation"\n'
              'echo "Built on Thu_Mar_28_02:18:24_PDT_2024"\necho "Cuda compilation tools, release 12.4, V12.4.131"\n'
              'echo "Build cuda_12.4.r12.4/compiler.34097967_0"\n', 0o755)
        write(os.path.join(self.cuda, 'include', 'cuda_runtime.h'))
        write(os.path.join(self.cuda, 'lib64', 'libcudart.so.12'))
        self.nccl = fake_nccl(os.path.join(self.tmp, 'nccl'), '2.21.5')
        self.archive = os.path.join(self.tmp, 'files', 'nccl-tests-%s.tar.gz' % VERSION)
        os.makedirs(os.path.dirname(self.archive))
        self.sha256 = subprocess.check_output([sys.executable, STANDIN, self.archive, '--version', VERSION],
                                              universal_newlines=True).strip()
        self.inventory = os.path.join(self.tmp, 'inventory.yml')
        with open(self.inventory, 'w') as handle:
            yaml.safe_dump({'all': {'hosts': {'localhost': {'ansible_connection': 'local',
                                                            'ansible_python_interpreter': sys.executable}}}}, handle)
        self.playbook = os.path.join(self.tmp, 'play.yml')
        with open(self.playbook, 'w') as handle:
            yaml.safe_dump(PLAYBOOK, handle, sort_keys=False)
        self.runs = 0

    def vars(self, **overrides):
        base = {
            'nccl_tests_build_version': VERSION,
            # Relative: found next to the inventory, as an air-gapped site keeps it.
            'nccl_tests_build_archive': 'files/nccl-tests-%s.tar.gz' % VERSION,
            'nccl_tests_build_sha256': self.sha256,
            'nccl_tests_build_prefix': self.prefix,
            'nccl_tests_build_cuda_home': self.cuda,
            'nccl_tests_build_nccl_home': self.nccl,
            'nccl_tests_build_mpi': False,
            'nccl_tests_build_make_jobs': 2,
        }
        base.update(overrides)
        return base

    def play(self, check=False, path_prepend=None, cli=(), **overrides):
        """Run the playbook with the site's variables, these overrides and ``cli`` (more arguments); return a Run."""
        self.runs += 1
        extra = os.path.join(self.tmp, 'vars-%d.json' % self.runs)
        with open(extra, 'w') as handle:
            json.dump(self.vars(**overrides), handle)
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
                   ANSIBLE_CACHE_PLUGIN='memory', ANSIBLE_RETRY_FILES_ENABLED='0', ANSIBLE_PIPELINING='1',
                   ANSIBLE_CALLBACK_RESULT_FORMAT='json')
        if path_prepend:
            env['PATH'] = path_prepend + os.pathsep + env['PATH']
        args = ['ansible-playbook', '-i', self.inventory, self.playbook, '-e', '@' + extra] + list(cli) + (['--check'] if check else [])
        proc = subprocess.run(args, cwd=self.tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=240, check=False)
        out = proc.stdout
        shown = re.search(r'^TASK \[Show the result\].*?^ok: \[localhost\] => (\{.*?^\})$', out, re.M | re.S)
        result = json.loads(json.loads(shown.group(1))['msg']) if shown else None
        recap = re.search(r'^localhost\s*:.*\bchanged=(\d+)', out[out.rfind('PLAY RECAP'):], re.M)
        return Run(proc.returncode, out, result, int(recap.group(1)) if recap else None)

    def build_dirs(self):
        return sorted(d for d in os.listdir(self.prefix) if not d.startswith('.') and d != 'current') \
            if os.path.isdir(self.prefix) else []


def flat(text):
    """The output with every run of whitespace made one blank (the callback wraps long messages)."""
    return ' '.join(text.split())


def assert_unpacked_from_the_private_copy(site, out, result):
    """What the role unpacked is the verified copy in its private build directory, never the archive itself."""
    unpacked = re.search(r'UNPACKED-SRC=([^\s"\']+)', out).group(1)
    private = r'%s/\.build/localhost-%s-%s\.\w{8}' % (re.escape(site.prefix), re.escape(VERSION), result['build_id'])
    assert re.match(private + r'/nccl-tests-%s-%s\.tar\.gz$' % (re.escape(VERSION), site.sha256[:12]), unpacked), unpacked
    assert os.listdir(os.path.join(site.prefix, '.build')) == []


def run_binary(path):
    return subprocess.check_output([path], universal_newlines=True).strip()


def read_info(result):
    with open(result['info_file']) as handle:
        return json.load(handle)


@pytest.fixture
def site(tmp_path):
    return Site(tmp_path)


# newest controller only: a role's build, idempotence and check mode on ansible-core 2.16 are test_scheduler_role.py's
# (test_drain_then_resume_round_trip, test_check_mode_changes_nothing)
def test_builds_into_the_versioned_prefix_then_changes_nothing(site):
    rc, out, result, changed = site.play()
    assert rc == 0, out[-5000:]
    assert changed > 0
    # The fact.
    assert re.match(r'^[0-9a-f]{12}$', result['build_id'])
    install = os.path.join(site.prefix, '%s-%s' % (VERSION, result['build_id']))
    assert result['install_dir'] == install
    assert result['bin_dir'] == os.path.join(install, 'bin')
    assert result['info_file'] == os.path.join(install, 'build-info.json')
    assert result['version'] == VERSION and result['mpi'] is False and result['built'] is True
    # The fake NCCL has only libnccl.so.2: the binaries need its lib directory at run time, then the CUDA runtime's.
    assert result['ld_library_path'] == os.path.join(site.nccl, 'lib') + ':' + os.path.join(site.cuda, 'lib64')
    # The install.
    assert os.path.realpath(os.path.join(site.prefix, 'current')) == install
    binaries = sorted(os.listdir(result['bin_dir']))
    assert 'all_reduce_perf' in binaries and all(b.endswith('_perf') for b in binaries) and len(binaries) == 10
    assert os.stat(os.path.join(result['bin_dir'], 'all_reduce_perf')).st_mode & stat.S_IXUSR
    line = run_binary(os.path.join(result['bin_dir'], 'all_reduce_perf'))
    assert line.startswith('stand-in all_reduce_perf, not nccl-tests: built with MPI=0 CUDA_HOME=%s NCCL_HOME=' % site.cuda)
    # NCCL_HOME was a shim with lib/libnccl.so (the stand-in's make fails without it), inside the per-host build directory.
    assert re.search(r'NCCL_HOME=%s/\.build/localhost-%s-%s\.\w{8}/nccl ' % (re.escape(site.prefix), re.escape(VERSION), result['build_id']), line)
    info = read_info(result)
    assert info['version'] == VERSION and info['build_id'] == result['build_id']
    assert info['archive_sha256'] == site.sha256
    assert info['cuda_home'] == site.cuda and info['cuda_version'] == '12.4.131'
    assert info['nccl_home'] == site.nccl and info['nccl_version'] == '2.21.5' and info['nccl_source'] == 'path'
    assert info['nccl_lib_dir'] == os.path.join(site.nccl, 'lib') and info['nccl_shim'] is True
    assert info['ld_library_path'] == result['ld_library_path']
    assert info['mpi'] is False and info['mpi_home'] == ''
    assert info['make_command'].startswith('make -j 2 MPI=0 CUDA_HOME=%s NCCL_HOME=' % site.cuda)
    assert re.match(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$', info['built_at'])
    assert info['binaries'] == binaries
    assert any(c.startswith('archive_sha256=%s' % site.sha256) for c in info['build_id_covers'])
    # The archive (on the controller, the default) was copied into the private build directory and only that copy
    # unpacked; that directory is gone.
    assert_unpacked_from_the_private_copy(site, out, result)
    assert not os.path.exists(os.path.join(site.prefix, '.cache'))
    mtime = os.stat(result['info_file']).st_mtime

    # Second run: nothing downloaded, unpacked or made.
    rc, out, again, changed = site.play()
    assert rc == 0, out[-5000:]
    assert changed == 0, out[-5000:]
    assert again['build_id'] == result['build_id'] and again['built'] is False
    assert os.stat(result['info_file']).st_mtime == mtime
    assert 'nccl_tests_build : Build nccl-tests]' not in out

    # Check mode on the installed build: nothing to do; with `-e nccl_tests_build_force=false` as
    # docs/nccl-tests-build.md types it (a string, and false: without it the default is false too).
    rc, out, _result, changed = site.play(check=True, cli=('-e', 'nccl_tests_build_force=false'))
    assert rc == 0 and changed == 0, out[-5000:]

    # Forced (in check mode, to keep the test fast), as the docs type it: the same build id would be built again.
    rc, out, forced, changed = site.play(check=True, cli=('-e', 'nccl_tests_build_force=true'))
    assert rc == 0 and changed > 0, out[-5000:]
    assert forced['build_id'] == result['build_id'] and forced['built'] is False
    assert 'Would use files/nccl-tests-%s.tar.gz' % VERSION in flat(out)
    assert os.stat(result['info_file']).st_mtime == mtime and site.build_dirs() == [os.path.basename(install)]


def test_checksum_mismatch_of_a_file_url_stops_before_anything_is_installed(site):
    # (an archive path on the controller: test_a_wrong_archive_is_refused_on_its_copy_before_unpacking[controller])
    wrong = 'ab' * 32
    archive = 'file://' + site.archive
    rc, out, result, _changed = site.play(nccl_tests_build_sha256=wrong.upper(), nccl_tests_build_archive=archive)
    assert rc != 0 and result is None
    where = archive
    assert 'nccl-tests archive %s has sha256 %s, expected %s: refusing to build' % (where, site.sha256, wrong) in flat(out), out[-5000:]
    assert site.build_dirs() == [] and not os.path.lexists(os.path.join(site.prefix, 'current'))
    assert not os.path.isdir(os.path.join(site.prefix, '.build')) or os.listdir(os.path.join(site.prefix, '.build')) == []


def test_an_archive_on_the_node_and_a_pip_wheel_nccl_build_through_a_private_copy_and_a_shim(site):
    """One build, two inputs: the archive lies on the node (copied into the private build directory, only that copy
    unpacked; on the controller: test_builds_into_the_versioned_prefix_then_changes_nothing; a file:// URL:
    test_file_url_works_like_a_path_and_mpi_uses_a_shim), and NCCL is a pip wheel's, the newest found below the
    search roots, linked through a shim."""
    roots = os.path.join(site.tmp, 'opt')
    older = fake_nccl(os.path.join(roots, 'old', 'lib', 'python3.10', 'site-packages', 'nvidia', 'nccl'), '2.18.1')
    newer = fake_nccl(os.path.join(roots, 'app', '.venv', 'lib', 'python3.12', 'site-packages', 'nvidia', 'nccl'), '2.26.2')
    # Not a wheel layout: ignored.
    write(os.path.join(roots, 'other', 'lib', 'libnccl.so.2'))
    rc, out, result, _changed = site.play(nccl_tests_build_archive=site.archive, nccl_tests_build_archive_src='node',
                                          nccl_tests_build_nccl_home='wheel', nccl_tests_build_nccl_search_roots=[roots])
    assert rc == 0 and result['built'] is True, out[-5000:]
    assert_unpacked_from_the_private_copy(site, out, result)
    info = read_info(result)
    assert info['nccl_source'] == 'wheel' and info['nccl_home'] == newer and info['nccl_version'] == '2.26.2'
    assert info['nccl_lib_dir'] == os.path.join(newer, 'lib') and info['nccl_shim'] is True
    assert result['ld_library_path'].split(':')[0] == os.path.join(newer, 'lib')
    assert older not in result['ld_library_path']
    line = run_binary(os.path.join(result['bin_dir'], 'all_reduce_perf'))
    assert re.search(r'NCCL_HOME=\S+/\.build/localhost-\S+/nccl ', line), line


@pytest.mark.parametrize('src', ['node', 'controller'])
def test_a_wrong_archive_is_refused_on_its_copy_before_unpacking(site, src):
    wrong = 'cd' * 32
    archive = site.archive if src == 'node' else 'files/nccl-tests-%s.tar.gz' % VERSION
    # the expected sum as some sites write it, in capitals: compared as the same hex digits, named in lower case
    rc, out, result, _changed = site.play(nccl_tests_build_archive=archive, nccl_tests_build_archive_src=src,
                                          nccl_tests_build_sha256=wrong.upper() if src == 'controller' else wrong)
    assert rc != 0 and result is None
    text = flat(out)
    assert 'nccl-tests archive %s has sha256 %s, expected %s: refusing to build (checked on its copy %s/.build/localhost-' % (
        site.archive, site.sha256, wrong, site.prefix) in text, out[-5000:]
    assert 'TASK [xuanwu.cluster.nccl_tests_build : Unpack the verified copy]' not in out
    assert os.listdir(os.path.join(site.prefix, '.build')) == [] and site.build_dirs() == []


def test_keep_workdir_keeps_the_private_build_directory(site):
    rc, out, result, _changed = site.play(nccl_tests_build_keep_workdir=True, nccl_tests_build_work_parent=os.path.join(site.tmp, 'scratch'),
                                          cli=())
    assert rc != 0 and 'the work directory parent %s cannot be used' % os.path.join(site.tmp, 'scratch') in flat(out), out[-3000:]
    os.mkdir(os.path.join(site.tmp, 'scratch'), 0o700)
    rc, out, result, _changed = site.play(nccl_tests_build_keep_workdir=True, nccl_tests_build_work_parent=os.path.join(site.tmp, 'scratch'))
    assert rc == 0, out[-5000:]
    kept = os.listdir(os.path.join(site.tmp, 'scratch'))
    assert len(kept) == 1 and kept[0].startswith('localhost-%s-%s.' % (VERSION, result['build_id']))
    assert os.stat(os.path.join(site.tmp, 'scratch', kept[0])).st_mode & 0o7777 == 0o700


def test_malformed_checksum_fails_in_preflight(site):
    rc, out, result, _changed = site.play(nccl_tests_build_sha256='deadbeef')
    assert rc != 0 and result is None
    assert "nccl_tests_build_sha256 must be the archive's sha256, 64 hex digits" in flat(out) and "got 'deadbeef'" in out, out[-3000:]
    assert not os.path.exists(site.prefix)


def test_file_url_works_like_a_path_and_mpi_uses_a_shim(site):
    # OpenMPI laid out as on EL: mpi.h outside the prefix, named only by the compiler wrapper.
    mpi = os.path.join(site.tmp, 'openmpi')
    incdir = os.path.join(site.tmp, 'include', 'openmpi-x86_64')
    write(os.path.join(incdir, 'mpi.h'))
    write(os.path.join(mpi, 'lib', 'libmpi.so'))
    write(os.path.join(mpi, 'bin', 'mpicc'),
          '#!/bin/sh\ncase "$1" in\n  --showme:incdirs) echo "%s" ;;\n  --showme:libdirs) echo "%s" ;;\n  *) exit 1 ;;\nesac\n'
          % (incdir, os.path.join(mpi, 'lib')), 0o755)
    rc, out, result, _changed = site.play(nccl_tests_build_archive='file://' + site.archive, nccl_tests_build_mpi='auto',
                                          path_prepend=os.path.join(mpi, 'bin'))
    assert rc == 0, out[-5000:]
    assert result['mpi'] is True and result['built'] is True
    assert_unpacked_from_the_private_copy(site, out, result)
    info = read_info(result)
    assert info['archive'] == 'file://' + site.archive and info['archive_sha256'] == site.sha256
    assert info['mpi_home'] == mpi and info['mpi_include_dir'] == incdir and info['mpi_lib_dir'] == os.path.join(mpi, 'lib')
    assert os.path.join(mpi, 'lib') in result['ld_library_path'].split(':')
    line = run_binary(os.path.join(result['bin_dir'], 'sendrecv_perf'))
    assert 'MPI=1' in line and re.search(r'MPI_HOME=\S+/\.build/localhost-\S+/mpi$', line), line
    assert os.listdir(os.path.join(site.prefix, '.build')) == []


def test_check_mode_builds_nothing(site):
    # CUDA found through nvcc on PATH (a link, as /usr/local/bin/nvcc often is).
    bindir = os.path.join(site.tmp, 'bin')
    os.makedirs(bindir)
    os.symlink(os.path.join(site.cuda, 'bin', 'nvcc'), os.path.join(bindir, 'nvcc'))
    rc, out, result, changed = site.play(check=True, path_prepend=bindir, nccl_tests_build_cuda_home='auto')
    assert rc == 0, out[-5000:]
    assert changed > 0
    assert result['built'] is False and result['cuda_home'] == site.cuda
    assert 'Would use files/nccl-tests-%s.tar.gz (on the controller) (sha256 %s)' % (VERSION, site.sha256) in flat(out)
    assert "`make -j 2 MPI=0 CUDA_HOME=%s NCCL_HOME=" % site.cuda in flat(out)
    assert not os.path.exists(site.prefix)
    # Other make arguments are another build.
    args = ['NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90']
    rc, out, other, _changed = site.play(check=True, path_prepend=bindir, nccl_tests_build_cuda_home='auto', nccl_tests_build_extra_make_args=args)
    assert rc == 0, out[-5000:]
    assert other['build_id'] != result['build_id'] and other['make_command'].endswith(' ' + args[0])
    assert not os.path.exists(site.prefix)


@pytest.mark.parametrize('case', ['no_cuda', 'no_wheel'])
def test_missing_toolchain_fails_clearly(site, case):
    if case == 'no_cuda':
        # A driver-only node: no nvcc.
        empty = os.path.join(site.tmp, 'cuda-driver-only')
        os.makedirs(os.path.join(empty, 'include'))
        rc, out, result, _changed = site.play(nccl_tests_build_cuda_home=empty)
        expected = 'nccl_tests_build_cuda_home %s is not a CUDA toolkit on localhost: it needs bin/nvcc and include/cuda_runtime.h' % empty
    else:
        roots = os.path.join(site.tmp, 'opt')
        write(os.path.join(roots, 'venv', 'lib', 'python3.11', 'site-packages', 'torch', '__init__.py'))
        rc, out, result, _changed = site.play(nccl_tests_build_nccl_home='wheel', nccl_tests_build_nccl_search_roots=[roots])
        expected = ("No NCCL to build nccl-tests against on localhost: no pip wheel's NCCL (nvidia/nccl/include/nccl.h and "
                    "nvidia/nccl/lib/libnccl.so.2) in a site-packages or dist-packages below %s;" % roots)
    assert rc != 0 and result is None
    assert expected in flat(out), out[-3000:]
    assert not os.path.exists(site.prefix)


README_SHA256 = '85c65a240432a5bd8bf8598ac235582921a96e8a968a8a675d23419478a4ab9c'   # nccl-tests v2.19.6, GitHub's archive


def _readme_build_flags():
    """The ``-e nccl_tests_build_*`` of README.md's full-run command, as printed."""
    with open(os.path.join(ROOT, 'README.md')) as handle:
        text = handle.read()
    block = re.search(r'ansible-playbook -i inventory\.yml playbooks/validate\.yml \\\n((?:.*\\\n)*.*\n)', text).group(1)
    return dict(re.findall(r'-e (nccl_tests_build_\w+)=(\S+)', block))


def test_the_readme_full_run_builds_as_printed(tmp_path):
    """README's command names the version, the archive and its real sha256 (the first full run used to stop at the pin
    check: no version). Through the role, as printed, with a stand-in archive of that version in the file it names
    next to the inventory; only the checksum is the stand-in's."""
    flags = _readme_build_flags()
    assert flags == {'nccl_tests_build_version': '2.19.6', 'nccl_tests_build_archive': 'files/nccl-tests-2.19.6.tar.gz',
                     'nccl_tests_build_sha256': README_SHA256}, flags
    with open(os.path.join(ROOT, 'bench', 'gpu-host-validate.sh')) as handle:
        assert 'SHA256=%s' % README_SHA256 in handle.read()        # the archive the real GPU runs built from
    site = Site(tmp_path)
    archive = os.path.join(site.tmp, flags['nccl_tests_build_archive'])
    sha = subprocess.check_output([sys.executable, STANDIN, archive, '--version', flags['nccl_tests_build_version']],
                                  universal_newlines=True).strip()
    run = site.play(nccl_tests_build_version=flags['nccl_tests_build_version'],
                    nccl_tests_build_archive=flags['nccl_tests_build_archive'], nccl_tests_build_sha256=sha)
    assert run.rc == 0, run.out[-3000:]
    assert run.result['version'] == '2.19.6' and os.path.isdir(run.result['bin_dir']), run.result

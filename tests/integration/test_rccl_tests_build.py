"""Integration: the nccl_tests_build role building rccl-tests (flavor rccl) against localhost.

No GPU, ROCm, RCCL or MPI is needed: the source archive is the stand-in of
tests/fixtures/standin-rccl-tests (not rccl-tests; its Makefile takes ROCM_PATH, NCCL_HOME,
CUSTOM_RCCL_LIB, MPI and MPI_HOME like the real one, checks what they name and writes shell
scripts), and ROCm (bin/hipcc, bin/hipify-perl, the HIP headers, .info/version, RCCL's rccl.h and
librccl.so) is a fake directory made here with the files the role and the Makefile look for."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from test_nccl_tests_build import STANDIN, VERSION, Site, flat, read_info, run_binary, write

RCCL_VERSION = '0.0.0-rccl-standin'
pytestmark = pytest.mark.skipif(shutil.which('ansible-playbook') is None, reason='ansible-playbook not on PATH')
# The tests of "no ROCm" need a test host without one.
HOST_ROCM = os.path.exists('/opt/rocm') or bool(os.environ.get('ROCM_PATH')) or shutil.which('hipcc') is not None
without_host_rocm = pytest.mark.skipif(HOST_ROCM, reason='this host has ROCm (/opt/rocm, $ROCM_PATH or hipcc on PATH)')


def fake_rocm(home, version='6.4.2-120', rccl=True):
    """A ROCm tree as the rocm-core, hipcc, hip-dev and rccl(-dev) packages lay it out (files empty where only their
    presence counts)."""
    write(os.path.join(home, 'bin', 'hipcc'), '#!/bin/sh\necho "HIP version: 6.4.43484-123eb5128"\n', 0o755)
    write(os.path.join(home, 'bin', 'hipify-perl'), '#!/bin/sh\ncat "$1"\n', 0o755)
    write(os.path.join(home, 'include', 'hip', 'hip_runtime.h'))
    write(os.path.join(home, '.info', 'version'), version + '\n')
    if rccl:
        fake_rccl(home, '2.22.3')
    return home


def fake_rccl(home, version):
    major, minor, patch = version.split('.')
    write(os.path.join(home, 'include', 'rccl', 'rccl.h'),
          '#ifndef NCCL_H_\n#define NCCL_H_\n#define NCCL_MAJOR %s\n#define NCCL_MINOR %s\n#define NCCL_PATCH %s\n'
          '#define NCCL_SUFFIX ""\n#endif\n' % (major, minor, patch))
    write(os.path.join(home, 'lib', 'librccl.so.1'), 'not a library\n')
    os.symlink('librccl.so.1', os.path.join(home, 'lib', 'librccl.so'))
    return home


class RcclSite(Site):
    """The nccl-tests site plus a fake ROCm with RCCL and the stand-in rccl-tests archive."""

    def __init__(self, tmp_path):
        super(RcclSite, self).__init__(tmp_path)
        self.rocm = fake_rocm(os.path.join(self.tmp, 'rocm-6.4.2'))
        self.rccl_archive = os.path.join(self.tmp, 'files', 'rccl-tests-%s.tar.gz' % RCCL_VERSION)
        self.rccl_sha256 = subprocess.check_output(
            [sys.executable, STANDIN, self.rccl_archive, '--version', RCCL_VERSION, '--suite', 'rccl-tests'],
            universal_newlines=True).strip()

    def rccl(self, **overrides):
        """Variables of an rccl-tests build (flavor rccl, this site's ROCm), with ``overrides``."""
        base = {
            'nccl_tests_build_flavor': 'rccl',
            'nccl_tests_build_rccl_version': RCCL_VERSION,
            'nccl_tests_build_rccl_archive': 'files/rccl-tests-%s.tar.gz' % RCCL_VERSION,
            'nccl_tests_build_rccl_sha256': self.rccl_sha256,
            'nccl_tests_build_rocm_path': self.rocm,
        }
        base.update(overrides)
        return base


@pytest.fixture
def site(tmp_path):
    return RcclSite(tmp_path)


def test_rccl_tests_build_into_the_versioned_prefix_then_change_nothing(site):
    rc, out, result, changed = site.play(**site.rccl())
    assert rc == 0, out[-5000:]
    assert changed > 0 and result['built'] is True
    assert result['flavor'] == 'rccl' and result['suite'] == 'rccl-tests'
    install = os.path.join(site.prefix, 'rccl-tests-%s-%s' % (RCCL_VERSION, result['build_id']))
    assert result['install_dir'] == install and result['bin_dir'] == os.path.join(install, 'bin')
    assert result['current_link'] == os.path.join(site.prefix, 'rccl-tests-current')
    assert os.path.realpath(result['current_link']) == install and not os.path.lexists(os.path.join(site.prefix, 'current'))
    assert result['rocm_home'] == site.rocm and result['rocm_version'] == '6.4.2-120'
    assert result['rccl_home'] == site.rocm and result['rccl_version'] == '2.22.3' and result['nccl_source'] == 'rocm'
    assert result['cuda_home'] == '' and result['cuda_version'] == ''
    # ROCm's own RCCL: ROCM_PATH alone (the Makefile adds $(ROCM_PATH)/include and /lib); no CUDA_HOME, no NCCL_HOME.
    assert result['make_command'] == 'make -j 2 MPI=0 ROCM_PATH=%s' % site.rocm
    assert result['ld_library_path'] == os.path.join(site.rocm, 'lib')
    binaries = sorted(os.listdir(result['bin_dir']))
    assert len(binaries) == 10 and 'alltoallv_perf' in binaries and 'all_reduce_perf' in binaries
    line = run_binary(os.path.join(result['bin_dir'], 'all_reduce_perf'))
    assert line == 'stand-in all_reduce_perf, not rccl-tests: built with MPI=0 ROCM_PATH=%s NCCL_HOME= CUSTOM_RCCL_LIB= MPI_HOME=' % site.rocm
    info = read_info(result)
    assert info['flavor'] == 'rccl' and info['suite'] == 'rccl-tests' and info['version'] == RCCL_VERSION
    assert info['flavor_reason'] == 'nccl_tests_build_flavor is rccl'
    assert info['rocm_home'] == site.rocm and info['rocm_version'] == '6.4.2-120'
    assert info['rccl_home'] == site.rocm and info['rccl_version'] == '2.22.3'
    assert info['archive_sha256'] == site.rccl_sha256 and info['binaries'] == binaries
    assert 'flavor=rccl' in info['build_id_covers'] and 'rocm=6.4.2-120:%s' % site.rocm in info['build_id_covers']
    assert os.listdir(os.path.join(site.prefix, '.build')) == []
    mtime = os.stat(result['info_file']).st_mtime

    rc, out, again, changed = site.play(**site.rccl())
    assert rc == 0 and changed == 0, out[-5000:]
    assert again['build_id'] == result['build_id'] and again['built'] is False
    assert os.stat(result['info_file']).st_mtime == mtime

    rc, out, _result, changed = site.play(check=True, **site.rccl())
    assert rc == 0 and changed == 0, out[-5000:]

    # A ROCm upgrade is another build, next to the first one; the link moves.
    write(os.path.join(site.rocm, '.info', 'version'), '6.4.3-45\n')
    rc, out, upgraded, changed = site.play(check=True, **site.rccl())
    assert rc == 0 and changed > 0, out[-5000:]
    assert upgraded['build_id'] != result['build_id'] and upgraded['rocm_version'] == '6.4.3-45'
    assert 'Would use files/rccl-tests-%s.tar.gz (on the controller) (sha256 %s)' % (RCCL_VERSION, site.rccl_sha256) in flat(out)
    assert "`make -j 2 MPI=0 ROCM_PATH=%s`" % site.rocm in flat(out)
    assert sorted(os.listdir(site.prefix)) == sorted(['.build', 'rccl-tests-current', os.path.basename(install)])


@without_host_rocm
def test_auto_takes_rccl_tests_where_hipcc_is_on_path_and_nccl_tests_elsewhere(site):
    # hipcc on PATH through a link (as /usr/bin/hipcc -> /opt/rocm-6.4.2/bin/hipcc often is); no ROCm path given.
    bindir = os.path.join(site.tmp, 'bin')
    os.makedirs(bindir)
    os.symlink(os.path.join(site.rocm, 'bin', 'hipcc'), os.path.join(bindir, 'hipcc'))
    auto = site.rccl(nccl_tests_build_flavor='auto', nccl_tests_build_rocm_path='auto')
    rc, out, result, changed = site.play(check=True, path_prepend=bindir, **auto)
    assert rc == 0 and changed > 0, out[-5000:]
    assert result['flavor'] == 'rccl' and result['rocm_home'] == site.rocm and result['built'] is False
    assert 'auto: ROCm found at %s' % site.rocm in flat(out)
    assert not os.path.exists(site.prefix)
    # Without hipcc (and without /opt/rocm): nccl-tests, with the nccl pins; the rccl pins are not needed.
    rc, out, result, _changed = site.play(check=True, nccl_tests_build_flavor='auto')
    assert rc == 0, out[-5000:]
    assert result['flavor'] == 'nccl' and result['suite'] == 'nccl-tests' and result['rocm_home'] == ''
    assert result['install_dir'] == os.path.join(site.prefix, '%s-%s' % (VERSION, result['build_id']))
    assert result['current_link'] == os.path.join(site.prefix, 'current')
    assert 'auto: no AMD GPU in the facts and no ROCm with hipcc' in flat(out)


@without_host_rocm
def test_auto_takes_rccl_tests_where_the_facts_say_amd(site):
    facts = json.dumps({'xuanwu_facts': {'gpu': {'vendor': 'amd', 'count': 8}}})
    rc, out, result, _changed = site.play(check=True, cli=('-e', facts), **site.rccl(nccl_tests_build_flavor='auto'))
    assert rc == 0, out[-5000:]
    assert result['flavor'] == 'rccl' and 'auto: the facts say gpu.vendor amd' in flat(out)
    # The same facts on a node without ROCm: rccl-tests cannot be built, and the message says what is missing.
    rc, out, result, _changed = site.play(check=True, cli=('-e', facts), **site.rccl(nccl_tests_build_flavor='auto',
                                                                                     nccl_tests_build_rocm_path='auto'))
    assert rc != 0 and result is None
    text = flat(out)
    assert ('auto: the facts say gpu.vendor amd, so rccl-tests is to be built, but localhost has no ROCm with hipcc: '
            'no $ROCM_PATH, no hipcc on PATH (') in text, out[-3000:]
    assert ('and no /opt/rocm or /opt/rocm-* with bin/hipcc and include/hip/hip_runtime.h. Install ROCm\'s HIP SDK (the hipcc and hip-dev '
            'packages, rocm-hip-sdk) or set nccl_tests_build_rocm_path, or set nccl_tests_build_flavor to nccl.') in text


@pytest.mark.parametrize('case', ['no_hipcc', 'rocm_path_without_hipcc', 'no_rccl', 'no_pins'])
def test_an_rccl_build_the_node_cannot_do_fails_naming_what_is_missing(site, case):
    if case == 'no_hipcc':
        if HOST_ROCM:
            pytest.skip('this host has ROCm (/opt/rocm, $ROCM_PATH or hipcc on PATH)')
        rc, out, result, _changed = site.play(**site.rccl(nccl_tests_build_rocm_path='auto'))
        expected = ('nccl_tests_build_flavor is rccl, so rccl-tests is to be built, but localhost has no ROCm with hipcc: no $ROCM_PATH, '
                    'no hipcc on PATH (')
    elif case == 'rocm_path_without_hipcc':
        os.remove(os.path.join(site.rocm, 'bin', 'hipcc'))
        rc, out, result, _changed = site.play(**site.rccl())
        expected = ('nccl_tests_build_flavor is rccl, so rccl-tests is to be built, but localhost has no ROCm with hipcc: '
                    'nccl_tests_build_rocm_path %s has no bin/hipcc with include/hip/hip_runtime.h. Install ROCm\'s HIP SDK' % site.rocm)
    elif case == 'no_rccl':
        os.remove(os.path.join(site.rocm, 'lib', 'librccl.so'))
        rc, out, result, _changed = site.play(**site.rccl())
        expected = ('No RCCL to build rccl-tests against on localhost: ROCm at %s has no lib/librccl.so. Install RCCL with its development '
                    'files' % site.rocm)
    else:
        rc, out, result, _changed = site.play(**site.rccl(nccl_tests_build_rccl_version='', nccl_tests_build_rccl_sha256='xyz'))
        expected = ("nccl_tests_build (rccl-tests on localhost): nccl_tests_build_rccl_version must name the rccl-tests version, e.g. "
                    "the commit id of the rccl-tests revision you reviewed (letters, digits, '.', '_', '+', '-'); got ''; "
                    "nccl_tests_build_rccl_sha256 must be the archive's sha256, 64 hex digits")
    assert rc != 0 and result is None
    assert expected in flat(out), out[-3000:]
    assert not os.path.exists(site.prefix)


def test_a_custom_rccl_and_an_mpi_with_lib64_go_through_the_makefile_variables(site):
    custom = fake_rccl(os.path.join(site.tmp, 'rccl-build'), '2.23.4')
    mpi = os.path.join(site.tmp, 'openmpi')
    write(os.path.join(mpi, 'include', 'mpi.h'))
    write(os.path.join(mpi, 'lib64', 'libmpi.so'))
    write(os.path.join(mpi, 'bin', 'mpicc'), '#!/bin/sh\nexit 1\n', 0o755)
    rc, out, result, _changed = site.play(path_prepend=os.path.join(mpi, 'bin'),
                                          **site.rccl(nccl_tests_build_rccl_home=custom + '/', nccl_tests_build_mpi=True))
    assert rc == 0, out[-5000:]
    assert result['rccl_home'] == custom and result['rccl_version'] == '2.23.4' and result['nccl_source'] == 'path'
    assert result['mpi'] is True
    # rccl-tests' Makefile reads $(MPI_HOME)/lib only: lib64 is reached through the shim.
    assert re.match(r'^make -j 2 MPI=1 ROCM_PATH=%s NCCL_HOME=%s CUSTOM_RCCL_LIB=%s/lib MPI_HOME=\S+/\.build/localhost-rccl-tests-\S+/mpi$'
                    % (re.escape(site.rocm), re.escape(custom), re.escape(custom)), result['make_command']), result['make_command']
    assert result['ld_library_path'].split(':') == [os.path.join(custom, 'lib'), os.path.join(mpi, 'lib64'), os.path.join(site.rocm, 'lib')]
    line = run_binary(os.path.join(result['bin_dir'], 'sendrecv_perf'))
    assert 'MPI=1' in line and 'NCCL_HOME=%s CUSTOM_RCCL_LIB=%s/lib' % (custom, custom) in line, line
    assert os.listdir(os.path.join(site.prefix, '.build')) == []


def test_a_wrong_rccl_tests_archive_is_refused_before_unpacking(site):
    wrong = 'ef' * 32
    rc, out, result, _changed = site.play(**site.rccl(nccl_tests_build_rccl_sha256=wrong))
    assert rc != 0 and result is None
    assert 'rccl-tests archive %s has sha256 %s, expected %s: refusing to build' % (site.rccl_archive, site.rccl_sha256, wrong) in flat(out)
    assert 'Unpack the verified copy]' not in out and site.build_dirs() == []

"""Stand-in GPUs for a REAL podman (tests of the container smoke): a tiny local image made with ``podman import``
(a root file system with only a shell, sleep and their C library; no registry) and a CDI spec under /var/run/cdi/
for a vendor kind of this test process (``xuanwu-test-<random>.invalid/gpu``). Each stand-in device is a device node (/dev/null seen
as /dev/xuanwu-gpu<N>) with its UUID in the environment; the spec's common edits mount a test double of nvidia-smi
that prints one ``GPU <n>: ... (UUID: ...)`` line per stand-in device it finds in the container. So the GPUs the
container lists are exactly the devices podman injected from the spec."""
import contextlib
import json
import os
import shutil
import subprocess
import uuid

PODMAN = shutil.which('podman')
# one CDI vendor kind per test process: podman refuses a kind that two specs define, so two test runs at once (two
# checkouts, or the unit and the integration suites side by side) must not share one
KIND = 'xuanwu-test-%s.invalid/gpu' % uuid.uuid4().hex[:12]
STAND_IN = '''#!/bin/sh
# test double: stands in for nvidia-smi -L, one line per stand-in GPU device injected by the CDI spec
i=0
for d in /dev/xuanwu-gpu*; do
  [ -e "$d" ] || continue
  n=${d#/dev/xuanwu-gpu}
  eval "u=\\$XUANWU_GPU${n}_UUID"
  echo "GPU $i: Stand-in GPU (UUID: $u)"
  i=$((i+1))
done
[ "$i" -gt 0 ] || { echo "No devices were found"; exit 6; }
'''
# runc: the default runtime crun refuses some hosts' hybrid cgroup mode (docs/development.md); no network needed
RUN_ARGS = ['--network=none'] + (['--runtime=runc'] if shutil.which('runc') else [])


def missing():
    """Why the stand-in cannot be made here (a skip reason), or None."""
    if PODMAN is None:
        return 'podman is not installed: the real-podman proof of the container smoke needs it'
    if os.geteuid() != 0:
        return 'writing a CDI spec under /var/run/cdi/ needs root'
    return None


def _spec(stand_in, uuids):
    def edits(indexes):
        return {'deviceNodes': [{'path': '/dev/xuanwu-gpu%d' % i, 'hostPath': '/dev/null'} for i in indexes],
                'env': ['XUANWU_GPU%d_UUID=%s' % (i, uuids[i]) for i in indexes]}
    devices = [{'name': str(i), 'containerEdits': edits([i])} for i in range(len(uuids))]
    devices.append({'name': 'all', 'containerEdits': edits(range(len(uuids)))})
    return {'cdiVersion': '0.5.0', 'kind': KIND, 'devices': devices,
            'containerEdits': {'mounts': [{'hostPath': stand_in, 'containerPath': '/usr/bin/nvidia-smi', 'options': ['ro', 'bind']}]}}


def _image(tmp):
    root = tmp / 'rootfs'
    shell, sleep = os.path.realpath('/bin/sh'), os.path.realpath(shutil.which('sleep'))
    files = [shell, sleep]
    for binary in (shell, sleep):
        libs = subprocess.run(['ldd', binary], stdout=subprocess.PIPE, check=True).stdout.decode()
        files += [part for line in libs.splitlines() for part in line.split() if part.startswith('/')]
    for path in sorted(set(files)):
        dest = root / path.lstrip('/')
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, str(dest))
    for folder in ('bin', 'dev', 'proc', 'sys', 'etc', 'usr/bin', 'tmp'):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for name, binary in (('sh', shell), ('sleep', sleep)):
        if not (root / 'bin' / name).exists():
            shutil.copy(binary, str(root / 'bin' / name))
    image = 'localhost/xuanwu-smoke-test:%s' % uuid.uuid4().hex[:12]
    tar = subprocess.Popen(['tar', '-C', str(root), '-c', '.'], stdout=subprocess.PIPE)
    subprocess.run([PODMAN, 'import', '-', image], stdin=tar.stdout, stdout=subprocess.PIPE, check=True)
    tar.wait()
    return image


@contextlib.contextmanager
def stand_in_gpus(tmp, uuids):
    """The local image's name, with a CDI spec of stand-in GPUs of these ``uuids``; both removed afterwards."""
    image = _image(tmp)
    stand_in = tmp / 'nvidia-smi'
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    os.makedirs('/var/run/cdi', exist_ok=True)
    spec = '/var/run/cdi/xuanwu-test-%s.json' % uuid.uuid4().hex[:8]
    with open(spec, 'w') as handle:
        json.dump(_spec(str(stand_in), list(uuids)), handle)
    try:
        yield image
    finally:
        os.unlink(spec)
        subprocess.run([PODMAN, 'rmi', '--force', image], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)


def no_smoke_containers():
    """True when no container of the smoke (xuanwu-smoke-*) is left."""
    out = subprocess.run([PODMAN, 'ps', '--all', '--format', '{{.Names}}'], stdout=subprocess.PIPE, check=True).stdout.decode()
    return [n for n in out.split() if n.startswith('xuanwu-smoke-')] == []

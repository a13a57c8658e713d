# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node checks of the host (OS, kernel, time, disks, memory headroom, storage, ports, memlock, ACS), hygiene before a
job (``_hygiene``) and the software stack (driver, CUDA, NCCL). Called by ``_checks.check_node``. Pure: no I/O.

``PROFILE_KEYS``: the profile keys that only these checks read, declared next to them; the profile schema
(``_profile.SCHEMA``) takes them in under their section."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils import _hygiene, _links
from ansible_collections.xuanwu.cluster.plugins.module_utils._checks_base import (
    _g, _c, _num, version_at_least, version_matches,
)


# The checks of this module (the catalogue of every check: plugins/module_utils/_catalogue.py).
# Remediation texts may name {placeholders}; a finding fills them in, the docs show <placeholder>.
CHECKS = {
    # --- host -----------------------------------------------------------------------------
    'host.os': _c(
        'Operating system', 'host', 'fail', 'os-release ID (and VERSION_ID prefix) is allowed by host.os',
        'Reinstall the node with a supported OS or extend host.os in the profile if the OS was validated.'),
    'host.kernel_module': _c(
        'Kernel module not loaded', 'module <name>', 'fail', 'module is in /proc/modules',
        'Load it: `modprobe {module}` and persist it (/etc/modules-load.d/); if it is missing, install its package '
        '(nvidia_peermem ships with the NVIDIA driver, ib_* with rdma-core/DOCA-OFED) and rebuild DKMS for the kernel.'),
    'host.chrony_missing': _c(
        'chrony not installed', 'chrony', 'fail', 'chronyc is present while time sync is required',
        'Install and enable chrony (`apt-get install chrony` / `dnf install chrony`; `systemctl enable --now chronyd`), '
        'configure the site NTP servers.'),
    'host.time_sync': _c(
        'Clock not synchronised', 'chrony', 'fail', 'chronyc tracking: leap status Normal with a reference',
        'Check `chronyc sources -v` and `chronyc tracking`: reachable NTP servers (UDP 123 through the firewall), '
        '`systemctl restart chronyd`, then `chronyc makestep`.'),
    'host.time_offset': _c(
        'Clock offset', 'chrony', 'fail', '|offset| <= host.time.max_offset_ms',
        'Step the clock with `chronyc makestep` and check the NTP sources (`chronyc sources -v`).'),
    'host.memlock': _c(
        'Locked-memory limit', 'host', 'fail', 'ulimit -l is unlimited',
        'Set "* soft memlock unlimited" and "* hard memlock unlimited" in /etc/security/limits.d/, LimitMEMLOCK=infinity '
        'for systemd services and the batch scheduler (e.g. slurmd), then log in again.'),
    'host.disk_free': _c(
        'Free disk space', 'disk <path>', 'fail', 'free bytes at the path >= min_free_gb * 10^9',
        'Free space on {path}: `du -xh {path} | sort -h | tail`, clean caches/containers/old checkpoints (e.g. '
        '`docker system prune`), or grow the filesystem.'),
    'host.memory_available': _c(
        'Memory headroom', 'memory', 'fail',
        'MemAvailable >= host.memory.available_min_gib and >= host.memory.available_min_percent of MemTotal',
        'Little memory is left for the job\'s DataLoader workers and pinned buffers (field guide 3.4): look for what holds '
        'it with `ps -eo pid,user,rss,args --sort=-rss | head` and `grep -E "Shmem|Slab|Hugetlb" /proc/meminfo` (a leftover '
        'job, a tmpfs or /dev/shm filled by an earlier run, huge pages reserved), free it, or lower num_workers.'),
    'host.swap': _c(
        'Swap enabled', 'memory', 'warn', 'SwapTotal is 0 where host.memory.swap_allowed is false',
        'A training node that swaps stalls its ranks and the whole job with them: turn swap off (`swapoff -a`, and remove '
        'the swap entry from /etc/fstab or mask the swap unit), or set host.memory.swap_allowed if the site wants it.'),
    'host.hugepages': _c(
        'Memory reserved for huge pages', 'memory', 'fail', 'HugePages_Total x Hugepagesize <= host.memory.hugepages_max_gib',
        'Huge pages are reserved at boot or by `vm.nr_hugepages` and no ordinary allocation can use them: set '
        '`sysctl -w vm.nr_hugepages=0` (and remove it from /etc/sysctl.d/ and the kernel command line, `hugepages=`) unless '
        'the workload needs them, then raise host.memory.hugepages_max_gib.'),
    'host.storage_kind': _c(
        'Storage path on the wrong kind of file system', 'storage <path>', 'fail',
        'the mount holding each host.storage path is shared (NFS, Lustre, GPFS, BeeGFS, CephFS...) or local as the '
        'profile says, and of one of its fstypes',
        'See what holds the path with `findmnt -T {path}`. A shared path on a local file system means the shared mount is '
        'missing (check /etc/fstab or the automounter, `mount {path}`) and the job would read a stale local copy; a local '
        'cache on a network file system makes every node read over the network (field guide 3.4: cache the dataset on '
        'local NVMe or use a parallel file system).'),
    'host.storage_read_slow': _c(
        'Storage read throughput', 'storage <path>', 'fail',
        'a bounded read of the path (cold: O_DIRECT, else its cached pages dropped; host.storage_read.<path>.cache '
        'says which) reaches host.storage[].read_mb_s_min',
        'The dataset path reads slower than the profile needs (field guide 3.4): check the mount (`findmnt -T {path}`, '
        'NFS `nconnect`/`rsize`, the Lustre or GPFS client), the network path to the storage (`ethtool` counters, the '
        'storage VLAN), and other readers at the same moment; cache the dataset on local NVMe if the shared file system '
        'cannot serve every node.'),
    'host.storage_unreadable': _c(
        'Storage path not readable', 'storage <path>', 'fail',
        'the path of a host.storage read test exists and its files can be read',
        'The dataset path is missing or cannot be read by the probe\'s user: check the mount (`findmnt -T {path}`), '
        'the automounter, and the permissions (`namei -l {path}`).'),
    'host.port_in_use': _c(
        'Port already in use', 'port <n>/<proto>', 'fail', 'nothing listens on the ports of host.ports_must_be_free',
        'Find the owner with `ss -lntup | grep :{port}` and stop it (a stale training job or rendezvous store), or change '
        'the job\'s MASTER_PORT.'),
    # --- hygiene before a job (field guide 7.5) ---------------------------------------------
    'gpu.compute_mode': _c(
        'GPU compute mode', 'gpu<N>', 'fail', 'devices[].compute_mode is one of gpu.compute_modes',
        'Set the GPU back to the shared mode: `nvidia-smi -i {index} -c DEFAULT` (as root; it lasts until the driver '
        'reloads, so also fix what set it: a boot script, the scheduler\'s GPU plugin). Exclusive_Process lets one process '
        'use the GPU, so a multi-process job fails with "CUDA-capable device(s) is/are busy or unavailable"; Prohibited lets '
        'none. If the site runs one process per GPU on purpose, list the mode in gpu.compute_modes.'),
    'gpu.process': _c(
        'GPU in use before the job', 'gpu<N>', 'fail',
        'nvidia-smi -q -x lists no process on the GPU (gpu.idle_required), outside gpu.idle_ignore_processes',
        'A process still holds the GPU (memory and compute): look at it with `ps -o pid,ppid,user,etimes,args -p {pid}` and '
        '`nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_gpu_memory --format=csv`; stop it (`kill {pid}`, '
        'then `kill -9 {pid}`) once its owner agrees, or drain the node in the scheduler until it ends. A monitoring agent '
        'that must stay goes into gpu.idle_ignore_processes.'),
    'host.leftover_process': _c(
        'Process of an earlier job still running', 'pid <N>', 'fail',
        'no process of ps matches host.leftover_process_patterns',
        'A distributed-job process (launcher, MPI daemon, benchmark) outlived its job: check it with '
        '`ps -o pid,ppid,user,etimes,args -p {pid}` and its children with `ps --ppid {pid} -o pid,args`, stop it with '
        '`kill {pid}` (`pkill -P {pid}` for the children, then `kill -9`), and fix the job cleanup (scheduler epilog, '
        'torchrun --max-restarts, mpirun timeouts) so the next job does not inherit its ports and GPUs.'),
    'host.pcie_acs': _c(
        'PCIe ACS enabled', 'pcie acs', 'fail', 'no PCIe bridge has ACS source validation/redirection enabled',
        'Disable ACS in the BIOS (or at boot with `setpci -s <bridge> ECAP_ACS+0x6.w=0000` for every bridge listed) so '
        'GPUDirect P2P/RDMA does not route through the root complex; keep it on only where virtualisation needs it.'),
    # --- software -------------------------------------------------------------------------
    'software.driver_version': _c(
        'NVIDIA driver version', 'nvidia driver', 'fail',
        'software.driver_version matches profile software.driver_version / >= driver_version_min',
        'Install the driver branch of the profile (the same on every node) and reboot; keep Fabric Manager at the same '
        'version on NVSwitch systems.'),
    'software.cuda_driver_version': _c(
        'CUDA version supported by the driver', 'nvidia driver', 'fail',
        'software.cuda_driver_version >= software.cuda_driver_version_min',
        'Upgrade the NVIDIA driver to a branch that supports CUDA {expected} (see the CUDA release notes\' driver table).'),
    'software.cuda_toolkit_version': _c(
        'CUDA toolkit version', 'cuda toolkit', 'fail',
        'software.cuda_toolkit_version matches / >= the profile',
        'Install the CUDA toolkit version of the profile (cuda-toolkit-<major>-<minor>) and put its nvcc on PATH, or fix the '
        'container image.'),
    'software.nccl_version': _c(
        'NCCL version', 'nccl', 'fail', 'software.nccl_version matches / >= the profile',
        'Install the NCCL version of the profile (libnccl2 / nccl package, or the framework wheel that bundles it) on every '
        'node: mixed NCCL versions across ranks are unsupported.'),
}


_GIB = 2 ** 30
# Below this much read, a throughput says nothing of the file system (_probe.MIN_READ_BYTES).
MIN_READ_BYTES = 64 << 20

# The profile keys of the memory and storage checks (docs/profiles.md shows them under host).
PROFILE_KEYS = {'host': {
    'memory': {
        'type': 'dict', 'description': 'Host memory headroom for the job (field guide 3.4; /proc/meminfo). A key left out is '
                                       'not judged.',
        'keys': {
            'available_min_gib': {'type': 'float', 'min': 0, 'description': 'Fail when MemAvailable is below this, GiB.'},
            'available_min_percent': {'type': 'float', 'min': 0, 'max': 100,
                                      'description': 'Fail when MemAvailable is below this share of MemTotal, %.'},
            'swap_allowed': {'type': 'bool', 'description': 'false: warn while any swap is configured.'},
            'hugepages_max_gib': {'type': 'float', 'min': 0,
                                  'description': 'Fail when the huge pages reserved (HugePages_Total x Hugepagesize) exceed '
                                                 'this, GiB: no ordinary allocation can use them.'},
        },
    },
    'storage': {
        'type': 'list', 'default': [],
        'description': 'Where the data lives (field guide 3.4; /proc/mounts): each path on a shared file system (a dataset '
                       'every node reads) or a local one (a cache). Free space is host.disks.',
        'elements': {
            'type': 'dict', 'description': 'One path.',
            'keys': {
                'path': {'type': 'str', 'required': True, 'pattern': r'^/[^\x00-\x1f]*$', 'description': 'Absolute path.'},
                'kind': {'type': 'str', 'required': True, 'choices': ['shared', 'local'],
                         'description': 'shared: NFS, SMB, Lustre, GPFS, BeeGFS, CephFS, GlusterFS, WekaFS, JuiceFS or DAOS; '
                                        'local: any other type.'},
                'fstypes': {'type': 'list', 'elements': {'type': 'str'}, 'min_items': 1,
                            'description': 'The file system types allowed (as /proc/mounts names them: nfs4, lustre...).'},
                'read_mb_s_min': {'type': 'float', 'min': 0,
                                  'description': 'Read the files under the path (cached pages dropped first) and fail '
                                                 'below this throughput, MB/s (10^6 bytes). Absent: no read.'},
                'read_max_gib': {'type': 'float', 'default': 1.0, 'min': 0.0625, 'max': 1024,
                                 'description': 'Stop the read after this much, GiB.'},
                'read_max_s': {'type': 'float', 'default': 10.0, 'min': 1, 'max': 300,
                               'description': 'Stop the read after this long, s.'},
            },
        },
    },
}}


# ---------------------------------------------------------------------------------------------
# Host.

# The host checks (their own section of the profile); the time checks read chronyc.
HOST_CHECKS = tuple(check for check in CHECKS if check.startswith('host.'))
TIME_CHECKS = ('host.chrony_missing', 'host.time_sync', 'host.time_offset')
MEMORY_CHECKS = (('host.memory_available', ('available_min_gib', 'available_min_percent'),
                  'the profile sets no host.memory.available_min_gib or available_min_percent'),
                 ('host.swap', ('swap_allowed',), 'the profile does not forbid swap (host.memory.swap_allowed)'),
                 ('host.hugepages', ('hugepages_max_gib',), 'the profile sets no host.memory.hugepages_max_gib'))


def check_host(run):
    want = run.profile.get('host')
    if not want:
        run.skip(HOST_CHECKS, 'the profile has no host section')
        return
    host = run.facts.get('host') if isinstance(run.facts.get('host'), dict) else {}
    _check_os(run, want, host)
    if not want['kernel_modules_required']:
        run.skip(['host.kernel_module'], 'the profile requires no kernel module (host.kernel_modules_required)')
    if not want['memlock_unlimited']:
        run.skip(['host.memlock'], 'the profile does not require an unlimited locked-memory limit (host.memlock_unlimited)')
    if not want['pcie_acs_must_be_disabled']:
        run.skip(['host.pcie_acs'], 'the profile does not require PCIe ACS off (host.pcie_acs_must_be_disabled)')
    if want['kernel_modules_required']:
        loaded = host.get('kernel_modules')
        if not isinstance(loaded, list):
            run.unknown(['kernel_modules'], 'kernel modules', 'loaded kernel modules', checks=('host.kernel_module',))
        else:
            have = set(str(m).replace('-', '_') for m in loaded)
            for module in want['kernel_modules_required']:
                if module.replace('-', '_') not in have:
                    run.add('host.kernel_module', 'module %s' % module, 'not loaded', 'loaded',
                            'kernel module %s is not loaded' % module, module=module)
    _check_time(run, want, host)
    if want['memlock_unlimited']:
        if 'memlock_unlimited' not in host and 'memlock_kib' not in host:
            run.unknown(['memlock'], 'host', 'the locked-memory limit', checks=('host.memlock',))
        elif host.get('memlock_unlimited') is None and host.get('memlock_kib') is None:
            run.not_measured('host', 'locked-memory limit', 'ulimit -l', checks=('host.memlock',))
        elif host.get('memlock_unlimited') is not True:
            run.add('host.memlock', 'host', '%s KiB' % host.get('memlock_kib'), 'unlimited',
                    'locked-memory limit (ulimit -l) is %s KiB, RDMA wants unlimited' % host.get('memlock_kib'))
    _check_disks(run, want, host)
    _check_memory(run, want.get('memory') or {}, host)
    _check_storage(run, want.get('storage') or [], host)
    _check_reads(run, [item for item in want.get('storage') or [] if item.get('read_mb_s_min') is not None], host)
    _check_ports(run, want, host)
    if want['pcie_acs_must_be_disabled']:
        acs = host.get('pcie_acs')
        if not isinstance(acs, dict):
            run.unknown(['lspci'], 'pcie acs', 'PCIe ACS settings', checks=('host.pcie_acs',))
        elif not acs.get('checked'):
            run.not_measured('pcie acs', 'PCIe ACS control bits', 'sudo lspci -vvv | grep ACSCtl', checks=('host.pcie_acs',))
        elif acs.get('enabled'):
            bridges = sorted(str(b) for b in acs['enabled'])
            run.add('host.pcie_acs', 'pcie acs', bridges, [], 'PCIe ACS is enabled on %d bridge(s): %s' % (len(bridges), ', '.join(bridges)))


def _check_os(run, want, host):
    os_want = want.get('os')
    if not os_want:
        run.skip(['host.os'], 'the profile sets no host.os')
        return
    info = host.get('os')
    if not isinstance(info, dict):
        run.unknown(['os_release'], 'host', 'the operating system', checks=('host.os',))
        return
    os_id = str(info.get('id') or '').lower()
    version = str(info.get('version_id') or '')
    ids = [i.lower() for i in os_want['ids']]
    label = info.get('pretty_name') or ('%s %s' % (os_id, version)).strip()
    if os_id not in ids:
        run.add('host.os', 'host', label, ', '.join(os_want['ids']), 'operating system %s is not one of %s' % (label, ', '.join(os_want['ids'])))
        return
    versions = dict((k.lower(), v) for k, v in (os_want.get('versions') or {}).items()).get(os_id)
    if versions and not any(version == v or version.startswith(v.rstrip('.') + '.') for v in versions):
        run.add('host.os', 'host', label, '%s %s' % (os_id, ' or '.join(versions)),
                'operating system %s: version %s is not one of %s' % (label, version, ', '.join(versions)))


def _check_time(run, want, host):
    t_want = want.get('time')
    if not t_want:
        run.skip(TIME_CHECKS, 'the profile sets no host.time')
        return
    if not t_want['require_synchronised']:
        run.skip(['host.time_sync'], 'the profile does not require a synchronised clock (host.time.require_synchronised)')
    if t_want.get('max_offset_ms') is None:
        run.skip(['host.time_offset'], 'the profile sets no host.time.max_offset_ms')
    info = host.get('time')
    if not isinstance(info, dict):
        run.unknown(['chrony'], 'chrony', 'clock synchronisation', checks=TIME_CHECKS)
        return
    if info.get('installed') is False:
        run.add('host.chrony_missing', 'chrony', 'not installed', 'chrony synchronised', 'chronyc is not installed')
        run.unmeasured(TIME_CHECKS[1:], 'the clock: chronyc is not installed (host.chrony_missing)')
        return
    if t_want['require_synchronised']:
        sync = info.get('synchronised')
        if sync is None:
            run.not_measured('chrony', 'synchronisation state', 'chronyc tracking', checks=('host.time_sync',))
        elif sync is not True:
            run.add('host.time_sync', 'chrony', 'not synchronised (leap status %s, reference %s)' % (info.get('leap_status'), info.get('reference')),
                    'synchronised', 'the clock is not synchronised (chronyc tracking: leap status %s)' % info.get('leap_status'))
    if t_want.get('max_offset_ms') is not None:
        offset = _num(info.get('offset_seconds'))
        if offset is None:
            run.not_measured('chrony', 'clock offset', 'chronyc tracking', checks=('host.time_offset',))
        elif abs(offset) * 1000.0 > t_want['max_offset_ms']:
            run.add('host.time_offset', 'chrony', '%.3f ms' % (offset * 1000.0), '<= %s ms' % _g(t_want['max_offset_ms']),
                    'the clock is %.3f ms %s' % (abs(offset) * 1000.0, 'ahead' if offset > 0 else 'behind'))


def _mount_of(entries, path):
    """The entry of ``entries`` (dicts with a ``mount``: df rows, /proc/mounts lines in order) whose mount point is
    ``path`` or its longest parent; of entries on the same point, the last (a later mount hides the earlier)."""
    best = None
    for entry in entries:
        mount = entry.get('mount') if isinstance(entry, dict) else None
        if not isinstance(mount, str) or not (path == mount or path.startswith(mount.rstrip('/') + '/')):
            continue
        if best is None or len(mount) >= len(best['mount']):
            best = entry
    return best


def _check_disks(run, want, host):
    if not want['disks']:
        run.skip(['host.disk_free'], 'the profile sets no host.disks')
        return
    disks = host.get('disks')
    if not isinstance(disks, dict):
        run.unknown(['disks'], 'disks', 'free disk space', checks=('host.disk_free',))
        return
    for item in want['disks']:
        path = item['path']
        entry = disks.get(path) if isinstance(disks.get(path), dict) else _mount_of(disks.values(), path)
        comp = 'disk %s' % path
        if entry is None:
            run.not_measured(comp, 'free space', 'df -h %s' % path, checks=('host.disk_free',))
            continue
        free = _num(entry.get('free_bytes'))
        if free is None:
            run.not_measured(comp, 'free space', 'df -h %s' % path, checks=('host.disk_free',))
        elif free < item['min_free_gb'] * 1e9:
            run.add('host.disk_free', comp, '%.1f GB' % (free / 1e9), '>= %s GB' % _g(item['min_free_gb']),
                    '%s has %.1f GB free, profile wants at least %s GB' % (path, free / 1e9, _g(item['min_free_gb'])), path=path)


def _check_memory(run, want, host):
    asked = []
    for check, keys, why in MEMORY_CHECKS:
        if all(want.get(key) in (None, True) if key == 'swap_allowed' else want.get(key) is None for key in keys):
            run.skip([check], why)
        else:
            asked.append(check)
    if all(want.get(key) is None for key in PROFILE_KEYS['host']['memory']['keys']):
        return
    memory = host.get('memory')
    if not isinstance(memory, dict):
        run.unknown(['meminfo'], 'memory', 'memory headroom (/proc/meminfo)', checks=asked)
        return
    total = _num(memory.get('total_bytes'))
    floors = []
    if want.get('available_min_gib') is not None:
        floors.append((want['available_min_gib'] * _GIB, '%s GiB' % _g(want['available_min_gib'])))
    if want.get('available_min_percent') is not None and total:
        share = want['available_min_percent']
        floors.append((total * share / 100.0, '%s GiB (%s%% of %.0f GiB)' % (_g(round(total * share / 100.0 / _GIB, 1)), _g(share), total / _GIB)))
    available = _num(memory.get('available_bytes'))
    if floors and available is None:
        run.not_measured('memory', 'MemAvailable', 'grep MemAvailable /proc/meminfo', checks=('host.memory_available',))
    elif floors:
        floor, words = max(floors)
        if available < floor:
            run.add('host.memory_available', 'memory', '%.1f GiB' % (available / _GIB), '>= %s' % words,
                    'MemAvailable is %.1f GiB of %.0f GiB, the profile wants at least %s' % (available / _GIB, (total or 0) / _GIB, words))
    swap = _num(memory.get('swap_total_bytes'))
    if want.get('swap_allowed') is False:
        if swap is None:
            run.not_measured('memory', 'SwapTotal', 'grep SwapTotal /proc/meminfo', checks=('host.swap',))
        elif swap > 0:
            used = swap - (_num(memory.get('swap_free_bytes')) or 0)
            run.add('host.swap', 'memory', '%.1f GiB of swap (%.1f GiB used)' % (swap / _GIB, used / _GIB), 'no swap',
                    '%.1f GiB of swap is configured, %.1f GiB of it in use; the profile allows none' % (swap / _GIB, used / _GIB))
    if want.get('hugepages_max_gib') is not None:
        reserved = _num(memory.get('hugepages_bytes'))
        if reserved is None:
            run.not_measured('memory', 'huge pages reserved', 'grep -i huge /proc/meminfo', checks=('host.hugepages',))
        elif reserved > want['hugepages_max_gib'] * _GIB:
            run.add('host.hugepages', 'memory', '%.1f GiB' % (reserved / _GIB), '<= %s GiB' % _g(want['hugepages_max_gib']),
                    '%d huge pages reserve %.1f GiB that no ordinary allocation can use, over the profile\'s %s GiB'
                    % (memory.get('hugepages_total') or 0, reserved / _GIB, _g(want['hugepages_max_gib'])))


def _check_storage(run, want, host):
    if not want:
        run.skip(['host.storage_kind'], 'the profile sets no host.storage')
        return
    mounts = host.get('mounts')
    if not isinstance(mounts, list):
        run.unknown(['mounts'], 'storage', 'the file systems of the storage paths (/proc/mounts)', checks=('host.storage_kind',))
        return
    for item in want:
        path = item['path']
        comp = 'storage %s' % path
        entry = _mount_of(mounts, path)
        if entry is None:
            run.not_measured(comp, 'the file system holding it', 'findmnt -T %s' % path, checks=('host.storage_kind',))
            continue
        fstype = entry.get('fstype')
        what = '%s (%s on %s)' % (fstype, entry.get('device'), entry.get('mount'))
        if item.get('fstypes') and fstype not in item['fstypes']:
            expected = ' or '.join(item['fstypes'])
        elif item['kind'] == 'shared' and not entry.get('shared'):
            expected = 'a shared file system'
        elif item['kind'] == 'local' and entry.get('shared'):
            expected = 'a local file system'
        else:
            continue
        run.add('host.storage_kind', comp, what, expected,
                '%s is on %s, the profile expects %s (%s)' % (path, what, expected, item['kind']), path=path)


def _check_reads(run, want, host):
    if not want:
        run.skip(('host.storage_read_slow', 'host.storage_unreadable'), 'the profile sets no host.storage read_mb_s_min')
        return
    reads = host.get('storage_read') if isinstance(host.get('storage_read'), dict) else {}
    for item in want:
        path, floor = item['path'], item['read_mb_s_min']
        comp = 'storage %s' % path
        read = reads.get(path)
        if not isinstance(read, dict):
            run.unknown(['storage_read:' + path], comp, 'the read throughput of %s' % path,
                        checks=('host.storage_read_slow', 'host.storage_unreadable'))
            continue
        if read.get('error') and not read.get('bytes'):
            run.add('host.storage_unreadable', comp, read['error'], 'readable',
                    '%s could not be read: %s' % (path, read['error']), path=path)
            continue
        size, speed = _num(read.get('bytes')) or 0, _num(read.get('mb_per_s'))
        if size < MIN_READ_BYTES or speed is None:
            run.not_measured(comp, 'read throughput (only %d MiB could be read, %d MiB needed for a figure)'
                             % (size // 2 ** 20, MIN_READ_BYTES // 2 ** 20), 'du -sh %s' % path, checks=('host.storage_read_slow',))
        elif speed < floor:
            cache = '' if read.get('cache_dropped') else ', page cache kept'
            measured = '%s MB/s (%.0f MiB in %ss%s)' % (_g(speed), size / 2 ** 20, _g(read.get('seconds')), cache)
            run.add('host.storage_read_slow', comp, measured, '>= %s MB/s' % _g(floor),
                    '%s read at %s MB/s, the profile wants at least %s' % (path, _g(speed), _g(floor)), path=path)


def _check_ports(run, want, host):
    if not want['ports_must_be_free']:
        run.skip(['host.port_in_use'], 'the profile names no port that must be free (host.ports_must_be_free)')
        return
    listening = host.get('listening')
    if not isinstance(listening, list):
        run.unknown(['listening'], 'ports', 'listening ports', checks=('host.port_in_use',))
        return
    for spec in want['ports_must_be_free']:
        number, proto = spec.split('/')
        users = [e for e in listening if isinstance(e, dict) and str(e.get('port')) == number
                 and str(e.get('proto') or 'tcp').lower().startswith(proto)]
        if users:
            who = _hygiene.port_users(users, host)
            run.add('host.port_in_use', 'port %s' % spec, who, 'free', 'port %s is in use by %s' % (spec, who), port=number)


# ---------------------------------------------------------------------------------------------
# Hygiene before a job: _hygiene.py.

def check_hygiene(run):
    gpu = run.facts.get('gpu') if isinstance(run.facts.get('gpu'), dict) else {}
    devices = [d for d in (gpu.get('devices') or []) if isinstance(d, dict)]
    gpu_want = run.profile.get('gpu')
    if not gpu_want:
        run.skip(('gpu.compute_mode', 'gpu.process'), 'the profile has no gpu section')
    elif not gpu_want.get('compute_modes'):
        run.skip(['gpu.compute_mode'], 'the profile sets no gpu.compute_modes')
    if gpu_want and not gpu_want.get('idle_required'):
        run.skip(['gpu.process'], 'the profile does not require idle GPUs (gpu.idle_required)')
    if gpu_want and devices and gpu_want.get('vendor') == 'amd':
        run.skip(['gpu.compute_mode'], "an NVIDIA setting (nvidia-smi's compute mode): the profile's GPUs are AMD")
        if gpu_want.get('idle_required'):    # no AMD process probe yet: requested, so never a silent pass
            run.not_measured('gpu', 'processes on the GPUs', 'amd-smi process', checks=('gpu.process',))
    elif gpu_want and devices:
        _hygiene.check_gpu_usage(run, gpu_want, devices)
    elif gpu_want and gpu_want.get('count'):
        run.unmeasured(('gpu.compute_mode', 'gpu.process'), 'the GPUs: no GPU was read')
    elif gpu_want:
        run.skip(('gpu.compute_mode', 'gpu.process'), 'the profile wants no GPU (gpu.count 0)')
    host_want = run.profile.get('host')
    if not host_want:
        run.skip(('host.leftover_process', 'network.link_flaps'), 'the profile has no host section')
    if host_want:
        host = run.facts.get('host') if isinstance(run.facts.get('host'), dict) else {}
        _hygiene.check_leftover_processes(run, host_want, host, devices)
        network = run.facts.get('network') if isinstance(run.facts.get('network'), dict) else {}
        _links.check_link_flaps(run, host_want, network)


# ---------------------------------------------------------------------------------------------
# Software.

_SOFTWARE = (
    # check, fact key, exact key, min key, probes, label
    ('software.driver_version', 'driver_version', 'driver_version', 'driver_version_min', ['nvidia_query_gpu', 'nvidia_smi_xml'],
     'NVIDIA driver'),
    ('software.cuda_driver_version', 'cuda_driver_version', None, 'cuda_driver_version_min', ['nvidia_smi_xml'],
     'CUDA version of the driver'),
    ('software.cuda_toolkit_version', 'cuda_toolkit_version', 'cuda_toolkit_version', 'cuda_toolkit_version_min', ['nvcc'],
     'CUDA toolkit'),
    ('software.nccl_version', 'nccl_version', 'nccl_version', 'nccl_version_min', ['nccl_version'], 'NCCL'),
)


NCCL_LOOKED_AT = (' (looked for libnccl.so.2 in xuanwu_nccl_library_globs, nccl_tests_build_nccl_home, the NCCL wheel on '
                  "the sys.path of xuanwu_torch_python, the dynamic loader's path and the usual places)")


def _nccl_library_note(soft, exact, minimum):
    """Which library the NCCL version was read from and how it was found, and another library found that would pass."""
    library = soft.get('nccl_library') if isinstance(soft.get('nccl_library'), dict) else None
    if not library:
        return ''
    note = ' (%s: %s)' % (library.get('path'), library.get('found_by'))
    for other in library.get('others') or ():
        version = other.get('version') if isinstance(other, dict) else None
        if version and (exact is None or version_matches(version, exact)) and (minimum is None or version_at_least(version, minimum)):
            note += ('; %s (%s) is %s, as the profile wants: point xuanwu_nccl_library_globs (or xuanwu_torch_python) at the '
                     'library the workloads load' % (other.get('path'), other.get('found_by'), version))
            break
    return note


def check_software(run):
    want = run.profile.get('software')
    if not want:
        run.skip([spec[0] for spec in _SOFTWARE], 'the profile has no software section')
        return
    soft = run.facts.get('software') if isinstance(run.facts.get('software'), dict) else {}
    gpu = run.facts.get('gpu') if isinstance(run.facts.get('gpu'), dict) else {}
    for check, fact, exact_key, min_key, probes, label in _SOFTWARE:
        exact = want.get(exact_key) if exact_key else None
        minimum = want.get(min_key)
        if exact is None and minimum is None:
            run.skip([check], 'the profile sets no software.%s' % ' or software.'.join(k for k in (exact_key, min_key) if k))
            continue
        value = soft.get(fact)
        if value is None and fact in ('driver_version', 'cuda_driver_version'):
            value = gpu.get(fact)
        component = CHECKS[check]['component_kind']
        expected = ' and '.join(x for x in (exact, ('>= %s' % minimum) if minimum else None) if x)
        if value is None:
            if fact in ('driver_version', 'cuda_driver_version') and gpu.get('installed') is False:
                if not (run.profile.get('gpu') or {}).get('count'):
                    run.add(check, component, 'not installed', expected, '%s: nvidia-smi is not installed' % label)
                else:
                    run.unmeasured([check], '%s: nvidia-smi is not installed (gpu.driver_missing)' % label)
                continue
            states = [s for p in probes for s in run.statuses(p)]
            if 'ok' in states or 'missing' in states:
                run.add(check, component, 'not found', expected, '%s not found on the node; profile wants %s%s' % (
                    label, expected, NCCL_LOOKED_AT if fact == 'nccl_version' else ''))
            else:
                run.unknown(probes, component, '%s version' % label, checks=(check,))
            continue
        bad = []
        if exact is not None and not version_matches(value, exact):
            bad.append('does not match %s' % exact)
        if minimum is not None and not version_at_least(value, minimum):
            bad.append('is older than %s' % minimum)
        if bad:
            run.add(check, component, str(value), expected, '%s %s %s%s' % (label, value, ' and '.join(bad),
                                                                            _nccl_library_note(soft, exact, minimum)
                                                                            if fact == 'nccl_version' else ''))

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node's half of a probe: which commands run, how their raw output is obtained (live, from a capture bundle, or
from the outputs a node returned), the capture bundle, and the filter that keeps a process list's secrets on the node.

The node imports only this (and _bundle, _commands): no parser. node_validate's node answers with the raw
outputs (``node_probe`` ``parse: false``) and the controller, which has the parsers loaded once per run, parses them
(_probe; docs/architecture.md, "Cost per host"). Nothing here imports Ansible.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import fnmatch
import json
import os
import re
import time

from ansible_collections.xuanwu.cluster.plugins.module_utils import _bundle
from ansible_collections.xuanwu.cluster.plugins.module_utils._bundle import BundleError, MANIFEST
from ansible_collections.xuanwu.cluster.plugins.module_utils._commands import DEFAULT_LEFTOVER_PATTERNS, PS_FORMAT, QUERY_GPU_FIELDS
from ansible_collections.xuanwu.cluster.plugins.module_utils._commands import ROW_RE as PS_ROW_RE, is_kernel_thread

BUNDLE_FORMAT_VERSION = _bundle.BUNDLE_FORMAT_VERSION

GROUPS = ('host', 'gpu', 'xid', 'infiniband', 'network', 'software')

IB_COUNTER_GLOBS = ('/sys/class/infiniband/*/ports/*/counters/*',)

# Interfaces that are never a data or management NIC of a node.
VIRTUAL_IFACE_PATTERNS = ('lo', 'docker*', 'veth*', 'virbr*', 'podman*', 'cni*', 'flannel*', 'cali*', 'vxlan*',
                          'ifb*', 'br-*', 'tun*', 'tap*', 'kube-*', 'cilium*', 'weave*', 'dummy*', 'nodelocaldns')
VIRTUAL_KINDS = ('veth', 'bridge', 'ifb', 'dummy', 'vxlan', 'tun', 'tap', 'macvtap', 'wireguard', 'geneve', 'ipip',
                 'sit', 'gre', 'gretap', 'ip6tnl', 'nlmon')


class Alternative(object):
    """One way of obtaining a probe's raw output, and the parser for what it prints: its name, ``<module>.<function>``
    of _probe.PARSER_MODULES (a name, so that the node never imports the parsers)."""

    def __init__(self, parser, argv=None, path=None, globs=None, internal=None):
        self.parser = parser
        self.argv = argv
        self.path = path
        self.globs = globs
        self.internal = internal

    @property
    def command(self):
        if self.argv:
            return ' '.join(_quote(a) for a in self.argv)
        if self.path:
            return 'cat %s' % self.path
        if self.globs:
            return 'grep -H . %s' % ' '.join(self.globs)
        return 'internal:%s' % self.internal


def _quote(arg):
    if arg and re.match(r'^[A-Za-z0-9_@%+=:,./-]+$', arg):
        return arg
    return "'%s'" % arg.replace("'", "'\"'\"'")


class Probe(object):
    """A probe: its key, the group that switches it on, the profile sections its facts feed (``feeds``,
    a space-separated string: a failed probe fails the checks of those sections and only warns
    elsewhere), the ways to obtain its output (``alternatives``, tried in order), a note for the
    probe table of docs/capture-format.md (``_probe.probes_markdown``) and where its facts land.

    ``lands``: the fact path (``'host.memory'``, a string: the node never imports the facts code) at which
    ``_probe.place`` puts the parser's result as it is; the facts schema's ``probe`` of that fact is derived from
    it (``_facts``). None for a probe whose facts ``_probe`` assembles by hand (``_probe.ASSEMBLED`` says why)."""

    def __init__(self, key, group, feeds, alternatives, note=None, lands=None):
        self.key = key
        self.group = group
        self.feeds = tuple(feeds.split())
        self.alternatives = alternatives
        self.note = note
        self.lands = lands

    @property
    def name(self):
        return self.key.split(':', 1)[0]


def base_probes(disk_paths=('/',)):
    """The probes that do not depend on what another probe found."""
    A = Alternative
    query = 'nvidia-smi --query-gpu=%s --format=csv' % ','.join(QUERY_GPU_FIELDS)
    return [
        Probe('os_release', 'host', 'host', [A('host.parse_os_release', path='/etc/os-release')], lands='host.os'),
        Probe('uname', 'host', 'host', [A('host.parse_uname', argv=['uname', '-a'])], lands='host.kernel'),
        Probe('kernel_modules', 'host', 'host', [A('host.parse_proc_modules', path='/proc/modules')], lands='host.kernel_modules'),
        Probe('chrony', 'host', 'host', [A('host.parse_chronyc_tracking', argv=['chronyc', '-c', 'tracking'])]),
        Probe('listening', 'host', 'host', [A('host.parse_ss_listening', argv=['ss', '-H', '-l', '-n', '-t', '-u', '-p']),
                                            A('host.parse_proc_net_listening', internal='proc_net_listening')],
              note='(without `ss`: /proc/net/tcp, tcp6, udp, udp6, which do not name the process)', lands='host.listening'),
        Probe('disks', 'host', 'host', [A('host.parse_df', argv=['df', '-P', '-B1'] + list(disk_paths))], note='(`disk_paths`)'),
        Probe('memlock', 'host', 'host', [A('host.parse_ulimit_memlock', argv=['sh', '-c', 'ulimit -l'])]),
        Probe('meminfo', 'host', 'host', [A('host.parse_meminfo', path='/proc/meminfo')], lands='host.memory'),
        Probe('mounts', 'host', 'host', [A('host.parse_proc_mounts', path='/proc/mounts')],
              note='(device, mount point and type are kept: the options of a mount can name its credentials)', lands='host.mounts'),
        Probe('lspci', 'host', 'host', [A('host.parse_lspci_acs', argv=['lspci', '-vvv'])], lands='host.pcie_acs'),
        Probe('processes', 'host', 'host', [A('host.parse_ps', argv=['ps', '-e', '-ww', '-o', PS_FORMAT])],
              note='(a bundle holds the whole list: command lines can carry secrets, look before sharing it)'),
        Probe('nvidia_query_gpu', 'gpu', 'gpu software', [A('nvidia.parse_query_gpu', argv=query.split(' '))]),
        Probe('nvidia_smi_xml', 'gpu', 'gpu software', [A('nvidia.parse_smi_xml', argv=['nvidia-smi', '-q', '-x'])]),
        Probe('nvidia_topo', 'gpu', 'gpu', [A('nvidia.parse_topo_matrix', argv=['nvidia-smi', 'topo', '-m'])], lands='gpu.topology'),
        Probe('nvidia_nvlink', 'gpu', 'gpu', [A('nvidia.parse_nvlink_status', argv=['nvidia-smi', 'nvlink', '--status'])], lands='gpu.nvlink'),
        Probe('nvidia_nvlink_errors', 'gpu', 'gpu', [A('nvidia.parse_nvlink_errors', argv=['nvidia-smi', 'nvlink', '-e'])],
              note='(error counters of every link since the driver loaded or they were reset)', lands='gpu.nvlink_errors'),
        Probe('nvidia_proc_version', 'gpu', 'gpu software', [A('nvidia.parse_proc_driver_version', path='/proc/driver/nvidia/version')],
              note="(the loaded kernel module's own version)", lands='gpu.kernel_module'),
        Probe('kernel_log', 'xid', 'gpu host', [A('nvidia.parse_xid_events', argv=['journalctl', '-k', '-b', '--no-pager', '-o', 'short-iso']),
                                                A('nvidia.parse_xid_events', argv=['dmesg'])],
              note='(parsed twice: Xid events and link events)', lands='gpu.xid_events'),
        Probe('ibstat', 'infiniband', 'infiniband', [A('ib.parse_ibstat', argv=['ibstat'])]),
        Probe('ib_counters', 'infiniband', 'infiniband', [A('ib.parse_ib_counters', globs=list(IB_COUNTER_GLOBS))]),
        Probe('ip_link', 'network', 'network', [A('net.parse_ip_link', argv=['ip', '-j', '-d', 'link', 'show'])]),
        Probe('nvcc', 'software', 'software', [A('nvidia.parse_nvcc_version', argv=['nvcc', '--version']),
                                               A('nvidia.parse_nvcc_version', argv=['/usr/local/cuda/bin/nvcc', '--version'])],
              lands='software.cuda_toolkit_version'),
        Probe('nccl_version', 'software', 'software', [A('host.parse_nccl_version', internal='nccl_version')],
              note='(`ncclGetVersion` of the `libnccl.so.2` the workloads load, and how it was found)', lands='software.nccl_version'),
    ]


# Where ROCm installs its tools when they are not on PATH.
ROCM_BIN = '/opt/rocm/bin'
AMD_TOOLS = ('amd-smi', 'rocm-smi')


def amd_probes():
    """The AMD GPU probes (ROCm ``amd-smi``, else ``rocm-smi`` where a probe has a rocm-smi form). They run
    only on a node that has one of AMD_TOOLS (run_probes), so a node without ROCm reads as before."""
    A = Alternative

    def tool(parser, name, args):
        return [A(parser, argv=[name] + args), A(parser, argv=['%s/%s' % (ROCM_BIN, name)] + args)]

    return [
        Probe('amd_static', 'gpu', 'gpu software', tool('amd.parse_amd_static', 'amd-smi', ['static', '--json'])
              + tool('amd.parse_rocm_smi_allinfo', 'rocm-smi', ['--showallinfo', '--json']),
              note='(AMD nodes: run when amd-smi or rocm-smi is installed)'),
        Probe('amd_metric', 'gpu', 'gpu', tool('amd.parse_amd_metric', 'amd-smi', ['metric', '--json']),
              note='(ECC counters, PCIe link, temperatures)'),
        Probe('amd_bad_pages', 'gpu', 'gpu', tool('amd.parse_amd_bad_pages', 'amd-smi', ['bad-pages', '--json'])),
        Probe('amd_topology', 'gpu', 'gpu', tool('amd.parse_amd_topology', 'amd-smi', ['topology', '--json'])
              + tool('amd.parse_rocm_smi_topo', 'rocm-smi', ['--showtopo', '--json'])),
        Probe('amd_xgmi', 'gpu', 'gpu', tool('amd.parse_amd_xgmi', 'amd-smi', ['xgmi', '--json']), lands='gpu.xgmi'),
        Probe('amd_version', 'gpu', 'software', tool('amd.parse_amd_version', 'amd-smi', ['version'])),
    ]


def end_probes():
    """The probes read again at the end of a validation run (``stage: end``): the InfiniBand error
    counters, whose growth during the load the workload_check kind ``link_counters`` judges."""
    return [Probe('ib_counters_end', 'infiniband', 'infiniband', [Alternative('ib.parse_ib_counters', globs=list(IB_COUNTER_GLOBS))],
                  note='read again at the end of a run (`node_probe` `stage: end`, docs/facts.md); optional: a bundle without '
                       'it replays, and the growth check then reports `workload.ib_counters_unread`', lands='infiniband.counters')]


# Outputs of one probe parsed a second time for other facts: the kernel log also holds link events, the NCCL probe
# says which library it judged. Each is
# ``(key, parser, lands)``: its result is parsed[key], put at the fact path ``lands`` as Probe's ``lands`` is.
DERIVED_PARSERS = {'kernel_log': (('link_events', 'net.parse_link_events', 'network.link_events'),),
                   'nccl_version': (('nccl_library', 'host.parse_nccl_library', 'software.nccl_library'),)}


def landings(stage='start'):
    """Where ``_probe.place`` puts the results of the probes of ``stage`` (``end``: the end_probes) that declare
    ``lands``: ``[(parsed key, probe name, fact path)]`` in the order the probes run, each derived parser's
    (DERIVED_PARSERS) after its probe. The facts schema takes its ``probe`` of these facts from here."""
    probes = end_probes() if stage == 'end' else base_probes() + amd_probes()
    out = []
    for probe in probes:
        if probe.lands:
            out.append((probe.key, probe.name, probe.lands))
        out.extend((key, probe.name, lands) for key, _parser, lands in DERIVED_PARSERS.get(probe.key, ()))
    return out


def interface_probes(ifname, rdma=True):
    """The probes run once per selected network interface.

    The RoCE probes (ECN knobs, PFC) only run on interfaces backed by an RDMA device (``rdma``):
    on other NICs the tools answer "not supported", which says nothing about the node.
    """
    A = Alternative
    ecn = '/sys/class/net/%s/ecn/roce_%s/enable/*'
    probes = [
        Probe('ethtool:' + ifname, 'network', 'network', [A('net.parse_ethtool', argv=['ethtool', ifname])]),
        Probe('ethtool_driver:' + ifname, 'network', 'network', [A('net.parse_ethtool_driver', argv=['ethtool', '-i', ifname])]),
    ]
    if rdma:
        probes += [
            Probe('roce_ecn:' + ifname, 'network', 'network',
                  [A('net.parse_roce_ecn', globs=[ecn % (ifname, 'np'), ecn % (ifname, 'rp')])]),
            Probe('roce_pfc:' + ifname, 'network', 'network', [A('net.parse_dcb_pfc', argv=['dcb', '-j', 'pfc', 'show', 'dev', ifname]),
                                                               A('net.parse_mlnx_qos', argv=['mlnx_qos', '-i', ifname])]),
        ]
    return probes


def storage_probes(paths):
    """One ``storage_read:<path>`` probe per path of a profile's host.storage that asks for a read figure."""
    return [Probe('storage_read:' + path, 'host', 'host', [Alternative('host.parse_storage_read', internal='storage_read:' + path)],
                  note='(the `host.storage` paths with `read_mb_s_min`: a bounded read, `read_max_gib` / `read_max_s`)')
            for path in paths]


def all_probes():
    """Every probe once (per-interface ones for an interface named ``IF``, disks for ``PATH...``, a storage read for
    ``PATH``)."""
    return base_probes(disk_paths=('PATH...',)) + storage_probes(['PATH']) + amd_probes() + end_probes() + interface_probes('IF')


# probe name -> the profile sections its facts feed (the checks' view of a failed probe)
FEEDS = dict((probe.name, probe.feeds) for probe in all_probes())


def has_rdma_device(ifname):
    """True when the interface is backed by an RDMA device (mlx5 RoCE or IPoIB)."""
    return os.path.isdir('/sys/class/net/%s/device/infiniband' % ifname)


def select_interfaces(links, wanted=None):
    """Pick the interfaces to probe from parsed ``ip link`` facts.

    ``wanted`` is a list of names or shell globs; by default every interface that is not loopback
    or virtual (container, bridge, tunnel) is probed.
    """
    names = sorted(links)
    if wanted:
        return [n for n in names if any(fnmatch.fnmatchcase(n, pat) for pat in wanted)]
    chosen = []
    for name in names:
        info = links[name] or {}
        if any(fnmatch.fnmatchcase(name, pat) for pat in VIRTUAL_IFACE_PATTERNS):
            continue
        if info.get('kind') in VIRTUAL_KINDS or info.get('link_type') == 'loopback':
            continue
        chosen.append(name)
    return chosen


# ---------------------------------------------------------------------------------------------
# Runners: where raw output comes from.

class Output(object):
    def __init__(self, status, command, rc=None, stdout='', stderr='', alternative=None):
        self.status = status          # ok | missing | failed | skipped | parse_error (a bundle file not read)
        self.command = command
        self.rc = rc
        self.stdout = stdout or ''
        self.stderr = stderr or ''
        self.alternative = alternative
        self.note = None
        self.rows = None              # a process list filtered on the node: how many processes it listed


class LiveRunner(object):
    """Obtains output on the node itself.

    ``run`` is ``run(argv) -> (rc, stdout, stderr)`` and ``which`` is ``which(name) -> path or
    None``; the module passes thin wrappers of ``AnsibleModule.run_command``/``get_bin_path``.
    ``internals`` maps internal probe names to functions returning text.
    """

    replay = False

    def __init__(self, run, which, internals=None, timeout=60):
        self._run = run
        self._which = which
        self._internals = internals or {}
        self._timeout = timeout
        self._timeout_bin = which('timeout')

    def has_tool(self, name):
        """True when ``name`` is on PATH or in ROCM_BIN."""
        return bool(self._which(name)) or os.access(os.path.join(ROCM_BIN, name), os.X_OK)

    def obtain(self, probe):
        last = None
        for alt in probe.alternatives:
            out = self._obtain_one(alt)
            out.alternative = alt
            if out.status != 'missing':
                return out
            last = out
        return last

    def _obtain_one(self, alt):
        if alt.argv:
            exe = alt.argv[0] if os.path.isabs(alt.argv[0]) and os.access(alt.argv[0], os.X_OK) else self._which(alt.argv[0])
            if not exe:
                return Output('missing', alt.command, rc=127, stderr='%s: command not found' % alt.argv[0])
            argv = [exe] + list(alt.argv[1:])
            if self._timeout_bin and self._timeout:
                argv = [self._timeout_bin, '-k', '5', str(self._timeout)] + argv
            rc, stdout, stderr = self._run(argv)
            if rc == 124 and self._timeout_bin:
                return Output('failed', alt.command, rc=rc, stdout=stdout,
                              stderr='timed out after %ss; %s' % (self._timeout, stderr or ''))
            return Output('ok' if rc == 0 else 'failed', alt.command, rc=rc, stdout=stdout, stderr=stderr)
        if alt.path:
            if not os.path.exists(alt.path):
                return Output('missing', alt.command, rc=1, stderr='%s: no such file' % alt.path)
            try:
                with open(alt.path, 'r') as handle:
                    return Output('ok', alt.command, rc=0, stdout=handle.read())
            except (IOError, OSError) as err:
                return Output('failed', alt.command, rc=1, stderr=str(err))
        if alt.globs:
            return Output('ok', alt.command, rc=0, stdout=read_globs(alt.globs))
        func = self._internals.get(alt.internal)
        if func is None:
            return Output('missing', alt.command, rc=127, stderr='no internal probe %s' % alt.internal)
        try:
            text = func()
        except Exception as err:  # pylint: disable=broad-except
            return Output('failed', alt.command, rc=1, stderr=str(err))
        if text is None:
            return Output('missing', alt.command, rc=127, stderr='not found')
        return Output('ok', alt.command, rc=0, stdout=text)


# The bounded read of a dataset path (storage_read:<path>) reads blocks of this size.
READ_BLOCK = 4 << 20


def _files_under(path):
    """The regular files of ``path`` (itself, or the tree under it in name order; links are not followed)."""
    if os.path.isfile(path) and not os.path.islink(path):
        yield path
        return
    for folder, dirs, names in os.walk(path):
        dirs.sort()
        for name in sorted(names):
            full = os.path.join(folder, name)
            if os.path.isfile(full) and not os.path.islink(full):
                yield full


# A read of the storage probe that gives no answer this long after its own time bound (read_max_s) is a hung mount.
STORAGE_READ_GRACE_SECONDS = 5.0
# Each file's cache state, weakest last: read with O_DIRECT (never through the page cache), its cached pages dropped
# first (POSIX_FADV_DONTNEED accepted), or read through whatever the cache held.
CACHE_STATES = ('direct', 'dropped', 'kept')


class StorageReadTimeout(OSError):
    """The read gave no answer within its bound and the grace: a hung mount (the probe fails, naming the path)."""


def storage_read_text(path, max_bytes=1 << 30, max_seconds=10.0, clock=None, reader=None):
    """The internal probe ``storage_read:<path>``: read the files under ``path`` until ``max_bytes`` or ``max_seconds``
    (_storage_read), in a child process that is given ``max_seconds`` + STORAGE_READ_GRACE_SECONDS to answer: a read
    blocked in the kernel (a hung NFS mount) cannot be interrupted, so it is left there and StorageReadTimeout names
    the path; the probe never hangs. ``key=value`` lines for _parse_host.parse_storage_read."""
    reader = reader or _storage_read
    if not hasattr(os, 'fork'):
        return reader(path, max_bytes, max_seconds, clock)
    import select
    import signal
    limit = max_seconds + STORAGE_READ_GRACE_SECONDS
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            data = reader(path, max_bytes, max_seconds, clock).encode('utf-8', 'replace')
            while data:
                data = data[os.write(write_fd, data):]
            os._exit(0)
        except BaseException:  # pylint: disable=broad-except
            os._exit(70)
    os.close(write_fd)
    chunks, done = [], False
    deadline = time.time() + limit
    try:
        while True:
            left = deadline - time.time()
            if left <= 0:
                break
            ready = select.select([read_fd], [], [], min(left, 1.0))[0]
            if not ready:
                continue
            data = os.read(read_fd, 65536)
            if not data:
                done = True
                break
            chunks.append(data)
    finally:
        os.close(read_fd)
        if not done:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for _wait in range(25):
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
            except OSError:
                break
            time.sleep(0.02)
    if not done:
        raise StorageReadTimeout(errno.ETIMEDOUT, '%s: the read gave no answer in %g s (read_max_s %g + %g): a hung mount?'
                                 % (_printable(path), limit, max_seconds, STORAGE_READ_GRACE_SECONDS))
    text = b''.join(chunks).decode('utf-8', 'replace')
    if not text.strip():
        raise OSError(errno.EIO, '%s: the read ended without an answer' % _printable(path))
    return text


def _printable(text):
    return re.sub(r'[\x00-\x1f\x7f]', ' ', text)


def _open_cold(name, direct):
    """``(fd, cache state)``: the file opened with O_DIRECT where its file system takes it, else opened and its cached
    pages dropped (``dropped`` when the kernel accepted the advice, else ``kept``)."""
    if direct:
        try:
            return os.open(name, os.O_RDONLY | direct), 'direct'
        except OSError as err:
            if err.errno not in (errno.EINVAL, errno.EOPNOTSUPP):
                raise
    handle = os.open(name, os.O_RDONLY)
    state = 'kept'
    if hasattr(os, 'posix_fadvise'):
        try:
            os.posix_fadvise(handle, 0, 0, os.POSIX_FADV_DONTNEED)
            state = 'dropped'
        except OSError:
            pass
    return handle, state


def _storage_read(path, max_bytes=1 << 30, max_seconds=10.0, clock=None):
    """The read itself: the files under ``path`` in name order, each opened cold (_open_cold), until ``max_bytes`` or
    ``max_seconds``. ``complete`` is true only when every file was read to its end within the bounds; ``cache`` is the
    weakest of the files' cache states (CACHE_STATES)."""
    import mmap
    clock = clock or getattr(time, 'monotonic', time.time)
    direct = getattr(os, 'O_DIRECT', 0)
    buf = mmap.mmap(-1, READ_BLOCK)      # page-aligned, as O_DIRECT needs
    total, count, error, complete, cache = 0, 0, None, True, 'direct'
    if not os.path.exists(path):
        error, complete = '%s: no such file or directory' % path, False
    start = clock()
    for name in _files_under(path) if error is None else ():
        if total >= max_bytes or clock() - start >= max_seconds:
            complete = False
            break
        try:
            handle, state = _open_cold(name, direct)
        except OSError as err:
            error = error or '%s: %s' % (name, err.strerror)
            complete = False
            continue
        cache = max(cache, state, key=CACHE_STATES.index)
        at_end = False
        try:
            while total < max_bytes and clock() - start < max_seconds:
                size = os.readv(handle, [memoryview(buf)])
                if not size:
                    at_end = True
                    break
                total += min(size, max_bytes - total)
        except OSError as err:
            error = error or '%s: %s' % (name, err.strerror)
        finally:
            os.close(handle)
        count += 1
        if not at_end:
            complete = False
    seconds = clock() - start
    buf.close()
    lines = ['path=%s' % _printable(path), 'bytes=%d' % total, 'seconds=%.3f' % seconds, 'files=%d' % count,
             'cache=%s' % (cache if count else 'kept'), 'complete=%s' % ('true' if complete and error is None else 'false')]
    if error:
        lines.append('error=%s' % _printable(error))
    return '\n'.join(lines) + '\n'


PROC_NET_FILES = ('tcp', 'tcp6', 'udp', 'udp6')


def proc_net_listening_text(root='/proc/net'):
    """The internal probe ``proc_net_listening``: each of PROC_NET_FILES under ``root`` after a line ``== /proc/net/<name>``
    (parsed by _parse_host.parse_proc_net_listening); None when none can be read."""
    parts = []
    for name in PROC_NET_FILES:
        try:
            with open(os.path.join(root, name), 'r') as handle:
                parts.append('== /proc/net/%s\n%s' % (name, handle.read()))
        except (IOError, OSError):
            continue
    return ''.join(p if p.endswith('\n') else p + '\n' for p in parts) if parts else None


def read_globs(patterns):
    """Read small sysfs files in ``grep -H . PATTERN...`` format: ``path:first-line``."""
    import glob
    lines = []
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            try:
                with open(path, 'r') as handle:
                    value = handle.readline().rstrip('\n')
            except (IOError, OSError):
                continue
            if value != '':
                lines.append('%s:%s' % (path, value))
    return '\n'.join(lines) + ('\n' if lines else '')


class HeldRunner(object):
    """A runner over outputs read already (``entries``: probe key -> entry): a capture bundle, a node's answer. It
    answers the probes it holds, the AMD ones and the interfaces' included (collect)."""

    replay = True
    held = 'not held'     # why a probe it does not hold was skipped

    def __init__(self):
        self.entries = {}

    def keys(self):
        return list(self.entries)

    def has_tool(self, name):
        """The AMD probes are read where they are held (collect asks for any of AMD_TOOLS)."""
        return any(key.startswith('amd_') for key in self.entries)

    def entry(self, probe):
        """``(entry, None)``, or ``(None, the skipped output)`` for a probe not held."""
        entry = self.entries.get(probe.key)
        if entry is None:
            return None, Output('skipped', probe.alternatives[0].command, stderr=self.held)
        return entry, None


class ReplayRunner(HeldRunner):
    """Reads a capture bundle: ``manifest.json`` plus one file per probe (docs/capture-format.md).

    The bundle is untrusted input (_bundle): an invalid manifest is a BundleError; a file of one probe
    that cannot be read (a symbolic link, a FIFO, larger than ``max_bytes``) spoils only that probe
    (status ``parse_error`` naming the file and the reason).
    """

    held = 'not in the capture bundle'

    def __init__(self, directory, max_bytes=_bundle.MAX_FILE_BYTES):
        super(ReplayRunner, self).__init__()
        self.directory = directory
        self.max_bytes = max_bytes
        self.manifest = _bundle.load_manifest(directory, max_bytes)
        self.entries = dict((e['probe'], e) for e in self.manifest['probes'])

    def obtain(self, probe):
        entry, skipped = self.entry(probe)
        if entry is None:
            return skipped
        alt = probe.alternatives[0]
        for candidate in probe.alternatives:
            if candidate.command.split(' ')[0] == entry['command'].split(' ')[0]:
                alt = candidate
                break
        rc = entry.get('rc', 0)
        try:
            stdout, replaced = _bundle.read_entry(self.directory, entry, self.max_bytes)
        except BundleError as err:
            return Output('parse_error', entry['command'], rc=rc, stderr=str(err), alternative=alt)
        status = entry.get('status') or ('ok' if rc == 0 else ('missing' if rc == 127 else 'failed'))
        out = Output(status, entry['command'], rc=rc, stdout=stdout, stderr=entry.get('stderr', ''), alternative=alt)
        if replaced:
            out.note = '%s: %d byte sequence(s) that are not UTF-8 were read as U+FFFD' % (entry['file'], replaced)
        return out


def validate_manifest(manifest, directory):
    """Check a capture bundle's manifest (_bundle.validate_manifest); a BundleError names the key that is wrong."""
    return _bundle.validate_manifest(manifest, directory)


# ---------------------------------------------------------------------------------------------
# What the node collects, and the answer it returns.

def collect(runner, groups=GROUPS, interfaces=None, disk_paths=('/',), capture=None, stage='start', read_paths=()):
    """Obtain the raw output of every probe of the selected groups through ``runner``: ``[(probe, output)]`` in the
    order they ran. ``capture``, when given, is called with ``(probe, output)`` for every probe that ran. ``stage``
    ``end`` runs only the end_probes.

    The AMD probes run where the runner has one of AMD_TOOLS; the per-interface probes for the interfaces that
    ``ip -j link`` names (select_interfaces, on link_kinds of its output) on a live node, or for those the runner holds
    (a capture bundle, a node's answer), filtered by ``interfaces``."""
    groups = set(groups)
    replay = getattr(runner, 'replay', False)
    done = []

    def one(probe):
        out = runner.obtain(probe)
        if capture is not None and out.status != 'skipped':
            capture(probe, out)
        done.append((probe, out))
        return out

    ip_link = None
    for probe in base_probes(disk_paths) + storage_probes(read_paths) if stage == 'start' else end_probes():
        if probe.group in groups:
            out = one(probe)
            if probe.key == 'ip_link':
                ip_link = out
    has_tool = getattr(runner, 'has_tool', None)
    if 'gpu' in groups and stage == 'start' and has_tool is not None and any(has_tool(name) for name in AMD_TOOLS):
        for probe in amd_probes():
            if not replay or probe.key in runner.entries:
                one(probe)
    if 'network' in groups and stage == 'start':
        if replay:
            names = sorted(set(k.split(':', 1)[1] for k in runner.keys() if ':' in k))
            names = [n for n in names if not interfaces or any(fnmatch.fnmatchcase(n, p) for p in interfaces)]
        else:
            links = link_kinds(ip_link.stdout) if ip_link is not None and ip_link.status == 'ok' else {}
            names = select_interfaces(links, interfaces)
        for name in names:
            for probe in interface_probes(name, rdma=replay or has_rdma_device(name)):
                if not replay or probe.key in runner.entries:
                    one(probe)
    return done


def link_kinds(text):
    """``{ifname: {kind, link_type}}`` of ``ip -j -d link show``: what select_interfaces reads, and no more, so that the
    node needs no parser. The same rule as _parse_net.parse_ip_link: output that is not a JSON list of link objects,
    each with an ``ifname``, is ``{}`` (no interface probed; the parser then reports why), and a value of the wrong
    type is None."""
    try:
        data = json.loads(text) if text.strip() else []
    except ValueError:
        return {}
    if not isinstance(data, list) or not all(isinstance(entry, dict) and isinstance(entry.get('ifname'), str)
                                             and entry.get('ifname') for entry in data):
        return {}
    links = {}
    for entry in data:
        info = entry.get('linkinfo')
        kind = info.get('info_kind') if isinstance(info, dict) else None
        link_type = entry.get('link_type')
        links[entry['ifname']] = {'kind': kind if isinstance(kind, str) else None,
                                  'link_type': link_type if isinstance(link_type, str) else None}
    return links


_GPU_PID_RE = re.compile(r'<pid>\s*([0-9]+)\s*</pid>')


def gpu_pids(smi_xml):
    """The pids of the GPU processes that ``nvidia-smi -q -x`` lists (its ``<process_info><pid>`` elements)."""
    return set(int(pid) for pid in _GPU_PID_RE.findall(smi_xml or ''))


def filter_processes(text, patterns, keep_pids=()):
    """``(kept text, rows)``: the lines of a process list (``ps -o`` PS_FORMAT) that the facts use, and how many
    processes it listed (kernel threads left out, as parse_ps counts them).

    Kept: a header line; every process whose command line matches one of ``patterns`` (regular expressions; one that
    does not compile matches nothing); the processes of ``keep_pids`` (those on a GPU) and their parents; and every
    line that is not a process row, so that the parser still reports it. The rest never leaves the node."""
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error:
            continue
    lines = text.replace('\r\n', '\n').replace('\r', '\n').split('\n')
    rows, parent = [], {}
    for index, line in enumerate(lines):
        match = PS_ROW_RE.match(line.strip())
        if match:
            pid, ppid, args = int(match.group(1)), int(match.group(2)), (match.group(5) or '').strip()
            if not is_kernel_thread(ppid, args):
                rows.append((index, pid, args))
                parent[pid] = ppid
    wanted = set(keep_pids) | set(parent[pid] for pid in keep_pids if pid in parent)
    kept = set(index for index, pid, args in rows if pid in wanted or any(regex.search(args) for regex in compiled))
    # a kernel thread's row is left out, as the parser leaves it out; a line that is no row at all is kept
    out = [line for index, line in enumerate(lines) if index in kept or (line.strip() and not PS_ROW_RE.match(line.strip()))]
    return '\n'.join(out) + ('\n' if out else ''), len(rows)


def filter_mounts(text):
    """``/proc/mounts`` without the mount options (a CIFS, Ceph or FUSE mount can name its credentials in them): each
    line of six fields keeps its device, mount point, type and counters, and ``ro`` or ``rw`` for its options, as much as
    the parser reads; any other line is kept, so that the parser still reports it."""
    out = []
    for line in text.replace('\r\n', '\n').replace('\r', '\n').split('\n'):
        fields = line.split()
        if len(fields) == 6:
            fields[3] = 'ro' if 'ro' in fields[3].split(',') else 'rw'
            line = ' '.join(fields)
        out.append(line)
    return '\n'.join(out)


def answer(done, process_patterns=None):
    """The raw outputs a node returns for the controller to parse (``node_probe`` ``parse: false``): one record per
    probe of ``done`` (collect's result), ``{probe, alternative, status, command, rc, stdout, stderr[, note][, rows]}``;
    the process list filtered on the node (filter_processes, ``rows`` the processes it listed) and the mounts without
    their options (filter_mounts): what the parsers leave out because it can carry secrets never leaves the node."""
    if process_patterns is None:
        process_patterns = DEFAULT_LEFTOVER_PATTERNS
    smi_xml = next((out.stdout for probe, out in done if probe.key == 'nvidia_smi_xml'), '')
    records = []
    for probe, out in done:
        alternative = probe.alternatives.index(out.alternative) if out.alternative in probe.alternatives else 0
        record = {'probe': probe.key, 'alternative': alternative, 'status': out.status, 'command': out.command, 'rc': out.rc,
                  'stdout': out.stdout, 'stderr': out.stderr}
        if out.note:
            record['note'] = out.note
        if probe.key == 'processes':
            record['stdout'], record['rows'] = filter_processes(out.stdout, process_patterns, gpu_pids(smi_xml))
        elif probe.key == 'mounts':
            record['stdout'] = filter_mounts(out.stdout)
        records.append(record)
    return records


# ---------------------------------------------------------------------------------------------
# Capture bundles.

_SAFE = re.compile(r'[^A-Za-z0-9_.-]+')


def bundle_filename(key):
    return _SAFE.sub('_', key.replace(':', '__')) + '.txt'


class BundleWriter(object):
    """Collects raw outputs during a probe and writes them as a capture bundle.

    ``write`` makes ``directory`` fresh with mode 0700 (or uses it when it is an empty directory of the
    running user, _bundle.private_dir) and creates every file exclusively with mode 0600, never
    through a symbolic link: a planted ``manifest.json`` link is an error, not a file overwritten.
    """

    def __init__(self, directory):
        self.directory = directory
        self.entries = []
        self.files = {}

    def __call__(self, probe, out):
        name = bundle_filename(probe.key)
        self.files[name] = out.stdout
        entry = {'probe': probe.key, 'command': out.command, 'rc': out.rc, 'status': out.status, 'file': name}
        if out.stderr:
            entry['stderr'] = out.stderr[:4000]
        self.entries.append(entry)

    def manifest(self, meta=None):
        manifest = {'format_version': BUNDLE_FORMAT_VERSION, 'probes': self.entries}
        manifest.update(meta or {})
        return manifest

    def write(self, meta=None):
        """Write the bundle; a BundleError (the directory refused) or OSError (a file not created) otherwise."""
        dir_fd = _bundle.private_dir(self.directory)
        try:
            for name in sorted(self.files):
                _bundle.write_private(dir_fd, name, self.files[name])
            _bundle.write_private(dir_fd, MANIFEST, json.dumps(self.manifest(meta), indent=2, sort_keys=True) + '\n')
        finally:
            os.close(dir_fd)
        return sorted(self.files) + [MANIFEST]


# ---------------------------------------------------------------------------------------------
# Internal probes.

NCCL_GLOBS = (
    '/usr/lib/x86_64-linux-gnu/libnccl.so.2*',
    '/usr/lib/aarch64-linux-gnu/libnccl.so.2*',
    '/usr/lib64/libnccl.so.2*',
    '/usr/local/lib/libnccl.so.2*',
    '/usr/local/cuda*/lib64/libnccl.so.2*',
    '/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2*',
    '/usr/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2*',
    '/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2*',
    '/opt/*/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2*',
    '/opt/*/venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2*',
    '/usr/local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2*',
)


# The NCCL a run's workloads load, in the order they are preferred (nccl_version_text): what the site named, the NCCL
# that nccl-tests was built against, the wheel PyTorch loads, what the dynamic loader gives a program that asks for
# ``libnccl.so.2`` by name, then the usual places.
NCCL_FOUND_BY = {
    'globs': 'named by xuanwu_nccl_library_globs',
    'nccl_home': 'the NCCL that nccl-tests is built against (nccl_tests_build_nccl_home %s)',
    'python': 'the NCCL wheel on the sys.path of xuanwu_torch_python (%s), the one PyTorch loads',
    'loader': 'the dynamic loader\'s libnccl.so.2 (ld.so.cache, LD_LIBRARY_PATH): what a program without its own path loads',
    'usual': 'a usual place (%s)',
}
# Asked of the torch Python: the NCCL wheel's library on its sys.path, where torch looks for it (one path a line).
_WHEEL_NCCL_SCRIPT = ('import glob, os, sys\n'
                      'for d in filter(None, sys.path):\n'
                      '    for p in sorted(glob.glob(os.path.join(d, "nvidia", "nccl", "lib", "libnccl.so.2*"))):\n'
                      '        print(os.path.abspath(p))\n')
# Seconds the torch Python may take to answer (it imports nothing but glob).
NCCL_PYTHON_TIMEOUT = 20


def _python_wheel_nccl(python):
    """The ``libnccl.so.2*`` of the NCCL wheel on ``python``'s sys.path, or [] (no such Python, no wheel, no answer
    within NCCL_PYTHON_TIMEOUT seconds: the Python is stopped)."""
    import subprocess
    timeout = NCCL_PYTHON_TIMEOUT
    if not python or '\n' in python or '\0' in python:
        return []
    try:
        # its own session: on a timeout the whole group is stopped, so that no child of a wrapper script keeps the pipe
        proc = subprocess.Popen([python, '-c', _WHEEL_NCCL_SCRIPT], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=dict(os.environ, LC_ALL='C'), start_new_session=True)
    except (OSError, ValueError):
        return []
    try:
        out, _err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            proc.kill()
        try:
            proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        return []
    if proc.returncode != 0:
        return []
    return [line for line in out.decode('utf-8', 'replace').splitlines() if line.startswith('/')]


def _loaded_path(soname_fragment):
    """The file of the first mapping of this process whose path holds ``soname_fragment`` (/proc/self/maps), or None."""
    try:
        with open('/proc/self/maps', 'r') as handle:
            for line in handle:
                parts = line.split(None, 5)
                if len(parts) == 6 and soname_fragment in os.path.basename(parts[5].strip()):
                    return parts[5].strip()
    except (IOError, OSError):
        pass
    return None


def _nccl_code(lib):
    import ctypes
    version = ctypes.c_int(0)
    if lib.ncclGetVersion(ctypes.byref(version)) == 0 and version.value > 0:
        return str(version.value)
    return None


def nccl_version_text(extra_globs=(), python=None, nccl_home=None):
    """Which NCCL the run's workloads load and its version, as text (``_parse_host.parse_nccl_library`` reads it), or None.

    One line per library found, tab-separated ``library <ncclGetVersion code or -> <path> <found by>``, the one judged
    first. Looked for in this order (NCCL_FOUND_BY): the site's ``extra_globs``; ``nccl_home`` (an absolute directory:
    the NCCL nccl-tests is built against); the NCCL wheel on the sys.path of ``python`` (the torch Python: PyTorch
    loads that one); the dynamic loader's ``libnccl.so.2``; then the usual system and pip-wheel places. The version is
    asked of the library itself (``ncclGetVersion`` through ctypes), else taken from the file name (``-`` when neither
    says). The loader's answer is taken before any library is loaded by path, so that it is the loader's own.
    """
    import ctypes
    import glob
    found = []      # [(path, how)] in order of preference, one entry per file

    def add(paths, how):
        for path in paths:
            if '\t' in path or '\n' in path or not os.path.isfile(path):
                continue
            real = os.path.realpath(path)
            if all(os.path.realpath(seen) != real for seen, _how in found):
                found.append((path, how))

    loader = None
    try:
        handle = ctypes.CDLL('libnccl.so.2')
        path = _loaded_path('libnccl.so')
        if path:
            loader = (path, _nccl_code(handle))
    except (OSError, AttributeError):
        pass
    for pattern in extra_globs:
        add(sorted(glob.glob(pattern)), NCCL_FOUND_BY['globs'] + ' (%s)' % pattern)
    if nccl_home and os.path.isabs(nccl_home):
        add(sorted(glob.glob(os.path.join(nccl_home, 'lib*', 'libnccl.so.2*'))), NCCL_FOUND_BY['nccl_home'] % nccl_home)
    if python:
        add(_python_wheel_nccl(python), NCCL_FOUND_BY['python'] % python)
    if loader:
        add([loader[0]], NCCL_FOUND_BY['loader'])
    if not found:
        for pattern in NCCL_GLOBS:
            add(sorted(glob.glob(pattern)), NCCL_FOUND_BY['usual'] % pattern)
    if not found:
        return None
    lines = []
    for path, how in found:
        code = None
        if loader and os.path.realpath(path) == os.path.realpath(loader[0]):
            code = loader[1]
        else:
            try:
                code = _nccl_code(ctypes.CDLL(path))
            except (OSError, AttributeError):
                code = None
        if code is None:
            match = re.search(r'libnccl\.so\.(\d+\.\d+\.\d+)', path)
            code = match.group(1) if match else '-'
        lines.append('library\t%s\t%s\t%s' % (code, path, how))
    return '\n'.join(lines) + '\n'

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe engine: which commands a node probe runs, how their raw output is obtained (live or
from a capture bundle), and how the parsed outputs become one facts dictionary (docs/facts.md).

Nothing here imports Ansible: the module hands in a runner, tests hand in a fake one.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import json
import os
import re
import time

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError, excerpt, section_errors
from ansible_collections.xuanwu.cluster.plugins.module_utils import _bundle
from ansible_collections.xuanwu.cluster.plugins.module_utils._bundle import BundleError, MANIFEST
from ansible_collections.xuanwu.cluster.plugins.module_utils import _parse_amd as amd_p
from ansible_collections.xuanwu.cluster.plugins.module_utils import _parse_host as host_p
from ansible_collections.xuanwu.cluster.plugins.module_utils import _parse_ib as ib_p
from ansible_collections.xuanwu.cluster.plugins.module_utils import _parse_net as net_p
from ansible_collections.xuanwu.cluster.plugins.module_utils import _parse_nvidia as nv_p
from ansible_collections.xuanwu.cluster.plugins.module_utils._hygiene import DEFAULT_LEFTOVER_PATTERNS

FACTS_SCHEMA_VERSION = 1
BUNDLE_FORMAT_VERSION = _bundle.BUNDLE_FORMAT_VERSION

GROUPS = ('host', 'gpu', 'xid', 'infiniband', 'network', 'software')

# The process list: pid, parent, user, seconds running, full command line.
PS_FORMAT = 'pid=,ppid=,user:32=,etimes=,args='
IB_COUNTER_GLOBS = ('/sys/class/infiniband/*/ports/*/counters/*',)

# At most this many job processes (host.processes.matched) are kept in the facts.
MATCHED_PROCESSES_MAX = 50

# Interfaces that are never a data or management NIC of a node.
VIRTUAL_IFACE_PATTERNS = ('lo', 'docker*', 'veth*', 'virbr*', 'podman*', 'cni*', 'flannel*', 'cali*', 'vxlan*',
                          'ifb*', 'br-*', 'tun*', 'tap*', 'kube-*', 'cilium*', 'weave*', 'dummy*', 'nodelocaldns')
VIRTUAL_KINDS = ('veth', 'bridge', 'ifb', 'dummy', 'vxlan', 'tun', 'tap', 'macvtap', 'wireguard', 'geneve', 'ipip',
                 'sit', 'gre', 'gretap', 'ip6tnl', 'nlmon')


class Alternative(object):
    """One way of obtaining a probe's raw output, and the parser for what it prints."""

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
    elsewhere), the ways to obtain its output (``alternatives``, tried in order) and a note for the
    probe table of docs/capture-format.md (``probes_markdown``)."""

    def __init__(self, key, group, feeds, alternatives, note=None):
        self.key = key
        self.group = group
        self.feeds = tuple(feeds.split())
        self.alternatives = alternatives
        self.note = note

    @property
    def name(self):
        return self.key.split(':', 1)[0]


def base_probes(disk_paths=('/',)):
    """The probes that do not depend on what another probe found."""
    A = Alternative
    query = 'nvidia-smi --query-gpu=%s --format=csv' % ','.join(nv_p.QUERY_GPU_FIELDS)
    return [
        Probe('os_release', 'host', 'host', [A(host_p.parse_os_release, path='/etc/os-release')]),
        Probe('uname', 'host', 'host', [A(host_p.parse_uname, argv=['uname', '-a'])]),
        Probe('kernel_modules', 'host', 'host', [A(host_p.parse_proc_modules, path='/proc/modules')]),
        Probe('chrony', 'host', 'host', [A(host_p.parse_chronyc_tracking, argv=['chronyc', '-c', 'tracking'])]),
        Probe('listening', 'host', 'host', [A(host_p.parse_ss_listening, argv=['ss', '-H', '-l', '-n', '-t', '-u', '-p']),
                                            A(host_p.parse_proc_net_listening, internal='proc_net_listening')],
              note='(without `ss`: /proc/net/tcp, tcp6, udp, udp6, which do not name the process)'),
        Probe('disks', 'host', 'host', [A(host_p.parse_df, argv=['df', '-P', '-B1'] + list(disk_paths))], note='(`disk_paths`)'),
        Probe('memlock', 'host', 'host', [A(host_p.parse_ulimit_memlock, argv=['sh', '-c', 'ulimit -l'])]),
        Probe('meminfo', 'host', 'host', [A(host_p.parse_meminfo, path='/proc/meminfo')]),
        Probe('mounts', 'host', 'host', [A(host_p.parse_proc_mounts, path='/proc/mounts')],
              note='(device, mount point and type are kept: the options of a mount can name its credentials)'),
        Probe('lspci', 'host', 'host', [A(host_p.parse_lspci_acs, argv=['lspci', '-vvv'])]),
        Probe('processes', 'host', 'host', [A(host_p.parse_ps, argv=['ps', '-e', '-ww', '-o', PS_FORMAT])],
              note='(a bundle holds the whole list: command lines can carry secrets, look before sharing it)'),
        Probe('nvidia_query_gpu', 'gpu', 'gpu software', [A(nv_p.parse_query_gpu, argv=query.split(' '))]),
        Probe('nvidia_smi_xml', 'gpu', 'gpu software', [A(nv_p.parse_smi_xml, argv=['nvidia-smi', '-q', '-x'])]),
        Probe('nvidia_topo', 'gpu', 'gpu', [A(nv_p.parse_topo_matrix, argv=['nvidia-smi', 'topo', '-m'])]),
        Probe('nvidia_nvlink', 'gpu', 'gpu', [A(nv_p.parse_nvlink_status, argv=['nvidia-smi', 'nvlink', '--status'])]),
        Probe('nvidia_nvlink_errors', 'gpu', 'gpu', [A(nv_p.parse_nvlink_errors, argv=['nvidia-smi', 'nvlink', '-e'])],
              note='(error counters of every link since the driver loaded or they were reset)'),
        Probe('nvidia_proc_version', 'gpu', 'gpu software', [A(nv_p.parse_proc_driver_version, path='/proc/driver/nvidia/version')],
              note="(the loaded kernel module's own version)"),
        Probe('kernel_log', 'xid', 'gpu host', [A(nv_p.parse_xid_events, argv=['journalctl', '-k', '-b', '--no-pager', '-o', 'short-iso']),
                                                A(nv_p.parse_xid_events, argv=['dmesg'])],
              note='(parsed twice: Xid events and link events)'),
        Probe('ibstat', 'infiniband', 'infiniband', [A(ib_p.parse_ibstat, argv=['ibstat'])]),
        Probe('ib_counters', 'infiniband', 'infiniband', [A(ib_p.parse_ib_counters, globs=list(IB_COUNTER_GLOBS))]),
        Probe('ip_link', 'network', 'network', [A(net_p.parse_ip_link, argv=['ip', '-j', '-d', 'link', 'show'])]),
        Probe('nvcc', 'software', 'software', [A(nv_p.parse_nvcc_version, argv=['nvcc', '--version']),
                                               A(nv_p.parse_nvcc_version, argv=['/usr/local/cuda/bin/nvcc', '--version'])]),
        Probe('nccl_version', 'software', 'software', [A(host_p.parse_nccl_version, internal='nccl_version')],
              note='(`ncclGetVersion` of the `libnccl.so.2` found)'),
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
        Probe('amd_static', 'gpu', 'gpu software', tool(amd_p.parse_amd_static, 'amd-smi', ['static', '--json'])
              + tool(amd_p.parse_rocm_smi_allinfo, 'rocm-smi', ['--showallinfo', '--json']),
              note='(AMD nodes: run when amd-smi or rocm-smi is installed)'),
        Probe('amd_metric', 'gpu', 'gpu', tool(amd_p.parse_amd_metric, 'amd-smi', ['metric', '--json']),
              note='(ECC counters, PCIe link, temperatures)'),
        Probe('amd_bad_pages', 'gpu', 'gpu', tool(amd_p.parse_amd_bad_pages, 'amd-smi', ['bad-pages', '--json'])),
        Probe('amd_topology', 'gpu', 'gpu', tool(amd_p.parse_amd_topology, 'amd-smi', ['topology', '--json'])
              + tool(amd_p.parse_rocm_smi_topo, 'rocm-smi', ['--showtopo', '--json'])),
        Probe('amd_xgmi', 'gpu', 'gpu', tool(amd_p.parse_amd_xgmi, 'amd-smi', ['xgmi', '--json'])),
        Probe('amd_version', 'gpu', 'software', tool(amd_p.parse_amd_version, 'amd-smi', ['version'])),
    ]


def end_probes():
    """The probes read again at the end of a validation run (``stage: end``): the InfiniBand error
    counters, whose growth during the load the workload_check kind ``link_counters`` judges."""
    return [Probe('ib_counters_end', 'infiniband', 'infiniband', [Alternative(ib_p.parse_ib_counters, globs=list(IB_COUNTER_GLOBS))],
                  note='read again at the end of a run (`node_probe` `stage: end`, docs/facts.md); optional: a bundle without '
                       'it replays, and the growth check then reports `workload.ib_counters_unread`')]


# Outputs of one probe parsed a second time for other facts: the kernel log also holds link events.
DERIVED_PARSERS = {'kernel_log': (('link_events', net_p.parse_link_events),)}


def interface_probes(ifname, rdma=True):
    """The probes run once per selected network interface.

    The RoCE probes (ECN knobs, PFC) only run on interfaces backed by an RDMA device (``rdma``):
    on other NICs the tools answer "not supported", which says nothing about the node.
    """
    A = Alternative
    ecn = '/sys/class/net/%s/ecn/roce_%s/enable/*'
    probes = [
        Probe('ethtool:' + ifname, 'network', 'network', [A(net_p.parse_ethtool, argv=['ethtool', ifname])]),
        Probe('ethtool_driver:' + ifname, 'network', 'network', [A(net_p.parse_ethtool_driver, argv=['ethtool', '-i', ifname])]),
    ]
    if rdma:
        probes += [
            Probe('roce_ecn:' + ifname, 'network', 'network',
                  [A(net_p.parse_roce_ecn, globs=[ecn % (ifname, 'np'), ecn % (ifname, 'rp')])]),
            Probe('roce_pfc:' + ifname, 'network', 'network', [A(net_p.parse_dcb_pfc, argv=['dcb', '-j', 'pfc', 'show', 'dev', ifname]),
                                                               A(net_p.parse_mlnx_qos, argv=['mlnx_qos', '-i', ifname])]),
        ]
    return probes


def storage_probes(paths):
    """One ``storage_read:<path>`` probe per path of a profile's host.storage that asks for a read figure."""
    return [Probe('storage_read:' + path, 'host', 'host', [Alternative(host_p.parse_storage_read, internal='storage_read:' + path)],
                  note='(the `host.storage` paths with `read_mb_s_min`: a bounded read, `read_max_gib` / `read_max_s`)')
            for path in paths]


def all_probes():
    """Every probe once (per-interface ones for an interface named ``IF``, disks for ``PATH...``, a storage read for
    ``PATH``)."""
    return base_probes(disk_paths=('PATH...',)) + storage_probes(['PATH']) + amd_probes() + end_probes() + interface_probes('IF')


# probe name -> the profile sections its facts feed (the checks' view of a failed probe)
FEEDS = dict((probe.name, probe.feeds) for probe in all_probes())


def probes_markdown():
    """The probe table of docs/capture-format.md."""
    out = ['| probe | group | feeds | command |', '|---|---|---|---|']
    for probe in all_probes():
        command = ', else '.join('`%s`' % alt.command for alt in probe.alternatives)
        out.append('| `%s` | %s | %s | %s%s |' % (probe.key, probe.group, ', '.join(probe.feeds), command,
                                                  ' ' + probe.note if probe.note else ''))
    return '\n'.join(out) + '\n'


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


class LiveRunner(object):
    """Obtains output on the node itself.

    ``run`` is ``run(argv) -> (rc, stdout, stderr)`` and ``which`` is ``which(name) -> path or
    None``; the module passes thin wrappers of ``AnsibleModule.run_command``/``get_bin_path``.
    ``internals`` maps internal probe names to functions returning text.
    """

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


def storage_read_text(path, max_bytes=1 << 30, max_seconds=10.0, clock=None):
    """The internal probe ``storage_read:<path>``: read the files under ``path`` until ``max_bytes`` or ``max_seconds``,
    each after asking the kernel to drop its cached pages (POSIX_FADV_DONTNEED, so that what is timed is the file
    system, not the page cache); ``key=value`` lines for _parse_host.parse_storage_read."""
    clock = clock or getattr(time, 'monotonic', time.time)
    drop = hasattr(os, 'posix_fadvise')
    buf = bytearray(READ_BLOCK)
    total, count, error, complete = 0, 0, None, True
    if not os.path.exists(path):
        error, complete = '%s: no such file or directory' % path, False
    start = clock()
    for name in _files_under(path) if error is None else ():
        if total >= max_bytes or clock() - start >= max_seconds:
            complete = False
            break
        try:
            handle = os.open(name, os.O_RDONLY)
        except OSError as err:
            error = error or '%s: %s' % (name, err.strerror)
            continue
        try:
            if drop:
                os.posix_fadvise(handle, 0, 0, os.POSIX_FADV_DONTNEED)
            while total < max_bytes and clock() - start < max_seconds:
                size = os.readv(handle, [memoryview(buf)[:min(READ_BLOCK, max_bytes - total)]])
                if not size:
                    break
                total += size
        except OSError as err:
            error = error or '%s: %s' % (name, err.strerror)
        finally:
            os.close(handle)
        count += 1
    seconds = clock() - start
    lines = ['path=%s' % re.sub(r'[\x00-\x1f\x7f]', ' ', path), 'bytes=%d' % total, 'seconds=%.3f' % seconds, 'files=%d' % count,
             'cache=%s' % ('dropped' if drop else 'kept'), 'complete=%s' % ('true' if complete and total < max_bytes else 'false')]
    if error:
        lines.append('error=%s' % re.sub(r'[\x00-\x1f\x7f]', ' ', error))
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


class ReplayRunner(object):
    """Reads a capture bundle: ``manifest.json`` plus one file per probe (docs/capture-format.md).

    The bundle is untrusted input (_bundle): an invalid manifest is a BundleError; a file of one probe
    that cannot be read (a symbolic link, a FIFO, larger than ``max_bytes``) spoils only that probe
    (status ``parse_error`` naming the file and the reason).
    """

    def __init__(self, directory, max_bytes=_bundle.MAX_FILE_BYTES):
        self.directory = directory
        self.max_bytes = max_bytes
        self.manifest = _bundle.load_manifest(directory, max_bytes)
        self.entries = dict((e['probe'], e) for e in self.manifest['probes'])

    def keys(self):
        return list(self.entries)

    def has_tool(self, name):
        """A replay runs the AMD probes that the bundle holds (run_probes asks for any of AMD_TOOLS)."""
        return any(key.startswith('amd_') for key in self.entries)

    def obtain(self, probe):
        entry = self.entries.get(probe.key)
        if entry is None:
            return Output('skipped', probe.alternatives[0].command, stderr='not in the capture bundle')
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
# Collection and assembly.

def run_probes(runner, groups=GROUPS, interfaces=None, disk_paths=('/',), capture=None, stage='start', read_paths=()):
    """Run every probe of the selected groups through ``runner``.

    Returns ``(parsed, statuses)``: ``parsed`` maps probe key to parser output (only for probes
    whose output parsed), ``statuses`` maps probe key to the status record of docs/facts.md.
    ``capture``, when given, is called with ``(probe, output)`` for every probe that ran. ``stage``
    ``end`` runs only the end_probes.
    """
    groups = set(groups)
    parsed = {}
    statuses = {}

    def one(probe):
        out = runner.obtain(probe)
        if capture is not None and out.status != 'skipped':
            capture(probe, out)
        record = {'status': out.status, 'command': out.command, 'rc': out.rc, 'error': None, 'excerpt': None}
        if out.note:
            record['note'] = out.note
        if out.status == 'ok' or (out.status == 'failed' and out.stdout.strip() and probe.name == 'disks'):
            try:
                parsed[probe.key] = out.alternative.parser(out.stdout)
                record['status'] = 'ok'
                problems = section_errors(parsed[probe.key])
                if problems:
                    record['section_errors'] = problems
            except ParseError as err:
                record.update(status='parse_error', error=str(err), excerpt=err.excerpt or excerpt(out.stdout))
        elif out.status == 'failed':
            record.update(error=(out.stderr or '').strip()[:400] or 'exit code %s' % out.rc,
                          excerpt=excerpt(out.stdout) or None)
        elif out.status in ('missing', 'skipped'):
            record['error'] = (out.stderr or '').strip()[:400] or None
        elif out.status == 'parse_error':
            record['error'] = out.stderr
        statuses[probe.key] = record
        for key, parser in DERIVED_PARSERS.get(probe.key, ()) if record['status'] == 'ok' else ():
            try:
                parsed[key] = parser(out.stdout)
            except ParseError:
                continue

    for probe in base_probes(disk_paths) + storage_probes(read_paths) if stage == 'start' else end_probes():
        if probe.group in groups:
            one(probe)
    has_tool = getattr(runner, 'has_tool', None)
    if 'gpu' in groups and stage == 'start' and has_tool is not None and any(has_tool(name) for name in AMD_TOOLS):
        replay = isinstance(runner, ReplayRunner)
        for probe in amd_probes():
            if not replay or probe.key in runner.entries:
                one(probe)
    if 'network' in groups and stage == 'start':
        links = parsed.get('ip_link') or {}
        if isinstance(runner, ReplayRunner):
            names = sorted(set(k.split(':', 1)[1] for k in runner.keys() if ':' in k))
            names = [n for n in names if not interfaces or any(fnmatch.fnmatchcase(n, p) for p in interfaces)]
        else:
            names = select_interfaces(links, interfaces)
        replay = isinstance(runner, ReplayRunner)
        for name in names:
            for probe in interface_probes(name, rdma=replay or has_rdma_device(name)):
                if not replay or probe.key in runner.entries:
                    one(probe)
    return parsed, statuses


def assemble(parsed, statuses, source='live', disk_paths=('/',), process_patterns=None):
    """Build the facts dictionary of docs/facts.md from parsed probe outputs.

    ``process_patterns`` (regular expressions, default: the profile schema's default
    ``host.leftover_process_patterns``) select the processes of ``ps`` kept in ``host.processes``.
    """
    facts = {
        'schema_version': FACTS_SCHEMA_VERSION,
        'source': source,
        'probes': statuses,
        'gpu': _gpu_facts(parsed, statuses),
        'infiniband': _ib_facts(parsed, statuses),
        'network': _network_facts(parsed),
        'host': _host_facts(parsed, statuses, disk_paths),
    }
    facts['software'] = {
        'driver_version': facts['gpu'].get('driver_version'),
        'cuda_driver_version': facts['gpu'].get('cuda_driver_version'),
        'cuda_toolkit_version': parsed.get('nvcc'),
        'nccl_version': parsed.get('nccl_version'),
    }
    if facts['gpu'].get('vendor') == 'amd':
        facts['software']['rocm_version'] = facts['gpu'].get('rocm_version')
    _process_facts(parsed, facts, process_patterns)
    if 'link_events' in parsed:
        facts['network']['link_events'] = parsed['link_events']
    return facts


def _installed(statuses, key):
    st = statuses.get(key)
    if st is None or st['status'] == 'skipped':
        return None
    return st['status'] != 'missing'


def _amd_gpu_facts(parsed, statuses):
    """``gpu`` of an AMD node (docs/facts.md): the NVIDIA keys where the meaning is the same."""
    static = parsed.get('amd_static')
    record = statuses.get('amd_static') or {}
    gpu = {'vendor': 'amd', 'installed': _installed(statuses, 'amd_static'),
           'tool': str(record.get('command') or '').split(' ', 1)[0].rsplit('/', 1)[-1] or None,
           'count': None, 'driver_version': None, 'devices': []}
    if static is not None:
        gpu['devices'] = amd_p.merge_devices(static, parsed.get('amd_metric'), parsed.get('amd_bad_pages'))
        gpu['count'] = len(gpu['devices'])
        gpu['driver_version'] = static.get('driver_version')
    elif gpu['installed'] is False:
        gpu['count'] = 0
    if 'amd_version' in parsed:
        gpu['rocm_version'] = parsed['amd_version'].get('rocm')
        gpu['amd_smi_version'] = parsed['amd_version'].get('tool')
    if 'amd_topology' in parsed:
        gpu['links'] = amd_p.pair_links(parsed['amd_topology'], parsed.get('amd_xgmi'))
    if 'amd_xgmi' in parsed:
        gpu['xgmi'] = parsed['amd_xgmi']
    return gpu


def is_amd(statuses):
    """An AMD node: the AMD probes ran and nvidia-smi did not answer."""
    return 'amd_static' in statuses and (statuses.get('nvidia_query_gpu') or {}).get('status') != 'ok'


def _gpu_facts(parsed, statuses):
    if is_amd(statuses):
        return _amd_gpu_facts(parsed, statuses)
    devices = parsed.get('nvidia_query_gpu')
    xml = parsed.get('nvidia_smi_xml') or {}
    gpu = {'vendor': 'nvidia', 'installed': _installed(statuses, 'nvidia_query_gpu'),
           'count': None, 'driver_version': xml.get('driver_version'),
           'cuda_driver_version': xml.get('cuda_driver_version'), 'devices': []}
    if devices is not None:
        devices = nv_p.merge_gpu_details(devices, xml) if xml else devices
        gpu['devices'] = devices
        gpu['count'] = len(devices)
        versions = sorted(set(d.get('driver_version') for d in devices if d.get('driver_version')))
        if versions and not gpu['driver_version']:
            gpu['driver_version'] = versions[0]
    elif gpu['installed'] is False:
        gpu['count'] = 0
    if 'nvidia_topo' in parsed:
        gpu['topology'] = parsed['nvidia_topo']
    if 'nvidia_nvlink' in parsed:
        gpu['nvlink'] = parsed['nvidia_nvlink']
    if 'nvidia_nvlink_errors' in parsed:
        gpu['nvlink_errors'] = parsed['nvidia_nvlink_errors']
    if 'nvidia_proc_version' in parsed:
        gpu['kernel_module'] = parsed['nvidia_proc_version']
    query = statuses.get('nvidia_query_gpu') or {}
    if query.get('status') == 'failed':
        gpu['nvml_error'] = nv_p.nvml_init_error('%s\n%s' % (query.get('excerpt') or '', query.get('error') or ''))
    if 'kernel_log' in parsed:
        gpu['xid_events'] = parsed['kernel_log']
    return gpu


def _ib_facts(parsed, statuses):
    cas = parsed.get('ibstat')
    ib = {'installed': _installed(statuses, 'ibstat'), 'cas': cas if cas is not None else {}}
    counters = parsed.get('ib_counters') or {}
    for ca, ports in counters.items():
        for port, values in ports.items():
            target = ib['cas'].get(ca, {}).get('ports', {}).get(str(port))
            if target is not None:
                target['counters'] = values
    return ib


def _network_facts(parsed):
    links = parsed.get('ip_link')
    interfaces = {}
    for name, info in (links or {}).items():
        interfaces[name] = dict(info)
    for key, value in parsed.items():
        if ':' not in key:
            continue
        name, ifname = key.split(':', 1)[0], key.split(':', 1)[1]
        entry = interfaces.setdefault(ifname, {})
        if name in ('ethtool', 'ethtool_driver'):
            entry.update(value)
        elif name == 'roce_ecn' and value and (value.get('np') or value.get('rp')):
            entry.setdefault('roce', {})['ecn'] = {'np': value['np'], 'rp': value['rp']}
        elif name == 'roce_pfc':
            entry.setdefault('roce', {})['pfc'] = value
            if value.get('trust'):
                entry['roce']['trust'] = value['trust']
    return {'interfaces': interfaces, 'probed': links is not None}


def _host_facts(parsed, statuses, disk_paths):
    host = {}
    if 'os_release' in parsed:
        host['os'] = parsed['os_release']
    if 'uname' in parsed:
        host['kernel'] = parsed['uname']
    if 'kernel_modules' in parsed:
        host['kernel_modules'] = parsed['kernel_modules']
    chrony = statuses.get('chrony')
    if chrony is not None and chrony['status'] != 'skipped':
        time = {'installed': chrony['status'] != 'missing'}
        time.update(parsed.get('chrony') or {})
        host['time'] = time
    if 'listening' in parsed:
        host['listening'] = parsed['listening']
    if 'disks' in parsed:
        rows = parsed['disks']
        disks = {}
        for path, row in zip(disk_paths, rows):
            disks[path] = row
        if len(rows) != len(disk_paths):
            for row in rows:
                disks.setdefault(row.get('mount'), row)
        host['disks'] = disks
    if 'memlock' in parsed:
        host['memlock_kib'] = parsed['memlock'].get('kib')
        host['memlock_unlimited'] = parsed['memlock'].get('unlimited')
    if 'lspci' in parsed:
        host['pcie_acs'] = parsed['lspci']
    if 'meminfo' in parsed:
        host['memory'] = parsed['meminfo']
    if 'mounts' in parsed:
        host['mounts'] = parsed['mounts']
    reads = [key for key in statuses if key.startswith('storage_read:')]
    if reads:
        host['storage_read'] = dict((key.split(':', 1)[1], parsed[key]) for key in reads if key in parsed)
    return host


def probe(runner, groups=GROUPS, interfaces=None, disk_paths=('/',), capture=None, process_patterns=None, stage='start',
          read_paths=()):
    """Run the probes and return the facts dictionary (``stage`` end: the end-of-run facts of probe_end)."""
    disk_paths = tuple(disk_paths) or ('/',)
    parsed, statuses = run_probes(runner, groups=groups, interfaces=interfaces, disk_paths=disk_paths, capture=capture,
                                  stage=stage, read_paths=read_paths)
    source = 'replay' if isinstance(runner, ReplayRunner) else 'live'
    if stage == 'end':
        return {'schema_version': FACTS_SCHEMA_VERSION, 'source': source, 'probes': statuses,
                'infiniband': {'counters': parsed.get('ib_counters_end')}}
    return assemble(parsed, statuses, source=source, disk_paths=disk_paths, process_patterns=process_patterns)


def _process_facts(parsed, facts, patterns):
    """``host.processes`` (the job processes of ``ps``) and the command lines of the GPU processes.

    Only processes whose command line matches one of ``patterns`` are kept (at most
    MATCHED_PROCESSES_MAX), never the whole list: command lines can be long and carry secrets.
    """
    rows = parsed.get('processes')
    if rows is None:
        return
    if patterns is None:
        patterns = DEFAULT_LEFTOVER_PATTERNS
    compiled = []
    for pattern in patterns:
        try:
            compiled.append((pattern, re.compile(pattern)))
        except re.error:
            continue
    by_pid = dict((row['pid'], row) for row in rows)
    matched = []
    for row in rows:
        hit = next((pattern for pattern, regex in compiled if regex.search(row['args'])), None)
        if hit is not None:
            matched.append(dict(row, pattern=hit))
    facts['host']['processes'] = {'count': len(rows), 'patterns': [p for p, _r in compiled],
                                  'matched': matched[:MATCHED_PROCESSES_MAX], 'matched_total': len(matched)}
    for device in facts['gpu'].get('devices') or []:
        for proc in device.get('processes') or []:
            row = by_pid.get(proc.get('pid'))
            if row is not None:
                proc.update(command=row['args'], user=row['user'], etimes=row['etimes'], ppid=row['ppid'])
                parent = by_pid.get(row['ppid'])
                if parent is not None:
                    proc['parent_command'] = parent['args']


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


def nccl_version_text(extra_globs=()):
    """Return NCCL's version as ``ncclGetVersion`` reports it (e.g. ``22809``), or None.

    Looks at the given globs first, then the usual system and pip-wheel locations; asks the
    library itself through ctypes and falls back to the version in the file name.
    """
    import ctypes
    import glob
    candidates = []
    for pattern in tuple(extra_globs) + NCCL_GLOBS:
        for path in sorted(glob.glob(pattern)):
            if path not in candidates:
                candidates.append(path)
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)
            version = ctypes.c_int(0)
            if lib.ncclGetVersion(ctypes.byref(version)) == 0 and version.value > 0:
                return str(version.value)
        except (OSError, AttributeError):
            pass
    for path in candidates:
        match = re.search(r'libnccl\.so\.(\d+\.\d+\.\d+)', path)
        if match:
            return match.group(1)
    return None

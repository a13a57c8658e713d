# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe engine: the node's raw outputs (_collect: which commands run, live, replayed from a capture bundle or
from a node's answer) parsed and assembled into one facts dictionary (docs/facts.md).

node_probe runs all of it on the node; node_validate's node only collects (_collect.answer) and its action parses the
answer here, on the controller (facts_from_answer). Nothing here imports Ansible: the module hands in a runner, tests
hand in a fake one. The names of _collect are importable from here too.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import types

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError, excerpt, section_errors
# the node's half, and the names of it that the collection and its tests read from here
from ansible_collections.xuanwu.cluster.plugins.module_utils._collect import (  # noqa: F401 pylint: disable=unused-import
    BundleError, BundleWriter, DERIVED_PARSERS, FEEDS, GROUPS, HeldRunner, LiveRunner, Output, ReplayRunner, all_probes,
    amd_probes, base_probes, collect, end_probes, interface_probes, landings, proc_net_listening_text, storage_probes,
    storage_read_text, validate_manifest,
)
from ansible_collections.xuanwu.cluster.plugins.module_utils import _facts
# The parser modules the probe table names (PARSER_MODULES): a new one is an import here, and nothing else.
from ansible_collections.xuanwu.cluster.plugins.module_utils import (  # noqa: F401 pylint: disable=unused-import
    _parse_amd, _parse_host, _parse_ib, _parse_net, _parse_nvidia,
)
from ansible_collections.xuanwu.cluster.plugins.module_utils._commands import DEFAULT_LEFTOVER_PATTERNS

FACTS_SCHEMA_VERSION = 1

# At most this many job processes (host.processes.matched) are kept in the facts.
MATCHED_PROCESSES_MAX = 50

# The modules an Alternative's parser is named in: ``<area>.<function>`` is the function of ``_parse_<area>``, one of
# the parser modules imported above (derived from the imports: test_registrations.py checks that the probe table names
# exactly these).
PARSER_MODULES = dict((name[len('_parse_'):], module) for name, module in sorted(globals().items())
                      if name.startswith('_parse_') and isinstance(module, types.ModuleType))

# parsed[ROWS_READ]: how many processes a process list filtered on the node listed (_collect.filter_processes)
ROWS_READ = 'processes.rows'


def parser(name):
    """The parser function an Alternative names (``net.parse_ip_link``)."""
    module, function = name.split('.', 1)
    return getattr(PARSER_MODULES[module], function)


def probes_markdown():
    """The probe table of docs/capture-format.md."""
    out = ['| probe | group | feeds | command |', '|---|---|---|---|']
    for probe in all_probes():
        command = ', else '.join('`%s`' % alt.command for alt in probe.alternatives)
        out.append('| `%s` | %s | %s | %s%s |' % (probe.key, probe.group, ', '.join(probe.feeds), command,
                                                  ' ' + probe.note if probe.note else ''))
    return '\n'.join(out) + '\n'


# ---------------------------------------------------------------------------------------------
# A node's answer (node_probe parse: false), read on the controller.

class AnswerError(ValueError):
    """A node's answer (``node_probe`` ``parse: false``) that is not what answer() returns; the message names the field."""


ANSWER_STATUSES = ('ok', 'missing', 'failed', 'skipped', 'parse_error')


class AnswerRunner(HeldRunner):
    """Reads the raw outputs a node returned (answer()): the controller's runner, so that the controller parses what
    the node read through the same collect() as a live or replayed probe. The answer is untrusted input: a record that
    is not what answer() writes is an AnswerError naming ``outputs[<i>].<field>``."""

    held = "not in the node's answer"

    def __init__(self, records):
        super(AnswerRunner, self).__init__()
        if not isinstance(records, list):
            raise AnswerError('outputs: expected a list of probe outputs, got %s' % type(records).__name__)
        for index, record in enumerate(records):
            where = 'outputs[%d]' % index
            if not isinstance(record, dict):
                raise AnswerError('%s: expected a mapping, got %s' % (where, type(record).__name__))
            for field, kinds, required in (('probe', str, True), ('status', str, True), ('command', str, True),
                                           ('stdout', str, True), ('stderr', str, True), ('note', str, False)):
                value = record.get(field)
                if (value is not None or required) and not isinstance(value, kinds):
                    raise AnswerError('%s.%s: expected text, got %r' % (where, field, value))
            for field, required in (('alternative', True), ('rc', False), ('rows', False)):
                value = record.get(field)
                if (value is not None or required) and (isinstance(value, bool) or not isinstance(value, int)
                                                        or (field != 'rc' and value < 0)):
                    raise AnswerError('%s.%s: expected %s, got %r' % (where, field, 'an integer' if field == 'rc'
                                                                      else 'a whole number', value))
            if record['status'] not in ANSWER_STATUSES:
                raise AnswerError('%s.status: %r is not one of %s' % (where, record['status'], ', '.join(ANSWER_STATUSES)))
            if record['probe'] in self.entries:
                raise AnswerError('%s.probe: %r is answered twice' % (where, record['probe']))
            self.entries[record['probe']] = record

    def obtain(self, probe):
        entry, skipped = self.entry(probe)
        if entry is None:
            return skipped
        if entry['alternative'] >= len(probe.alternatives):
            why = 'the node answered with way %d of obtaining it; it has %d' % (entry['alternative'] + 1, len(probe.alternatives))
            return Output('parse_error', entry['command'], rc=entry.get('rc'), alternative=probe.alternatives[0], stderr=why)
        out = Output(entry['status'], entry['command'], rc=entry.get('rc'), stdout=entry['stdout'], stderr=entry['stderr'],
                     alternative=probe.alternatives[entry['alternative']])
        out.note = entry.get('note')
        out.rows = entry.get('rows')
        return out


# ---------------------------------------------------------------------------------------------
# Parsing and assembly.

def run_probes(runner, groups=GROUPS, interfaces=None, disk_paths=('/',), capture=None, stage='start', read_paths=()):
    """Run every probe of the selected groups through ``runner`` (_collect.collect) and parse what each printed.

    Returns ``(parsed, statuses)``: ``parsed`` maps probe key to parser output (only for probes
    whose output parsed), ``statuses`` maps probe key to the status record of docs/facts.md.
    ``capture``, when given, is called with ``(probe, output)`` for every probe that ran. ``stage``
    ``end`` runs only the end_probes.
    """
    parsed = {}
    statuses = {}
    for probe, out in collect(runner, groups=groups, interfaces=interfaces, disk_paths=disk_paths, capture=capture, stage=stage,
                              read_paths=read_paths):
        record = {'status': out.status, 'command': out.command, 'rc': out.rc, 'error': None, 'excerpt': None}
        if out.note:
            record['note'] = out.note
        if out.status == 'ok' or (out.status == 'failed' and out.stdout.strip() and probe.name == 'disks'):
            try:
                parsed[probe.key] = parser(out.alternative.parser)(out.stdout)
                record['status'] = 'ok'
                problems = section_errors(parsed[probe.key])
                if problems:
                    record['section_errors'] = problems
                if probe.key == 'processes' and out.rows is not None:
                    parsed[ROWS_READ] = out.rows
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
        for key, name, _lands in DERIVED_PARSERS.get(probe.key, ()) if record['status'] == 'ok' else ():
            try:
                parsed[key] = parser(name)(out.stdout)
            except ParseError:
                continue
    return parsed, statuses


# The probes whose facts are assembled here by hand, and why: every other probe declares the fact path its parsed
# output lands at (_collect.Probe ``lands``) and place() puts it there, so that adding such a probe leaves this file
# as it is (docs/architecture.md, "Add a probe"). test_probe_table.py holds this list to the probe table.
ASSEMBLED = {
    'nvidia_query_gpu': 'gpu.devices merged with nvidia_smi_xml by bus id; installed and nvml_error from its status',
    'nvidia_smi_xml': "merged into nvidia_query_gpu's devices; the driver and CUDA versions of gpu and software",
    'amd_static': 'gpu.devices merged with amd_metric and amd_bad_pages by index; gpu.tool from the command that answered',
    'amd_metric': "merged into amd_static's devices",
    'amd_bad_pages': "merged into amd_static's devices",
    'amd_topology': 'both sides of each GPU pair joined into gpu.links, with the bit rate of amd_xgmi',
    'amd_version': 'split: gpu.rocm_version (also software.rocm_version) and gpu.amd_smi_version',
    'ibstat': 'infiniband.cas, with the counters of ib_counters put into each port; installed from its status',
    'ib_counters': "put into the ports of ibstat's CAs",
    'ip_link': 'the interfaces of network.interfaces, merged with the per-interface probes; network.probed',
    'ethtool': 'merged into its interface (a probe per interface)',
    'ethtool_driver': 'merged into its interface',
    'roce_ecn': "its interface's roce.ecn, only where knobs were read (np or rp)",
    'roce_pfc': "its interface's roce.pfc, and roce.trust where mlnx_qos prints it",
    'chrony': 'host.time: installed from its status, with the parsed tracking',
    'disks': "host.disks keyed by the probed path (disk_paths) rather than df's mount point",
    'memlock': 'split: host.memlock_kib and host.memlock_unlimited',
    'storage_read': 'host.storage_read keyed by the path read (a probe per path); present once a read ran',
    'processes': 'host.processes: only the job processes the patterns match; joined with the GPU processes',
}


def _places(stage):
    """``[(parsed key, fact path as a list, vendor, nullable)]`` of the probes of ``stage`` that declare ``lands``."""
    out = []
    for key, _name, path in landings(stage):
        spec = _facts.spec_at(path, stage) or {}
        out.append((key, path.split('.'), spec.get('vendor'), bool(spec.get('null'))))
    return out


PLACES = dict((stage, _places(stage)) for stage in _facts.SCHEMAS)


def place(facts, parsed, stage='start'):
    """Put the parsed output of each probe that declares ``lands`` (_collect.landings) at that fact path, as it is.

    The facts schema decides two things: a fact of one GPU vendor's nodes (``vendor``) is placed only on a node of that
    vendor, and a fact that may be null (``null``) is null when its probe's output was not parsed; any other fact of a
    probe whose output was not parsed is left out."""
    node_vendor = (facts.get('gpu') or {}).get('vendor')
    for key, steps, vendor, nullable in PLACES[stage]:
        if vendor not in (None, node_vendor) or (key not in parsed and not nullable):
            continue
        target = facts
        for step in steps[:-1]:
            target = target.setdefault(step, {})
        target[steps[-1]] = parsed.get(key)


def assemble(parsed, statuses, source='live', disk_paths=('/',), process_patterns=None):
    """Build the facts dictionary of docs/facts.md from parsed probe outputs: the probes of ASSEMBLED by hand, every
    other one where it lands (place).

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
    }
    place(facts, parsed)
    if facts['gpu'].get('vendor') == 'amd':
        facts['software']['rocm_version'] = facts['gpu'].get('rocm_version')
    _process_facts(parsed, facts, process_patterns)
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
        gpu['devices'] = _parse_amd.merge_devices(static, parsed.get('amd_metric'), parsed.get('amd_bad_pages'))
        gpu['count'] = len(gpu['devices'])
        gpu['driver_version'] = static.get('driver_version')
    elif gpu['installed'] is False:
        gpu['count'] = 0
    if 'amd_version' in parsed:
        gpu['rocm_version'] = parsed['amd_version'].get('rocm')
        gpu['amd_smi_version'] = parsed['amd_version'].get('tool')
    if 'amd_topology' in parsed:
        gpu['links'] = _parse_amd.pair_links(parsed['amd_topology'], parsed.get('amd_xgmi'))
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
        devices = _parse_nvidia.merge_gpu_details(devices, xml) if xml else devices
        gpu['devices'] = devices
        gpu['count'] = len(devices)
        versions = sorted(set(d.get('driver_version') for d in devices if d.get('driver_version')))
        if versions and not gpu['driver_version']:
            gpu['driver_version'] = versions[0]
    elif gpu['installed'] is False:
        gpu['count'] = 0
    query = statuses.get('nvidia_query_gpu') or {}
    if query.get('status') == 'failed':
        gpu['nvml_error'] = _parse_nvidia.nvml_init_error('%s\n%s' % (query.get('excerpt') or '', query.get('error') or ''))
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
    chrony = statuses.get('chrony')
    if chrony is not None and chrony['status'] != 'skipped':
        time = {'installed': chrony['status'] != 'missing'}
        time.update(parsed.get('chrony') or {})
        host['time'] = time
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
    return _facts_of(parsed, statuses, source, disk_paths, process_patterns, stage)


def facts_from_answer(records, source='live', groups=GROUPS, interfaces=None, disk_paths=('/',), process_patterns=None,
                      stage='start', read_paths=()):
    """The facts of a node's answer (the raw outputs of ``node_probe`` ``parse: false``, _collect.answer), parsed here
    with the arguments the node collected with: what probe() returns on the node. ``source`` is the node's (``live``,
    ``replay``); an answer that is not what answer() writes is an AnswerError naming the field."""
    disk_paths = tuple(disk_paths) or ('/',)
    parsed, statuses = run_probes(AnswerRunner(records), groups=groups, interfaces=interfaces, disk_paths=disk_paths, stage=stage,
                                  read_paths=read_paths)
    return _facts_of(parsed, statuses, 'replay' if source == 'replay' else 'live', disk_paths, process_patterns, stage)


def _facts_of(parsed, statuses, source, disk_paths, process_patterns, stage):
    if stage == 'end':
        facts = {'schema_version': FACTS_SCHEMA_VERSION, 'source': source, 'probes': statuses, 'infiniband': {}}
        place(facts, parsed, stage)
        return facts
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
    facts['host']['processes'] = {'count': parsed.get(ROWS_READ, len(rows)), 'patterns': [p for p, _r in compiled],
                                  'matched': matched[:MATCHED_PROCESSES_MAX], 'matched_total': len(matched)}
    for device in facts['gpu'].get('devices') or []:
        for proc in device.get('processes') or []:
            row = by_pid.get(proc.get('pid'))
            if row is not None:
                proc.update(command=row['args'], user=row['user'], etimes=row['etimes'], ppid=row['ppid'])
                parent = by_pid.get(row['ppid'])
                if parent is not None:
                    proc['parent_command'] = parent['args']

"""Checks engine: every check id has a failing and a passing case (enforced below), plus overrides,
host comparison, summaries and the generated docs/checks.md.

Two healthy baselines:

* ``h200x4_facts()`` is written by hand from the real capture in
  tests/fixtures/hardware/h200x4-nvlink/ (nvidia-smi --query-gpu, -q, topo -m, nvlink --status,
  os-release, uname, proc_driver_nvidia_version, torch_version). The capture has no kernel log,
  /proc/modules, chrony, df or ss output: those facts are absent, as a replay of it gives.
* ``hgx_facts()`` is a constructed 8x H100 SXM node with 8 ConnectX-7 NDR ports, a storage port in
  Ethernet mode, a RoCE interface and every host fact, shaped after docs/facts.md.
"""
import copy
import os

import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils._checks import CHECKS
from ansible_collections.xuanwu.cluster.plugins.module_utils._checks_base import link_at_least, version_at_least, version_matches
from ansible_collections.xuanwu.cluster.plugins.module_utils._findings import apply_overrides, summarise
from ansible_collections.xuanwu.cluster.plugins.module_utils._judge import evaluate, evaluate_group
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.module_utils._profile import (
    DEFAULT_LEFTOVER_PATTERNS, merge_profile,
)
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection
from ansible_collections.xuanwu.cluster.tests.unit.generated_docs import assert_current
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils import amd_node, case_files

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))


def load_profile(name):
    return _collection.resolve_profile(name)[0]


def _probe(command, status='ok', rc=0):
    return {'status': status, 'command': command, 'rc': rc, 'error': None, 'excerpt': None}


def _ecc_zero():
    zero = {'sram_correctable': 0, 'sram_uncorrectable': 0, 'dram_correctable': 0, 'dram_uncorrectable': 0}
    return {'volatile': dict(zero), 'aggregate': dict(zero)}


# ---------------------------------------------------------------------------------------------
# Baselines.

H200_UUIDS = [
    'GPU-f0ecc684-38e2-f0a2-a5ca-d2c3460b88ae', 'GPU-8f519e31-f80a-acb4-f2a1-39500bb68db0',
    'GPU-210b4768-fdb5-c919-3601-93513e637edd', 'GPU-b164b3a7-ff0e-d62a-23b5-59999c70948f',
]


def h200x4_facts():
    devices = []
    for i in range(4):
        devices.append({
            'index': i, 'name': 'NVIDIA H200', 'uuid': H200_UUIDS[i], 'bus_id': '00000000:00:0%d.0' % (6 + i),
            'driver_version': '580.159.04', 'memory_total_mib': 143771,
            'pcie_gen_current': 5, 'pcie_gen_max': 5, 'pcie_width_current': 16, 'pcie_width_max': 16,
            'persistence_mode': True, 'ecc_mode': True, 'clocks_max_sm_mhz': 1980,
            'ecc_errors': _ecc_zero(),
            'retired_pages': {'single_bit': None, 'double_bit': None, 'pending': None},
            'remapped_rows': {'correctable': 0, 'uncorrectable': 0, 'pending': False, 'failure': False},
            'clocks_event_reasons_active': [],
        })
    for device in devices:  # capture: nvidia-smi_-q_-x.xml (<compute_mode>Default, no <process_info>)
        device.update(compute_mode='Default', processes=[])
    names = ['GPU%d' % i for i in range(4)]
    matrix = dict((a, dict((b, 'NV18') for b in names if b != a)) for a in names)
    return {
        'schema_version': 1,
        'source': 'replay',
        'probes': {
            'nvidia_query_gpu': _probe('nvidia-smi --query-gpu=... --format=csv'),
            'nvidia_smi_xml': _probe('nvidia-smi -q -x'),
            'nvidia_topo': _probe('nvidia-smi topo -m'),
            'nvidia_nvlink': _probe('nvidia-smi nvlink --status'),
            'nvidia_proc_version': _probe('cat /proc/driver/nvidia/version'),
            'os_release': _probe('cat /etc/os-release'),
            'uname': _probe('uname -a'),
            'kernel_log': _probe('journalctl -k -b --no-pager -o short-iso', status='skipped', rc=None),
        },
        'gpu': {
            'vendor': 'nvidia', 'installed': True, 'count': 4,
            'driver_version': '580.159.04', 'cuda_driver_version': '13.0',
            'devices': devices,
            'topology': {
                'devices': names, 'matrix': matrix,
                'affinity': dict((n, {'cpu': '0-63', 'numa': '0', 'gpu_numa_id': None}) for n in names),
                'nic_names': {},
            },
            'nvlink': dict((str(i), {'links': [{'link': n, 'speed_gbps': 26.562, 'active': True} for n in range(18)]})
                           for i in range(4)),
            'kernel_module': {'version': '580.159.04', 'flavour': 'open', 'arch': 'x86_64', 'gcc_version': '15.3.0'},
        },
        'infiniband': {'installed': None, 'cas': {}},
        'network': {'interfaces': {}, 'probed': False},
        'host': {
            'os': {'id': 'ubuntu', 'version_id': '24.04', 'pretty_name': 'Ubuntu 24.04.3 LTS', 'id_like': ['debian']},
            'kernel': {'release': '6.18.44-fc-v657-gpu', 'machine': 'x86_64', 'hostname': 'vm'},
        },
        'software': {'driver_version': '580.159.04', 'cuda_driver_version': '13.0', 'cuda_toolkit_version': None,
                     'nccl_version': '2.28.9'},
    }


# The h200x4 capture lacks these host facts: a replay of it reports them as not collected.
H200X4_NOT_COLLECTED = {'gpu xid', 'kernel modules', 'chrony', 'disks', 'ports', 'processes', 'network link events',
                        'gpu nvlink errors'}

HGX_BUSES = [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB]


def hgx_facts():
    devices = []
    for i in range(8):
        devices.append({
            'index': i, 'name': 'NVIDIA H100 80GB HBM3', 'uuid': 'GPU-0000000%d-0000-0000-0000-000000000000' % i,
            'bus_id': '00000000:%02X:00.0' % HGX_BUSES[i], 'driver_version': '550.90.07', 'memory_total_mib': 81559,
            'pcie_gen_current': 5, 'pcie_gen_max': 5, 'pcie_width_current': 16, 'pcie_width_max': 16,
            'persistence_mode': True, 'ecc_mode': True, 'clocks_max_sm_mhz': 1980,
            'ecc_errors': _ecc_zero(),
            'retired_pages': {'single_bit': None, 'double_bit': None, 'pending': None},
            'remapped_rows': {'correctable': 0, 'uncorrectable': 0, 'pending': False, 'failure': False},
            'clocks_event_reasons_active': ['sw_power_cap'],
        })
    for device in devices:
        device.update(compute_mode='Default', processes=[])
    gpus = ['GPU%d' % i for i in range(8)]
    nics = ['NIC%d' % i for i in range(9)]
    matrix = {}
    for i, gname in enumerate(gpus):
        row = dict((other, 'NV18') for other in gpus if other != gname)
        row.update((nic, 'PIX' if j == i else 'SYS') for j, nic in enumerate(nics))
        matrix[gname] = row
    cas = {}
    for i in range(8):
        cas['mlx5_%d' % i] = {
            'ca_type': 'MT4129', 'firmware': '28.39.1002', 'hardware_version': '0', 'node_guid': '0x%016x' % (0xa088c20300000000 + i),
            'ports': {'1': {
                'state': 'Active', 'physical_state': 'LinkUp', 'rate_gbps': 400, 'link_layer': 'InfiniBand', 'base_lid': 10 + i,
                'sm_lid': 1, 'port_guid': '0x%016x' % (0xa088c20300000000 + i),
                'counters': {'symbol_error': 0, 'link_downed': 0, 'port_rcv_errors': 0, 'link_error_recovery': 0,
                             'port_rcv_remote_physical_errors': 0, 'port_xmit_discards': 0, 'local_link_integrity_errors': 0,
                             'excessive_buffer_overrun_errors': 0},
            }},
        }
    cas['mlx5_8'] = {'ca_type': 'MT4129', 'firmware': '28.39.1002', 'hardware_version': '0', 'node_guid': '0x1',
                     'ports': {'1': {'state': 'Active', 'physical_state': 'LinkUp', 'rate_gbps': 200, 'link_layer': 'Ethernet',
                                     'base_lid': 0, 'sm_lid': 0, 'port_guid': '0x2', 'counters': {}}}}
    probes = dict((key, _probe(cmd)) for key, cmd in (
        ('nvidia_query_gpu', 'nvidia-smi --query-gpu=... --format=csv'), ('nvidia_smi_xml', 'nvidia-smi -q -x'),
        ('nvidia_topo', 'nvidia-smi topo -m'), ('nvidia_nvlink', 'nvidia-smi nvlink --status'),
        ('nvidia_nvlink_errors', 'nvidia-smi nvlink -e'),
        ('nvidia_proc_version', 'cat /proc/driver/nvidia/version'), ('kernel_log', 'journalctl -k -b --no-pager -o short-iso'), ('ibstat', 'ibstat'),
        ('ib_counters', 'grep -H . /sys/class/infiniband/*/ports/*/counters/*'), ('ip_link', 'ip -j -d link show'),
        ('ethtool:eth0', 'ethtool eth0'), ('ethtool:rdma0', 'ethtool rdma0'), ('roce_pfc:rdma0', 'mlnx_qos -i rdma0'),
        ('os_release', 'cat /etc/os-release'), ('uname', 'uname -a'), ('kernel_modules', 'cat /proc/modules'),
        ('chrony', 'chronyc -c tracking'), ('listening', 'ss -H -l -n -t -u -p'), ('disks', 'df -P -B1 /'),
        ('memlock', "sh -c 'ulimit -l'"), ('lspci', 'lspci -vvv'), ('nvcc', 'nvcc --version'),
        ('processes', 'ps -e -ww -o pid=,ppid=,user:32=,etimes=,args='),
        ('nccl_version', 'internal:nccl_version')))
    return {
        'schema_version': 1,
        'source': 'live',
        'probes': probes,
        'gpu': {
            'vendor': 'nvidia', 'installed': True, 'count': 8, 'driver_version': '550.90.07', 'cuda_driver_version': '12.4',
            'devices': devices,
            'topology': {'devices': gpus + nics, 'matrix': matrix, 'affinity': {},
                         'nic_names': dict(('NIC%d' % i, 'mlx5_%d' % i) for i in range(9))},
            'nvlink': dict((str(i), {'links': [{'link': n, 'speed_gbps': 26.562, 'active': True} for n in range(18)]})
                           for i in range(8)),
            'nvlink_errors': dict((str(i), {'links': dict((str(n), {'replay_errors': 0, 'recovery_errors': 0, 'crc_errors': 0})
                                                          for n in range(18))}) for i in range(8)),
            'xid_events': [],
            'kernel_module': {'version': '550.90.07', 'flavour': 'proprietary', 'arch': 'x86_64', 'gcc_version': None},
        },
        'infiniband': {'installed': True, 'cas': cas},
        'network': {
            'probed': True,
            'link_events': {'eth0': {'down': 0, 'up': 1, 'last': 'up', 'lines': ['mlx5_core 0000:c1:00.0 eth0: Link up']}},
            'interfaces': {
                'eth0': {'mtu': 1500, 'operstate': 'UP', 'flags': ['BROADCAST', 'MULTICAST', 'UP', 'LOWER_UP'], 'link_type': 'ether',
                         'address': '02:00:00:00:00:01', 'kind': None, 'speed_mbps': 25000, 'duplex': 'full',
                         'link_detected': True, 'driver': 'mlx5_core', 'firmware': '28.39.1002', 'bus_info': '0000:c1:00.0'},
                'rdma0': {'mtu': 9000, 'operstate': 'UP', 'flags': ['BROADCAST', 'MULTICAST', 'UP', 'LOWER_UP'], 'link_type': 'ether',
                          'address': '02:00:00:00:00:02', 'kind': None, 'speed_mbps': 400000, 'duplex': 'full',
                          'link_detected': True, 'driver': 'mlx5_core', 'firmware': '28.39.1002', 'bus_info': '0000:c1:00.1',
                          'roce': {'ecn': {'np': {'3': True}, 'rp': {'3': True}}, 'pfc': {'enabled_priorities': [3]}, 'trust': 'dscp'}},
                'lo': {'mtu': 65536, 'operstate': 'UNKNOWN', 'flags': ['LOOPBACK', 'UP', 'LOWER_UP'], 'link_type': 'loopback'},
            },
        },
        'host': {
            'os': {'id': 'ubuntu', 'version_id': '22.04', 'pretty_name': 'Ubuntu 22.04.5 LTS', 'id_like': ['debian']},
            'kernel': {'release': '5.15.0-125-generic', 'machine': 'x86_64', 'hostname': 'gpu-node-01'},
            'kernel_modules': sorted(['nvidia', 'nvidia_uvm', 'nvidia_modeset', 'nvidia_peermem', 'mlx5_core', 'mlx5_ib',
                                      'ib_uverbs', 'ib_umad', 'ib_core']),
            'time': {'installed': True, 'synchronised': True, 'leap_status': 'Normal', 'stratum': 3, 'reference': 'A9FEA97B',
                     'offset_seconds': 0.000012, 'root_dispersion_seconds': 0.0001},
            'listening': [{'proto': 'tcp', 'address': '0.0.0.0', 'port': 22, 'process': 'sshd'},
                          {'proto': 'udp', 'address': '0.0.0.0', 'port': 29500, 'process': 'dnsmasq'}],
            'disks': {'/': {'size_bytes': 1920000000000, 'free_bytes': 500000000000, 'mount': '/'}},
            'memlock_kib': None,
            'memlock_unlimited': True,
            'pcie_acs': {'checked': True, 'enabled': []},
            'processes': {'count': 412, 'patterns': list(DEFAULT_LEFTOVER_PATTERNS), 'matched': [], 'matched_total': 0},
        },
        'software': {'driver_version': '550.90.07', 'cuda_driver_version': '12.4', 'cuda_toolkit_version': '12.4',
                     'nccl_version': '2.21.5'},
    }


HGX_EXTRA = {
    'network': {
        'interfaces': {'eth0': {'mtu': 1500, 'speed_mbps_min': 10000}, 'rdma*': {'mtu': 9000, 'speed_mbps_min': 400000}},
        'roce': {'interfaces': ['rdma*'], 'pfc_priority': 3, 'ecn': True, 'trust': 'dscp'},
    },
    'software': {'cuda_toolkit_version': '12.4'},
}


def hgx_profile(override=None):
    profile = merge_profile(load_profile('h100-sxm-8'), HGX_EXTRA, 'test')
    return merge_profile(profile, override, 'test-case') if override else profile


def h200_profile(override=None):
    profile = load_profile('h200x4-nvlink')
    return merge_profile(profile, override, 'test-case') if override else profile


def mi300x_facts():
    # the fake 8x MI300X node of amd_node.py (fixtures of tests/fixtures/amd/) through the probe engine
    return amd_node.facts(groups=('gpu',))


def mi300x_profile(override=None):
    profile = load_profile('mi300x-8')
    return merge_profile(profile, override, 'test-case') if override else profile


def amd_tools_missing(facts):
    for key in [k for k in facts['probes'] if k.startswith('amd_')]:
        del facts['probes'][key]
    facts['gpu'] = {'vendor': 'nvidia', 'installed': False, 'count': 0, 'driver_version': None,
                    'cuda_driver_version': None, 'devices': []}


BASES = {'h200x4': (h200x4_facts, h200_profile), 'hgx': (hgx_facts, hgx_profile), 'mi300x': (mi300x_facts, mi300x_profile)}


def run_case(base, mutate=None, override=None):
    make_facts, make_profile = BASES[base]
    facts = make_facts()
    if mutate:
        mutate(facts)
    return evaluate(facts, make_profile(override), 'node1')


# ---------------------------------------------------------------------------------------------
# Mutations.

def dev(facts, i):
    return facts['gpu']['devices'][i]


def setp(path, value):
    """Mutation: set facts[path] (dotted, ints index lists)."""
    def mutate(facts):
        parts = path.split('.')
        cur = facts
        for part in parts[:-1]:
            cur = cur[int(part)] if isinstance(cur, list) else cur[part]
        last = parts[-1]
        if isinstance(cur, list):
            cur[int(last)] = copy.deepcopy(value)
        else:
            cur[last] = copy.deepcopy(value)
    return mutate


def both(*mutations):
    def mutate(facts):
        for m in mutations:
            m(facts)
    return mutate


def pop_device(facts):
    facts['gpu']['devices'].pop()
    facts['gpu']['count'] = 3


def topo_pair(a, b, link):
    def mutate(facts):
        facts['gpu']['topology']['matrix']['GPU%d' % a]['GPU%d' % b] = link
        facts['gpu']['topology']['matrix']['GPU%d' % b]['GPU%d' % a] = link
    return mutate


def nic_far(facts):
    facts['gpu']['topology']['matrix']['GPU3'].update(('NIC%d' % j, 'SYS') for j in range(9))


def nvlink_links(gpu, count):
    def mutate(facts):
        facts['gpu']['nvlink'][str(gpu)]['links'] = facts['gpu']['nvlink'][str(gpu)]['links'][:count]
    return mutate


def nvlink_link(gpu, link, **changes):
    def mutate(facts):
        facts['gpu']['nvlink'][str(gpu)]['links'][link].update(changes)
    return mutate


def nvlink_errors(gpu=None, link=None, **counters):
    """Mutation: every link of the 4 GPUs with clean nvidia-smi nvlink -e counters, ``counters`` set on one link."""
    def mutate(facts):
        clean = {'replay_errors': 0, 'recovery_errors': 0, 'crc_errors': 0}
        facts['gpu']['nvlink_errors'] = dict((str(g), {'links': dict((str(l), dict(clean)) for l in range(18))}) for g in range(4))
        if gpu is not None:
            facts['gpu']['nvlink_errors'][str(gpu)]['links'][str(link)].update(counters)
    return mutate


def nvlink_all_inactive(gpu):
    def mutate(facts):
        facts['gpu']['nvlink'][str(gpu)] = {'links': [], 'all_inactive': True}
    return mutate


def section_error(key, section, gpu=None):
    """Probe ``key`` parsed, but one section of its output was not understood."""
    def mutate(facts):
        problem = {'section': section, 'error': 'unexpected line', 'excerpt': 'GPU 1: NVIDIA H200\nsomething new'}
        facts['probes'][key]['section_errors'] = [problem]
        if gpu is not None:
            facts['gpu']['nvlink'][str(gpu)]['parse_error'] = problem
    return mutate


def xid(number, pci='0000:00:08'):
    def mutate(facts):
        facts['gpu']['xid_events'] = [{
            'xid': number, 'pci': pci, 'pid': None, 'message': 'test',
            'line': 'NVRM: Xid (PCI:%s): %d, pid=1234, test' % (pci, number)}]
    return mutate


def ib_port(ca, **changes):
    def mutate(facts):
        facts['infiniband']['cas'][ca]['ports']['1'].update(changes)
    return mutate


def all_ib_ethernet(facts):
    for ca in facts['infiniband']['cas'].values():
        ca['ports']['1']['link_layer'] = 'Ethernet'


def ib_missing(facts):
    facts['infiniband'] = {'installed': False, 'cas': {}}
    facts['probes']['ibstat'] = _probe('ibstat', status='missing', rc=127)


def gpu_missing(facts):
    facts['gpu'] = {'vendor': 'nvidia', 'installed': False, 'count': 0, 'devices': []}
    facts['probes']['nvidia_query_gpu'] = _probe('nvidia-smi --query-gpu=...', status='missing', rc=127)
    facts['software']['driver_version'] = None
    facts['software']['cuda_driver_version'] = None


def iface(name, **changes):
    def mutate(facts):
        facts['network']['interfaces'][name].update(changes)
    return mutate


def roce(**changes):
    def mutate(facts):
        facts['network']['interfaces']['rdma0']['roce'].update(changes)
    return mutate


def drop_iface(name):
    def mutate(facts):
        del facts['network']['interfaces'][name]
    return mutate


def drop_module(name):
    def mutate(facts):
        facts['host']['kernel_modules'].remove(name)
    return mutate


def listen(port, proto='tcp', process='python3'):
    def mutate(facts):
        facts['host']['listening'].append({'proto': proto, 'address': '0.0.0.0', 'port': port, 'process': process})
    return mutate


def gpu_process(i, name, pid=4242, memory=3216):
    def mutate(facts):
        facts['gpu']['devices'][i]['processes'].append({'pid': pid, 'type': 'C', 'name': name, 'used_memory_mib': memory})
    return mutate


def job_process(args, pid=4100):
    def mutate(facts):
        procs = facts['host']['processes']
        procs['matched'].append({'pid': pid, 'ppid': 1, 'user': 'alice', 'etimes': 7200, 'args': args, 'pattern': 'x'})
        procs['matched_total'] += 1
    return mutate


def link_events(name, down, up=None):
    def mutate(facts):
        line = 'mlx5_core 0000:c1:00.1 %s: Link down' % name
        facts['network']['link_events'][name] = {'down': down, 'up': down if up is None else up, 'last': 'up', 'lines': [line]}
    return mutate


def probe_status(key, status, error='boom', excerpt=None):
    def mutate(facts):
        facts['probes'][key] = {'status': status, 'command': key, 'rc': 1 if status == 'failed' else 0,
                                'error': error, 'excerpt': excerpt}
    return mutate


# ---------------------------------------------------------------------------------------------
# Cases: (check id, base, mutation, profile override). FAIL: the check must report; PASS: it must not. The check
# cases of the case files (cases/<area>.yaml, written as data: case_files.py) join them.

FAIL_CASES = [
    ('gpu.amd_tools_missing', 'mi300x', amd_tools_missing, None),
    ('gpu.bad_pages', 'mi300x', setp('gpu.devices.3.bad_pages.retired', 33), None),
    ('gpu.bad_pages_pending', 'mi300x', setp('gpu.devices.3.bad_pages.pending', 1), None),
    ('gpu.xgmi_link', 'mi300x', setp('gpu.links.2-5.link_type', 'PCIE'), None),
    ('gpu.xgmi_link_down', 'mi300x', setp('gpu.links.1-2.up', False), None),
    ('gpu.xgmi_speed', 'mi300x', setp('gpu.xgmi.4.bit_rate_gbps', 16.0), None),
    ('probe.failed', 'hgx', probe_status('ibstat', 'failed', 'ibstat: timeout'), None),
    ('probe.parse_error', 'hgx', probe_status('nvidia_topo', 'parse_error', 'cannot parse', 'GPU0 garbage'), None),
    ('probe.section_parse_error', 'h200x4', section_error('nvidia_nvlink', 'gpu1', gpu=1), None),
    ('facts.not_collected', 'h200x4', None, None),
    ('facts.not_measured', 'hgx', iface('rdma0', mtu=None), None),
    ('gpu.driver_missing', 'hgx', gpu_missing, None),
    ('gpu.count', 'h200x4', pop_device, None),
    ('gpu.model', 'h200x4', setp('gpu.devices.2.name', 'NVIDIA H100 80GB HBM3'), None),
    ('gpu.memory', 'h200x4', setp('gpu.devices.1.memory_total_mib', 81559), None),
    ('gpu.pcie_link', 'h200x4', setp('gpu.devices.3.pcie_width_current', 8), None),
    ('gpu.pcie_downtrained', 'h200x4', setp('gpu.devices.0.pcie_gen_current', 4), None),
    ('gpu.persistence_mode', 'h200x4', setp('gpu.devices.0.persistence_mode', False), None),
    ('gpu.ecc_mode', 'h200x4', setp('gpu.devices.0.ecc_mode', False), None),
    ('gpu.ecc_uncorrectable', 'h200x4', setp('gpu.devices.1.ecc_errors.volatile.dram_uncorrectable', 2), None),
    ('gpu.ecc_correctable', 'h200x4', setp('gpu.devices.1.ecc_errors.aggregate.dram_correctable', 5000), None),
    ('gpu.remapped_rows_pending', 'h200x4', setp('gpu.devices.2.remapped_rows.pending', True), None),
    ('gpu.remapped_rows_failure', 'h200x4', setp('gpu.devices.2.remapped_rows.failure', True), None),
    ('gpu.retired_pages_pending', 'h200x4', setp('gpu.devices.2.retired_pages.pending', True), None),
    ('gpu.retired_pages', 'h200x4', setp('gpu.devices.2.retired_pages', {'single_bit': 8, 'double_bit': 4, 'pending': False}),
     {'gpu': {'retired_pages_max': 10}}),
    ('gpu.clock_events', 'h200x4', setp('gpu.devices.3.clocks_event_reasons_active', ['hw_slowdown', 'hw_thermal_slowdown']), None),
    ('gpu.clock_events_warn', 'h200x4', setp('gpu.devices.3.clocks_event_reasons_active', ['sw_thermal_slowdown']), None),
    ('gpu.topology', 'h200x4', topo_pair(1, 2, 'NV12'), None),
    ('gpu.nic_affinity', 'hgx', nic_far, None),
    ('gpu.driver_library_mismatch', 'h200x4', setp('gpu.kernel_module.version', '580.126.09'), None),
    ('gpu.driver_version_mixed', 'h200x4', setp('gpu.devices.3.driver_version', '570.133.20'), None),
    ('gpu.nvlink_count', 'h200x4', nvlink_links(2, 12), None),
    ('gpu.nvlink_down', 'h200x4', nvlink_link(2, 5, active=False, speed_gbps=None), None),
    ('gpu.nvlink_speed', 'h200x4', nvlink_link(2, 5, speed_gbps=13.281), None),
    ('gpu.nvlink_errors', 'h200x4', nvlink_errors(2, 5, replay_errors=3, crc_errors=17), None),
    ('gpu.xid_fatal', 'h200x4', xid(79), None),
    ('gpu.xid', 'h200x4', xid(43), None),
    ('ib.tools_missing', 'hgx', ib_missing, None),
    ('ib.port_count', 'hgx', ib_port('mlx5_3', state='Down', physical_state='Polling'), None),
    ('ib.port_state', 'hgx', ib_port('mlx5_3', state='Initializing'), None),
    ('ib.port_rate', 'hgx', ib_port('mlx5_3', rate_gbps=200), None),
    ('ib.link_layer', 'hgx', all_ib_ethernet, None),
    ('ib.ca_type', 'hgx', setp('infiniband.cas.mlx5_0.ca_type', 'MT4123'), None),
    ('ib.port_counters', 'hgx', ib_port('mlx5_1', counters={'symbol_error': 500, 'link_downed': 0}), None),
    ('network.interface_missing', 'hgx', drop_iface('eth0'), None),
    ('network.mtu', 'hgx', iface('rdma0', mtu=1500), None),
    ('network.link', 'hgx', iface('eth0', link_detected=False, operstate='DOWN'), None),
    ('network.speed', 'hgx', iface('rdma0', speed_mbps=100000), None),
    ('network.roce_pfc', 'hgx', roce(pfc={'enabled_priorities': []}), None),
    ('network.roce_ecn', 'hgx', roce(ecn={'np': {'3': True}, 'rp': {'3': False}}), None),
    ('network.roce_trust', 'hgx', roce(trust='pcp'), None),
    ('host.os', 'hgx', setp('host.os', {'id': 'centos', 'version_id': '7', 'pretty_name': 'CentOS Linux 7'}), None),
    ('host.kernel_module', 'hgx', drop_module('nvidia_peermem'), None),
    ('host.chrony_missing', 'hgx', setp('host.time', {'installed': False}), None),
    ('host.time_sync', 'hgx', setp('host.time.synchronised', False), None),
    ('host.time_offset', 'hgx', setp('host.time.offset_seconds', -0.5), None),
    ('host.memlock', 'hgx', both(setp('host.memlock_unlimited', False), setp('host.memlock_kib', 8192)), None),
    ('host.port_in_use', 'hgx', listen(29500), None),
    ('host.pcie_acs', 'hgx', setp('host.pcie_acs.enabled', ['0000:00:01.0', '0000:40:01.1']), None),
    ('gpu.compute_mode', 'h200x4', setp('gpu.devices.1.compute_mode', 'Exclusive_Process'), None),
    ('network.link_flaps', 'hgx', link_events('rdma0', 3), None),
    ('gpu.process', 'hgx', gpu_process(2, '/usr/bin/python3'), None),
    ('host.leftover_process', 'hgx', job_process('/usr/bin/mpirun -np 16 ./build/all_reduce_perf -b 8 -e 8G'), None),
    ('software.driver_version', 'hgx', setp('software.driver_version', '470.57.02'), None),
    ('software.cuda_driver_version', 'hgx', setp('software.cuda_driver_version', '12.0'), None),
    ('software.cuda_toolkit_version', 'hgx', setp('software.cuda_toolkit_version', '12.1'), None),
    ('software.nccl_version', 'h200x4', setp('software.nccl_version', '2.27.3'), None),
]

PASS_CASES = [
    ('gpu.amd_tools_missing', 'mi300x', None, None),
    ('gpu.bad_pages', 'mi300x', setp('gpu.devices.3.bad_pages.retired', 32), None),
    ('gpu.bad_pages_pending', 'mi300x', None, None),
    ('gpu.xgmi_link', 'mi300x', None, None),
    ('gpu.xgmi_link_down', 'mi300x', None, None),
    ('gpu.xgmi_speed', 'mi300x', setp('gpu.xgmi.4.bit_rate_gbps', 32.0), None),
    ('probe.failed', 'hgx', probe_status('nvcc', 'missing'), None),
    ('probe.parse_error', 'hgx', None, None),
    ('probe.section_parse_error', 'h200x4', None, None),
    ('facts.not_collected', 'hgx', None, None),
    ('facts.not_measured', 'hgx', None, None),
    ('gpu.driver_missing', 'hgx', gpu_missing,
     {'gpu': {'count': 0}, 'software': {'driver_version_min': None, 'cuda_driver_version_min': None}}),
    ('gpu.count', 'h200x4', None, None),
    ('gpu.model', 'h200x4', setp('gpu.devices.0.name', 'nvidia h200'), None),
    ('gpu.memory', 'h200x4', setp('gpu.devices.0.memory_total_mib', 143771), None),
    ('gpu.pcie_link', 'h200x4', setp('gpu.devices.0.pcie_gen_current', 1), None),
    ('gpu.pcie_downtrained', 'h200x4', setp('gpu.devices.0.pcie_gen_current', 1), {'gpu': {'pcie': {'warn_downtrained': False}}}),
    ('gpu.persistence_mode', 'h200x4', setp('gpu.devices.0.persistence_mode', False), {'gpu': {'persistence_mode_required': False}}),
    ('gpu.ecc_mode', 'h200x4', setp('gpu.devices.0.ecc_mode', False), {'gpu': {'ecc_required': False}}),
    ('gpu.ecc_uncorrectable', 'h200x4', setp('gpu.devices.1.ecc_errors.aggregate.dram_uncorrectable', 1),
     {'gpu': {'ecc_errors': {'aggregate_uncorrectable_max': 1}}}),
    ('gpu.ecc_correctable', 'h200x4', setp('gpu.devices.1.ecc_errors.aggregate.dram_correctable', 1000), None),
    ('gpu.remapped_rows_pending', 'h200x4', setp('gpu.devices.2.remapped_rows.correctable', 3), None),
    ('gpu.remapped_rows_failure', 'h200x4', None, None),
    ('gpu.retired_pages_pending', 'h200x4', None, None),
    ('gpu.retired_pages', 'h200x4', setp('gpu.devices.2.retired_pages', {'single_bit': 6, 'double_bit': 4, 'pending': False}),
     {'gpu': {'retired_pages_max': 10}}),
    ('gpu.clock_events', 'h200x4', setp('gpu.devices.3.clocks_event_reasons_active', ['sw_power_cap']), None),
    ('gpu.clock_events_warn', 'h200x4', setp('gpu.devices.3.clocks_event_reasons_active', ['sync_boost']), None),
    ('gpu.topology', 'h200x4', topo_pair(1, 2, 'NV12'), {'gpu': {'topology': {'pairs': {'2-1': 'NV12'}}}}),
    ('gpu.nic_affinity', 'hgx', None, None),
    ('gpu.driver_library_mismatch', 'h200x4', None, None),
    ('gpu.driver_version_mixed', 'hgx', None, None),
    ('gpu.nvlink_count', 'h200x4', None, None),
    ('gpu.nvlink_down', 'h200x4', both(*[nvlink_link(2, n, active=False) for n in range(12, 18)]), {'gpu': {'nvlink': {'links_per_gpu': 12}}}),
    ('gpu.nvlink_speed', 'h200x4', nvlink_link(2, 5, speed_gbps=53.125), None),
    ('gpu.nvlink_errors', 'h200x4', nvlink_errors(), None),
    ('gpu.nvlink_errors', 'h200x4', nvlink_errors(2, 5, symbol_errors=9), None),   # a counter without a bound
    ('gpu.xid_fatal', 'h200x4', xid(43), None),
    ('gpu.xid', 'h200x4', xid(43), {'gpu': {'xid': {'ignore': [43]}}}),
    ('ib.tools_missing', 'hgx', ib_missing, {'infiniband': {'ports_min': 0}}),
    ('ib.port_count', 'hgx', ib_port('mlx5_8', state='Down'), None),
    ('ib.port_state', 'hgx', ib_port('mlx5_8', state='Down', physical_state='Disabled'), None),
    ('ib.port_rate', 'hgx', ib_port('mlx5_3', rate_gbps=800), None),
    ('ib.link_layer', 'hgx', None, None),
    ('ib.ca_type', 'hgx', None, None),
    ('ib.port_counters', 'hgx', ib_port('mlx5_1', counters={'symbol_error': 9, 'port_xmit_wait': 10 ** 9}), None),
    ('network.interface_missing', 'hgx', drop_iface('eth0'), {'network': {'interfaces': {'eth0': {'required': False}}}}),
    ('network.mtu', 'hgx', None, None),
    ('network.link', 'hgx', iface('eth0', operstate='UNKNOWN'), None),
    ('network.speed', 'hgx', iface('rdma0', speed_mbps=800000), None),
    ('network.roce_pfc', 'hgx', roce(pfc={'enabled_priorities': [3, 4]}), None),
    ('network.roce_ecn', 'hgx', None, None),
    ('network.roce_trust', 'hgx', roce(trust='DSCP'), None),
    ('host.os', 'hgx', setp('host.os.version_id', '24.04'), None),
    ('host.kernel_module', 'hgx', None, {'host': {'kernel_modules_required': ['nvidia-peermem', 'ib_core']}}),
    ('host.chrony_missing', 'hgx', None, None),
    ('host.time_sync', 'hgx', None, None),
    ('host.time_offset', 'hgx', setp('host.time.offset_seconds', 0.099), None),
    ('host.memlock', 'hgx', None, None),
    ('host.port_in_use', 'hgx', listen(29501), None),
    ('host.pcie_acs', 'hgx', setp('host.pcie_acs.enabled', ['0000:00:01.0']), {'host': {'pcie_acs_must_be_disabled': False}}),
    ('gpu.compute_mode', 'h200x4', setp('gpu.devices.1.compute_mode', 'Exclusive_Process'),
     {'gpu': {'compute_modes': ['Default', 'Exclusive_Process']}}),
    ('network.link_flaps', 'hgx', both(link_events('rdma0', 1), link_events('veth9a1b2c', 40)), None),
    ('gpu.process', 'hgx', gpu_process(2, '/usr/bin/nv-hostengine'), {'gpu': {'idle_ignore_processes': ['*/nv-hostengine']}}),
    ('host.leftover_process', 'hgx', job_process('/usr/bin/mpirun -np 16 ./build/all_reduce_perf'),
     {'host': {'leftover_process_patterns': []}}),
    ('software.driver_version', 'hgx', None, {'software': {'driver_version': '550.'}}),
    ('software.cuda_driver_version', 'hgx', setp('software.cuda_driver_version', '12.10'), None),
    ('software.cuda_toolkit_version', 'hgx', setp('software.cuda_toolkit_version', '12.4.131'), None),
    ('software.nccl_version', 'h200x4', None, None),
]


def _put(path, value):
    """Mutation of a check case's ``set``: facts[path] = value, the dicts on the way made where missing."""
    def mutate(facts):
        parts = path.split('.')
        cur = facts
        for part in parts[:-1]:
            cur = cur[int(part)] if isinstance(cur, list) else cur.setdefault(part, {})
        if isinstance(cur, list):
            cur[int(parts[-1])] = copy.deepcopy(value)
        else:
            cur[parts[-1]] = copy.deepcopy(value)
    return mutate


def _drop(path):
    """Mutation of a check case's ``delete``: facts[path] removed."""
    def mutate(facts):
        parts = path.split('.')
        cur = facts
        for part in parts[:-1]:
            cur = cur[int(part)] if isinstance(cur, list) else cur[part]
        del cur[int(parts[-1]) if isinstance(cur, list) else parts[-1]]
    return mutate


def _from_case_file(area, case):
    """A check case of cases/<area>.yaml (the format: case_files.py) as (check id, base, mutation, profile override)."""
    unknown = set(case) - {'id', 'check', 'base', 'set', 'delete', 'profile', 'finds'}
    assert not unknown and case.get('base') in BASES and isinstance(case.get('finds'), bool), (
        'cases/%s.yaml, case %r: keys id, check, base (one of %s), set, delete, profile, finds (true or false); got %s'
        % (area, case['id'], sorted(BASES), sorted(case)))
    mutations = [_put(path, value) for path, value in (case.get('set') or {}).items()]
    mutations += [_drop(path) for path in case.get('delete') or ()]
    return pytest.param(case['check'], case['base'], both(*mutations), case.get('profile'), id='%s:%s' % (area, case['id']))


FAIL_CASES += [_from_case_file(area, case) for area, case in case_files.check_cases() if case['finds']]
PASS_CASES += [_from_case_file(area, case) for area, case in case_files.check_cases() if not case['finds']]


def _group_facts(**changes):
    hosts = {}
    for name in ('n1', 'n2', 'n3'):
        facts = hgx_facts()
        hosts[name] = facts
    for dotted, value in changes.items():
        setp(dotted.replace('__', '.'), value)(hosts['n3'])
    return hosts


GROUP_FAIL = [
    ('consistency.software.driver_version', {'software__driver_version': '550.54.15'}),
    ('consistency.software.nccl_version', {'software__nccl_version': '2.18.1'}),
    ('consistency.software.cuda_toolkit_version', {'software__cuda_toolkit_version': '12.2'}),
    ('consistency.host.kernel.release', {'host__kernel__release': '5.15.0-91-generic'}),
]
GROUP_PASS = [
    ('consistency.software.driver_version', {}),
    ('consistency.software.nccl_version', {'software__nccl_version': None}),
    ('consistency.software.cuda_toolkit_version', {}),
    ('consistency.host.kernel.release', {}),
]


def test_every_check_has_a_failing_and_a_passing_case():
    failing = set(_check_of(c) for c in FAIL_CASES) | set(c[0] for c in GROUP_FAIL)
    passing = set(_check_of(c) for c in PASS_CASES) | set(c[0] for c in GROUP_PASS)
    assert failing == set(CHECKS), 'checks without a failing case: %s; unknown: %s' % (
        sorted(set(CHECKS) - failing), sorted(failing - set(CHECKS)))
    assert passing == set(CHECKS), 'checks without a passing case: %s; unknown: %s' % (
        sorted(set(CHECKS) - passing), sorted(passing - set(CHECKS)))


def _check_of(case):
    return case.values[0] if hasattr(case, 'values') else case[0]


@pytest.mark.parametrize('check, base, mutate, override', FAIL_CASES, ids=[_check_of(c) for c in FAIL_CASES])
def test_check_fails(check, base, mutate, override):
    findings = run_case(base, mutate, override)
    hits = [f for f in findings if f['check'] == check]
    assert hits, 'no %s finding; got %s' % (check, [(f['check'], f['component']) for f in findings])
    for finding in hits:
        assert_finding_shape(finding)
        if not check.startswith('probe.'):
            assert finding['severity'] == CHECKS[check]['default_severity']


@pytest.mark.parametrize('check, base, mutate, override', PASS_CASES, ids=[_check_of(c) for c in PASS_CASES])
def test_check_passes(check, base, mutate, override):
    findings = run_case(base, mutate, override)
    assert not [f for f in findings if f['check'] == check], [f for f in findings if f['check'] == check]


@pytest.mark.parametrize('check, changes', GROUP_FAIL, ids=[c[0] for c in GROUP_FAIL])
def test_group_check_fails(check, changes):
    findings = evaluate_group(_group_facts(**changes))
    assert [(f['check'], f['host']) for f in findings] == [(check, 'n3')]
    assert_finding_shape(findings[0])
    assert findings[0]['severity'] == CHECKS[check]['default_severity']


@pytest.mark.parametrize('check, changes', GROUP_PASS, ids=[c[0] for c in GROUP_PASS])
def test_group_check_passes(check, changes):
    assert not [f for f in evaluate_group(_group_facts(**changes)) if f['check'] == check]


def assert_finding_shape(finding):
    assert set(finding) == {'host', 'check', 'component', 'severity', 'measured', 'expected', 'message', 'remediation'}
    assert finding['severity'] in ('fail', 'warn', 'info')
    assert finding['host'] and finding['component'] and finding['message'] and finding['remediation']
    assert '{' not in finding['remediation']


# ---------------------------------------------------------------------------------------------
# Baselines and specific behaviour.

def test_hgx_baseline_is_clean():
    assert run_case('hgx') == []


def test_h200x4_capture_baseline_only_reports_what_the_capture_lacks():
    findings = run_case('h200x4')
    assert set(f['severity'] for f in findings) == {'info'}
    assert set(f['check'] for f in findings) == {'facts.not_collected'}
    assert set(f['component'] for f in findings) == H200X4_NOT_COLLECTED
    assert summarise(findings)['status'] == 'pass'


def test_h200x4_facts_against_other_profiles_fail_loudly():
    findings = evaluate(h200x4_facts(), load_profile('h100-sxm-8'), 'node1')
    checks = set(f['check'] for f in findings if f['severity'] == 'fail')
    assert {'gpu.count', 'gpu.model'} <= checks
    assert summarise(findings)['status'] == 'fail'
    # The capture has no InfiniBand probe at all: not collected, never a pass.
    assert any(f['check'] == 'facts.not_collected' and f['component'] == 'infiniband' for f in findings)


def test_gpu_names_and_messages():
    findings = run_case('h200x4', xid(79))
    fatal = [f for f in findings if f['check'] == 'gpu.xid_fatal'][0]
    assert fatal['component'] == 'gpu2'
    assert '00000000:00:08.0' in fatal['message'] and 'fallen off the bus' in fatal['message']
    assert 'power-cycle' in fatal['remediation']
    nv = [f for f in run_case('h200x4', nvlink_link(2, 5, active=False)) if f['check'] == 'gpu.nvlink_down'][0]
    assert nv['component'] == 'gpu2/nvlink5'
    assert 'nvidia-smi nvlink --status -i 2' in nv['remediation']
    topo = [f for f in run_case('h200x4', topo_pair(1, 2, 'PHB')) if f['check'] == 'gpu.topology']
    assert [(f['component'], f['measured'], f['expected']) for f in topo] == [('gpu1<->gpu2', 'PHB', 'NV18')]


def test_pcie_measured_shows_current_and_max():
    def gen4_x16(facts):
        dev(facts, 0)['pcie_gen_current'] = 4
    found = [(f['check'], f['measured'], f['expected']) for f in run_case('h200x4', gen4_x16) if f['check'].startswith('gpu.pcie')]
    assert found == [('gpu.pcie_downtrained', 'Gen4 x16 (max Gen5 x16)', 'Gen5 x16')]

    def unknown_width(facts):
        dev(facts, 0).update(pcie_gen_current=3, pcie_gen_max=4, pcie_width_current=None)
    found = [(f['check'], f['measured']) for f in run_case('h200x4', unknown_width) if f['check'].startswith('gpu.pcie')]
    assert found == [('gpu.pcie_link', 'Gen3 x? (max Gen4 x16)')]


def test_nvlink_all_inactive_gpu_is_one_finding_and_the_others_are_checked():
    findings = run_case('h200x4', both(nvlink_all_inactive(2), nvlink_link(0, 3, active=False, speed_gbps=None)))
    found = sorted((f['check'], f['component'], f['measured'], f['severity']) for f in findings if f['severity'] != 'info')
    assert found == [('gpu.nvlink_down', 'gpu0/nvlink3', 'inactive', 'fail'),
                     ('gpu.nvlink_down', 'gpu2', 'all links inactive', 'fail')]
    assert 'nvidia-smi nvlink --status -i 2' in [f for f in findings if f['component'] == 'gpu2'][0]['remediation']


def test_section_parse_error_names_the_section_and_what_was_read():
    findings = run_case('h200x4', section_error('nvidia_nvlink', 'gpu1', gpu=1))
    found = [f for f in findings if f['severity'] != 'info']
    assert [(f['check'], f['component'], f['severity']) for f in found] == [
        ('probe.section_parse_error', 'probe nvidia_nvlink: gpu1', 'fail')]
    assert 'something new' in found[0]['message'] and 'nvidia-smi nvlink --status' in found[0]['remediation']
    # A section of a probe the profile does not need only warns.
    findings = run_case('h200x4', section_error('nvidia_nvlink', 'gpu1'), {'gpu': None, 'software': None})
    assert [(f['check'], f['severity']) for f in findings if f['check'].startswith('probe.')] == [
        ('probe.section_parse_error', 'warn')]


def nvml_mismatch(facts):
    """nvidia-smi fails as after an unfinished upgrade; /proc/driver/nvidia/version still reads."""
    text = 'Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.178\n'
    for key in ('nvidia_query_gpu', 'nvidia_smi_xml', 'nvidia_topo', 'nvidia_nvlink'):
        facts['probes'][key].update(status='failed', rc=18, error='exit code 18', excerpt=text)
    facts['gpu'] = {'vendor': 'nvidia', 'installed': True, 'count': None, 'driver_version': None, 'cuda_driver_version': None,
                    'devices': [], 'kernel_module': facts['gpu']['kernel_module'],
                    'nvml_error': {'message': 'Driver/library version mismatch', 'nvml_library_version': '580.178'}}
    facts['software'].update(driver_version=None, cuda_driver_version=None)


def test_driver_seen_from_the_kernel_module_and_nvml():
    findings = run_case('h200x4', setp('gpu.kernel_module.version', '580.126.09'))
    found = [(f['check'], f['component'], f['measured'], f['severity']) for f in findings if f['severity'] != 'info']
    assert found == [('gpu.driver_library_mismatch', 'nvidia driver', 'kernel module 580.126.09, NVML 580.159.04', 'fail')]
    # nvidia-smi cannot start at all: one finding names the cause, not one probe.failed per nvidia-smi call.
    findings = run_case('h200x4', nvml_mismatch)
    found = [(f['check'], f['component'], f['measured'], f['severity']) for f in findings if f['severity'] != 'info']
    assert found == [('gpu.driver_library_mismatch', 'nvidia driver', 'kernel module 580.159.04, NVML library 580.178', 'fail')]
    assert 'reboot' in findings[0]['remediation'] or any('reboot' in f['remediation'] for f in findings)
    # The query and the XML disagree (read during a driver change).
    findings = run_case('h200x4', both(setp('gpu.driver_version', '570.133.20'), setp('gpu.kernel_module.version', '570.133.20')))
    mixed = [(f['check'], f['measured']) for f in findings if f['check'] == 'gpu.driver_version_mixed']
    assert mixed == [('gpu.driver_version_mixed', '570.133.20: nvidia-smi -q -x; 580.159.04: gpu0, gpu1, gpu2, gpu3')]


def test_kernel_module_not_collected_is_never_a_pass():
    def old_bundle(facts):
        del facts['gpu']['kernel_module']
        facts['probes']['nvidia_proc_version'] = _probe('cat /proc/driver/nvidia/version', status='skipped', rc=None)
    found = [(f['check'], f['component'], f['severity']) for f in run_case('hgx', old_bundle)]
    assert found == [('facts.not_collected', 'nvidia driver', 'info')]


def test_xid_on_unknown_bus_names_the_pci_address():
    findings = run_case('h200x4', xid(79, pci='0000:af:00'))
    fatal = [f for f in findings if f['check'] == 'gpu.xid_fatal']
    assert fatal[0]['component'] == 'pci 0000:af:00'


def test_xid_events_are_grouped():
    def two(facts):
        line = {'xid': 13, 'pci': '0000:00:06', 'pid': 1, 'message': 'Graphics SM Warp Exception', 'line': 'NVRM: Xid ... 13'}
        facts['gpu']['xid_events'] = [dict(line), dict(line)]
    found = [f for f in run_case('h200x4', two) if f['check'] == 'gpu.xid']
    assert len(found) == 1 and found[0]['measured'] == 'Xid 13 x2' and found[0]['component'] == 'gpu0'


def test_ib_port_down_names_port_and_count():
    findings = run_case('hgx', ib_port('mlx5_3', state='Down', physical_state='Polling'))
    by_check = dict((f['check'], f) for f in findings)
    assert by_check['ib.port_count']['measured'] == 7 and by_check['ib.port_count']['expected'] == 8
    assert 'mlx5_3/1' in by_check['ib.port_count']['message']
    assert by_check['ib.port_state']['component'] == 'mlx5_3/1'
    assert 'ibstat mlx5_3 1' in by_check['ib.port_state']['remediation']


def test_ibstat_present_without_devices_fails_the_port_count():
    # Like tests/fixtures/hardware/debian12-vm-noaccel/ibstat.txt: the tool ran and printed nothing.
    findings = run_case('hgx', setp('infiniband', {'installed': True, 'cas': {}}))
    assert [f['measured'] for f in findings if f['check'] == 'ib.port_count'] == [0]


def test_skipped_probe_is_info_not_pass_and_not_fail():
    def skipped(facts):
        facts['infiniband'] = {'installed': None, 'cas': {}}
        facts['probes']['ibstat'] = _probe('ibstat', status='skipped', rc=None)
    findings = run_case('hgx', skipped)
    assert [(f['check'], f['severity']) for f in findings] == [('facts.not_collected', 'info')]


def test_failed_probe_fails_once_and_dependent_checks_stay_silent():
    def broken(facts):
        facts['infiniband'] = {'installed': True, 'cas': {}}
        facts['probes']['ibstat'] = {'status': 'parse_error', 'command': 'ibstat', 'rc': 0,
                                     'error': 'cannot parse ibstat output: no CA line', 'excerpt': 'garbage'}
    findings = run_case('hgx', broken)
    checks = [f['check'] for f in findings]
    assert 'probe.parse_error' in checks
    probe = [f for f in findings if f['check'] == 'probe.parse_error'][0]
    assert probe['severity'] == 'fail' and 'garbage' in probe['message'] and 'no CA line' in probe['message']


def test_failed_probe_irrelevant_to_the_profile_only_warns():
    findings = run_case('h200x4', probe_status('ibstat', 'failed', 'ibstat: timeout'))
    probe = [f for f in findings if f['check'] == 'probe.failed'][0]
    assert probe['severity'] == 'warn' and probe['component'] == 'probe ibstat'


def test_missing_nvcc_fails_a_required_toolkit():
    def no_nvcc(facts):
        facts['software']['cuda_toolkit_version'] = None
        facts['probes']['nvcc'] = _probe('nvcc --version', status='missing', rc=127)
    found = [f for f in run_case('hgx', no_nvcc) if f['check'] == 'software.cuda_toolkit_version']
    assert found and found[0]['measured'] == 'not found' and found[0]['severity'] == 'fail'


def test_gpu_driver_missing_is_reported_once():
    findings = run_case('hgx', gpu_missing)
    checks = [f['check'] for f in findings]
    assert checks.count('gpu.driver_missing') == 1
    assert not [c for c in checks if c.startswith('gpu.') and c != 'gpu.driver_missing']
    assert 'software.driver_version' not in checks


def test_site_overrides_disable_and_severity():
    mutate = both(setp('gpu.devices.0.persistence_mode', False), setp('host.time.offset_seconds', 1.0))
    findings = run_case('hgx', mutate, {'checks': {'disable': ['host.time_*'], 'severity': {'gpu.persistence_*': 'info'}}})
    assert [(f['check'], f['severity']) for f in findings] == [('gpu.persistence_mode', 'info')]
    findings = run_case('hgx', mutate, {'checks': {'severity': {'gpu.persistence_mode': 'warn', 'gpu.*': 'info'}}})
    assert ('gpu.persistence_mode', 'warn') in [(f['check'], f['severity']) for f in findings]


def test_apply_overrides_leaves_input_alone():
    finding = {'host': 'h', 'check': 'gpu.count', 'component': 'gpu', 'severity': 'fail', 'measured': 1, 'expected': 2,
               'message': 'm', 'remediation': 'r'}
    out = apply_overrides([finding], {'severity': {'gpu.count': 'warn'}})
    assert out[0]['severity'] == 'warn' and finding['severity'] == 'fail'


def test_evaluate_validates_the_profile():
    with pytest.raises(ProfileError) as err:
        evaluate(hgx_facts(), {'schema_version': 1, 'name': 'x', 'gpu': {'count': 8, 'modle': 'H100'}}, 'node1')
    assert "did you mean 'model'" in str(err.value)


def test_evaluate_tolerates_empty_and_odd_facts():
    profile = hgx_profile()
    for facts in ({}, {'gpu': None, 'infiniband': [], 'network': 'x', 'host': None, 'software': None, 'probes': []}):
        findings = evaluate(facts, profile, 'node1')
        assert findings and all(f['severity'] in ('info', 'fail', 'warn') for f in findings)


def test_group_tie_flags_every_host_and_overrides_apply():
    hosts = _group_facts()
    setp('software.nccl_version', '2.18.1')(hosts['n2'])
    setp('software.nccl_version', '2.19.3')(hosts['n3'])
    findings = evaluate_group(hosts, keys=('software.nccl_version',))
    assert sorted(f['host'] for f in findings) == ['n1', 'n2', 'n3']
    assert all(f['expected'] == 'one value on every host' for f in findings)
    profile = {'schema_version': 1, 'name': 'x', 'checks': {'disable': ['consistency.*']}}
    assert evaluate_group(hosts, keys=('software.nccl_version',), profile=profile) == []


def test_driver_drift_between_hosts_fails_a_production_gate():
    # A job whose ranks run different drivers is the classic NCCL hang: fail by default, not warn.
    findings = evaluate_group(_group_facts(software__driver_version='550.54.15'))
    assert [(f['host'], f['check'], f['severity']) for f in findings] == [('n3', 'consistency.software.driver_version', 'fail')]
    assert 'NCCL' in findings[0]['remediation']


def test_group_custom_key():
    hosts = _group_facts()
    setp('host.os.version_id', '24.04')(hosts['n1'])
    findings = evaluate_group(hosts, keys=('host.os.version_id',))
    assert [(f['check'], f['host'], f['severity'], f['expected']) for f in findings] == [
        ('consistency.host.os.version_id', 'n1', 'warn', '22.04')]
    assert '22.04' in findings[0]['remediation']


def test_summarise():
    assert summarise([]) == {'status': 'pass', 'counts': {'fail': 0, 'warn': 0, 'info': 0}, 'hosts': {}}
    findings = [{'host': 'a', 'severity': 'info'}, {'host': 'b', 'severity': 'warn'}, {'host': 'b', 'severity': 'fail'},
                {'host': 'c', 'severity': 'warn'}]
    summary = summarise(findings)
    assert summary['status'] == 'fail'
    assert summary['counts'] == {'fail': 1, 'warn': 2, 'info': 1}
    assert summary['hosts'] == {'a': 'pass', 'b': 'fail', 'c': 'warn'}
    assert summarise(findings[:1] + findings[3:])['status'] == 'warn'


@pytest.mark.parametrize('value, pattern, expected', [
    ('580.159.04', '580.159.04', True), ('580.159.04', '580', True), ('580.159.04', '580.', True),
    ('580.159.04', '580.*', True), ('580.159.04', '58', False), ('2.2.1', '2.28', False), ('13.0.88', '13.0', True),
    ('12.4', '12.4.1', False), ('2.28.9', '2.28.09', True),
])
def test_version_matches(value, pattern, expected):
    assert version_matches(value, pattern) is expected


@pytest.mark.parametrize('value, minimum, expected', [
    ('12.10', '12.4', True), ('12.4', '12.4', True), ('12.3', '12.4', False), ('550.90.07', '535', True), ('470', '470.1', False),
])
def test_version_at_least(value, minimum, expected):
    assert version_at_least(value, minimum) is expected


@pytest.mark.parametrize('measured, expected, ok', [
    ('NV18', 'NV18', True), ('NV18', 'NV12', True), ('NV12', 'NV18', False), ('PIX', 'NV1', False), ('NV4', 'PIX', True),
    ('PXB', 'PHB', True), ('SYS', 'NODE', False), ('SOC', 'SYS', True), (None, 'SYS', False), ('X', 'SYS', False),
])
def test_link_at_least(measured, expected, ok):
    assert link_at_least(measured, expected) is ok


def test_docs_checks_md_is_generated():
    assert_current('docs/checks.md')


def test_every_check_is_documented_with_remediation():
    for check, entry in CHECKS.items():
        assert entry['default_severity'] in ('fail', 'warn', 'info'), check
        assert len(entry['remediation']) > 40, check
        assert entry['title'] and entry['component_kind'] and entry['compares'], check


def test_each_unmeasured_value_is_reported():
    findings = run_case('hgx', iface('rdma0', mtu=None, speed_mbps=None))
    assert sorted(f['expected'] for f in findings if f['check'] == 'facts.not_measured') == ['MTU', 'link speed']

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The schema of the node facts: every section and key that ``xuanwu.cluster.node_probe`` returns (what
``_probe.assemble`` builds from the parsers' results), its type, whether it may be null, its unit and what it
means, and the probe it comes from. ``validate(facts)`` lists what a facts dictionary holds that the schema does
not declare (or declares with another type); docs/facts.md is generated from here (``facts_markdown``).

Pure: no I/O, no Ansible; Python 3.8.

A spec is a dict: ``type`` is ``dict`` (fixed ``keys``), ``map`` (any string keys, named ``key`` in the docs,
each value ``values``), ``list`` (``elements``), or a scalar ``str``, ``int``, ``float`` (any number), ``bool``
(a tuple of scalars allows each). ``null``: the value may be null. ``choices``: the values a string may take.
``unit``, ``description``, ``vendor`` (``nvidia`` or ``amd``: that GPU vendor's nodes only) and ``probe`` (the
probes whose output the value comes from, space separated) are for the docs.

Where a probe declares the fact its output lands at (``lands`` of _collect.Probe), its ``probe`` here is derived from
that declaration (mark_landings), never written by hand; ``_probe.place`` puts the output there, and reads ``vendor``
(placed on that vendor's nodes only) and ``null`` (null when the output was not parsed, else left out) of the fact.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils import _collect, _spec

SCHEMA_VERSION = 1


def _fact(kind, description, **extra):
    spec = {'type': kind, 'description': description}
    spec.update((key, value) for key, value in extra.items() if value is not None and value is not False)
    return spec


def _str(description, **extra):
    return _fact('str', description, **extra)


def _int(description, **extra):
    return _fact('int', description, **extra)


def _num(description, **extra):
    return _fact('float', description, **extra)


def _bool(description, **extra):
    return _fact('bool', description, **extra)


def _dict(description, keys, **extra):
    return _fact('dict', description, keys=keys, **extra)


def _map(key, values, description, pattern=None, **extra):
    """A mapping of any string keys (``key``: their name in the docs; ``pattern``: what each must match)."""
    key_spec = {'type': 'str', 'description': key}
    if pattern:
        key_spec['pattern'] = pattern
    return _fact('map', description, key=key_spec, values=values, **extra)


def _list(elements, description, **extra):
    return _fact('list', description, elements=elements, **extra)


def _from(probe, keys):
    """``keys``, each marked as coming from ``probe``."""
    return dict((name, dict(spec, probe=probe)) for name, spec in keys.items())


def _joined(*parts):
    """The keys of every mapping of ``parts``, in order."""
    out = {}
    for part in parts:
        out.update(part)
    return out


def _with_parse_error(keys):
    """``keys`` and ``parse_error``: the section can hold a part that was not understood."""
    out = dict(keys)
    out['parse_error'] = PARSE_ERROR
    return out


PARSE_ERROR = _dict(
    'Only when part of this section was not understood (see the conventions): that part, also listed under the '
    "probe's `section_errors`; a `probe.section_parse_error` finding names it.", {
        'section': _str('The section as a finding names it (`gpu2`, `mlx5_0/1`, `row GPU1`, `eth0`).'),
        'error': _str('What was wrong.'),
        'excerpt': _str('The lines read.'),
    }, shared=True)

_PROBE_RECORD = _dict('What one probe did.', {
    'status': _str('`missing`: the tool is not installed (command not found, rc 127): a fact, not a failure; the '
                   'checks decide whether it matters for the profile. `skipped`: not in the capture bundle. '
                   '`parse_error`: the output (or, in a replay, the bundle file) was not read.',
                   choices=('ok', 'missing', 'failed', 'parse_error', 'skipped')),
    'command': _str('The command line (or `cat FILE`, `grep -H . GLOB...`, `internal:NAME`) as run, or as the bundle '
                    'records it.'),
    'rc': _int('Exit status.', null=True),
    'error': _str('Text of the parse error or failure; in a replay, a bundle file not read names the bundle, the file '
                  'and the reason (`capture bundle DIR: ibstat.txt: is a FIFO; a bundle holds only regular files`).',
                  null=True),
    'excerpt': _str('The first 400 characters of what was read, for parse_error and failed.', null=True),
    'note': _str('Replay only, when the bundle file held bytes that are not UTF-8: `FILE: N byte sequence(s) that are '
                 'not UTF-8 were read as U+FFFD`.'),
    'section_errors': _list(PARSE_ERROR, 'Only when some sections were not understood (the status stays ok): their '
                                         '`parse_error` records.'),
})

_PROBES = _map('probe', _PROBE_RECORD, 'One entry per probe that ran, by probe key (docs/capture-format.md; `NAME:IF` '
                                       'for the probes run per network interface).', pattern=r'^[a-z][a-z0-9_]*(:\S+)?$')

# ------------------------------------------------------------------------------------------------------------- gpu

_ECC_COUNTS = {
    'sram_correctable': _int('On-chip (SRAM) correctable errors (older drivers: the on-chip locations of '
                             '`<single_bit>`).', null=True, vendor='nvidia'),
    'sram_uncorrectable': _int('On-chip uncorrectable errors (parity + SEC-DED since R550, summed).', null=True,
                               vendor='nvidia'),
    'dram_correctable': _int('Device memory (DRAM/HBM) correctable errors.', null=True, vendor='nvidia'),
    'dram_uncorrectable': _int('Device memory uncorrectable errors.', null=True, vendor='nvidia'),
    'correctable': _int('Correctable errors (amd-smi metric `ecc`).', null=True, vendor='amd'),
    'uncorrectable': _int('Uncorrectable errors.', null=True, vendor='amd'),
    'deferred': _int('Deferred errors.', null=True, vendor='amd'),
}

_AMD_BLOCK_COUNTS = dict((name, _ECC_COUNTS[name]) for name in ('correctable', 'uncorrectable', 'deferred'))

_GPU_PROCESS = _dict('One process.', {
    'pid': _int('Process id.', null=True),
    'type': _str('`C` compute, `G` graphics, `C+G`.', null=True),
    'name': _str('Process name as nvidia-smi prints it.', null=True),
    'used_memory_mib': _int('GPU memory it uses.', null=True, unit='MiB'),
    'command': _str('Joined by pid with the `processes` probe, when the process is in its list: the full command '
                    'line.'),
    'user': _str('Its user (ps).'),
    'etimes': _int('Seconds since it started (ps).', unit='s'),
    'ppid': _int('Its parent (ps).'),
    'parent_command': _str("The parent's command line, when the parent is in the ps list."),
})

_DEVICE = _dict('One GPU.', _with_parse_error({
    'index': _int('GPU index; NVIDIA: null only in a row that was not understood.', null=True),
    'name': _str('Product name (`NVIDIA H200`; AMD: `asic.market_name`).', null=True),
    'uuid': _str('GPU UUID.', null=True, vendor='nvidia'),
    'bus_id': _str('PCI address as the tool prints it (`00000000:00:06.0`; AMD `bus.bdf`).', null=True),
    'serial': _str('ASIC serial (`asic.asic_serial`).', null=True, vendor='amd'),
    'driver_version': _str('Driver version this GPU reports.', null=True),
    'memory_total_mib': _int('Memory size (amd-smi prints MB for MiB).', null=True, unit='MiB'),
    'pcie_gen_current': _int('Current PCIe link generation (AMD: from metric `pcie.speed` in GT/s, 32 -> 5).',
                             null=True),
    'pcie_gen_max': _int('Highest generation the link can train to (AMD: `bus.pcie_interface_version` "Gen 5", else '
                         'from `max_pcie_speed`).', null=True),
    'pcie_width_current': _int('Current PCIe link width (lanes).', null=True),
    'pcie_width_max': _int('Maximum PCIe link width (lanes).', null=True),
    'pcie_replay_count': _int('PCIe replays.', null=True, vendor='amd'),
    'persistence_mode': _bool('Persistence mode on.', null=True, vendor='nvidia'),
    'ecc_mode': _bool('ECC enabled now (AMD: `ras.ecc_block_state.UMC` ENABLED).', null=True),
    'clocks_max_sm_mhz': _int('Maximum SM clock.', null=True, unit='MHz', vendor='nvidia'),
    'ecc_errors': _dict('ECC error counters (NVIDIA: from `nvidia-smi -q -x`, matched by bus id; AMD: amdgpu\'s RAS '
                        'counters, which count since the driver loaded: volatile); null when the XML has no such GPU.', {
                            'volatile': _dict('Since the driver loaded.', _ECC_COUNTS, null=True),
                            'aggregate': _dict('Over the GPU lifetime.', _ECC_COUNTS, null=True, vendor='nvidia'),
                        }, null=True),
    'ecc_blocks': _map('block', _dict('One block.', _AMD_BLOCK_COUNTS),
                       'RAS counters per block (`umc`, `gfx`, `sdma`, `mmhub`, `xgmi_wafl`, ...).', vendor='amd'),
    'retired_pages': _dict('Retired pages (`multiple_single_bit_retirement`, `double_bit_retirement`, '
                           '`pending_retirement` or the older `pending_blacklist`); null where not reported.', {
                               'single_bit': _int('Pages retired for multiple single-bit errors.', null=True),
                               'double_bit': _int('Pages retired for double-bit errors.', null=True),
                               'pending': _bool('A retirement waits for a driver reload.', null=True),
                           }, null=True, vendor='nvidia'),
    'remapped_rows': _dict('Row remapping (Ampere on); null where not reported.', {
        'correctable': _int('Rows remapped for correctable errors.', null=True),
        'uncorrectable': _int('Rows remapped for uncorrectable errors.', null=True),
        'pending': _bool('A remapping waits for a GPU reset.', null=True),
        'failure': _bool('A remapping failed.', null=True),
    }, null=True, vendor='nvidia'),
    'clocks_event_reasons_active': _list(_str('A reason (`hw_slowdown`, `hw_thermal_slowdown`, `sw_power_cap`...).'),
                                         'Active clock event (throttle) reasons; `gpu_idle`, '
                                         '`applications_clocks_setting` and `display_clocks_setting` are left out.',
                                         null=True, vendor='nvidia'),
    'max_operating_temp_c': _int("The driver's maximum operating temperature: `gpu_temp_max_gpu_threshold`, or "
                                 '`gpu_temp + gpu_temp_tlimit - gpu_temp_max_gpu_tlimit_threshold` (T.Limit GPUs, '
                                 'Hopper on); null when not reported. The heat bound of the dmon samples where the '
                                 'profile sets no `monitoring.gtemp_max_c`.', null=True, unit='C', vendor='nvidia'),
    'compute_mode': _str('`Default`, `Exclusive_Thread`, `Exclusive_Process` or `Prohibited`.', null=True,
                         vendor='nvidia'),
    'processes': _list(_GPU_PROCESS, 'The `<processes>` of the GPU (`[]` when idle, null when not reported).',
                       null=True, vendor='nvidia'),
    'temperature_c': _dict('Temperatures.', {
        'edge': _num('Edge sensor.', null=True, unit='C'),
        'hotspot': _num('Junction (hotspot) sensor.', null=True, unit='C'),
        'vram': _num('Memory sensor.', null=True, unit='C'),
    }, vendor='amd'),
    'bad_pages': _dict('`amd-smi bad-pages` page counts (0 for "No bad pages found."; null where N/A).', {
        'retired': _int('Retired pages.', null=True),
        'pending': _int('Pages waiting to be retired.', null=True),
        'unreservable': _int('Pages that could not be reserved.', null=True),
    }, vendor='amd'),
    'vbios_version': _str('VBIOS (or IFWI) version.', null=True, vendor='amd'),
    'compute_partition': _str('Compute partition (`SPX`, `CPX`...).', null=True, vendor='amd'),
    'memory_partition': _str('Memory partition (`NPS1`, `NPS4`...).', null=True, vendor='amd'),
}))

_TOPOLOGY = _dict('`nvidia-smi topo -m`.', _with_parse_error({
    'devices': _list(_str('A label (`GPU0`, `NIC0`, or `mlx5_0` on drivers that name NICs directly).'),
                     'The column labels, in order.'),
    'matrix': _map('device', _map('device', _str('The cell as printed: `NV18`, `SYS`, `NODE`, `PHB`, `PXB`, `PIX`...'),
                                  'Its connection to every other device.'),
                   'Symmetric (a side that was not printed is filled from the other), no self entries.'),
    'affinity': _map('device', _dict('Affinity of one row.', {
        'cpu': _str('CPU affinity (`0-63`).', null=True),
        'numa': _str('NUMA affinity.', null=True),
        'gpu_numa_id': _str('GPU NUMA id.', null=True),
    }), 'The affinity columns of the rows that print them (N/A: null).'),
    'nic_names': _map('NIC', _str('Device name (`mlx5_0`).'), 'From the "NIC Legend" block, when present.'),
}), vendor='nvidia')

_NVLINK = _map('gpu', _dict('One GPU.', _with_parse_error({
    'links': _list(_dict('One link.', {
        'link': _int('Link number.'),
        'speed_gbps': _num('Speed as printed; null for `<inactive>`.', null=True, unit='GB/s'),
        'active': _bool('The link is up.'),
    }), 'Its links.'),
    'all_inactive': _bool('nvidia-smi printed "NVML: Unable to retrieve NVLink information as all links are inActive" '
                          'for this GPU (`links: []`).'),
})), '`nvidia-smi nvlink --status`, by GPU index as a string.', vendor='nvidia')

_NVLINK_ERRORS = _map('gpu', _dict('One GPU.', _with_parse_error({
    'links': _map('link', _map('counter', _int('The count; N/A: null.', null=True),
                               'Each printed counter in lower case with `_`: `replay_errors`, `recovery_errors`, '
                               '`crc_errors`; `rx_errors`, `symbol_errors`, `fec_errors_3`... on newer drivers.'),
                  'By link number as a string.'),
})), '`nvidia-smi nvlink -e` (error counters since the driver loaded or they were reset), by GPU index as a string.',
    vendor='nvidia')

_AMD_LINK_SIDE = _dict('One side.', {
    'link_type': _str('`XGMI`, `PCIE`...', null=True),
    'status': _str('Link state as reported (`ENABLED`, `DISABLED`, `UP`...).', null=True),
    'up': _bool('From the status; null when none is reported.', null=True),
    'hops': _int('Hops.', null=True),
    'weight': _int('Weight.', null=True),
    'bandwidth': _str('Bandwidth as printed.'),
})

_GPU_DESCRIPTION = ('The GPUs: on NVIDIA nodes from nvidia-smi (`--query-gpu`, `-q -x`, `topo -m`, `nvlink`), the loaded '
                    'kernel module and the kernel log; on AMD nodes from amd-smi, else rocm-smi.')

_GPU = _dict(_GPU_DESCRIPTION, {
    'vendor': _str('`amd` when the AMD probes ran and nvidia-smi did not answer.', choices=('nvidia', 'amd')),
    'installed': _bool('nvidia-smi (AMD: amd-smi or rocm-smi) present; null when its probe did not run.', null=True,
                       probe='nvidia_query_gpu amd_static'),
    'tool': _str('`amd-smi` or `rocm-smi`: which one answered `amd_static`.', null=True, vendor='amd'),
    'count': _int('Number of GPUs; null when not known (0 when the tool is missing).', null=True),
    'driver_version': _str('Driver version (`580.159.04`; AMD: the amdgpu driver, `amd-smi static` '
                           '`driver.version`).', null=True, probe='nvidia_smi_xml nvidia_query_gpu amd_static'),
    'cuda_driver_version': _str('The CUDA version the driver supports (`nvidia-smi -q -x` `<cuda_version>`).',
                                null=True, probe='nvidia_smi_xml', vendor='nvidia'),
    'rocm_version': _str('ROCm version (`amd-smi version`); also `software.rocm_version`.', null=True,
                         probe='amd_version', vendor='amd'),
    'amd_smi_version': _str('amd-smi version.', null=True, probe='amd_version', vendor='amd'),
    'devices': _list(_DEVICE, 'Ordered by index. NVIDIA: `--query-gpu` rows with the `-q -x` details merged in by bus '
                              'id; AMD: `amd-smi static` merged with `metric` and `bad-pages` by index.',
                     probe='nvidia_query_gpu nvidia_smi_xml amd_static amd_metric amd_bad_pages processes'),
    'topology': _TOPOLOGY,
    'nvlink': _NVLINK,
    'nvlink_errors': _NVLINK_ERRORS,
    'kernel_module': _dict("`/proc/driver/nvidia/version`: the loaded kernel module's own version.", {
        'version': _str('Module version (`580.159.04`).'),
        'flavour': _str('Open or proprietary modules.', choices=('open', 'proprietary')),
        'arch': _str('Architecture (`x86_64`); null when not printed.', null=True),
        'gcc_version': _str('GCC that built it; null when not printed.', null=True),
    }, vendor='nvidia'),
    'nvml_error': _dict('Only when `nvidia-smi --query-gpu` failed: what NVML said (null when it said nothing '
                        'readable).', {
                            'message': _str('From "Failed to initialize NVML: <message>" (`Driver/library version '
                                            'mismatch`).', null=True),
                            'nvml_library_version': _str('The "NVML library version:" line, null if absent.',
                                                         null=True),
                        }, null=True, probe='nvidia_query_gpu', vendor='nvidia'),
    'xid_events': _list(_dict('One event.', {
        'xid': _int('Xid number.'),
        'pci': _str('PCI address as printed (`0000:18:00`).'),
        'pid': _int("Process id; null when the driver printed '<unknown>' or nothing (older drivers).", null=True),
        'name': _str('Process name; null likewise.', null=True),
        'message': _str('The rest of the line (`GPU has fallen off the bus.`).'),
        'line': _str('The raw line.'),
    }), 'Kernel log lines "NVRM: Xid (PCI:0000:18:00): 79, ...", in log order.', vendor='nvidia'),
    'links': _map('pair', _dict('One pair.', {
        'link_type': _str('`XGMI` only when both sides say so, else the other type reported (`PCIE`).', null=True),
        'up': _bool('False when either side says DISABLED / down; null when no state is reported.', null=True),
        'status': _str('The link_status values read (both sides), "/"-joined.', null=True),
        'hops': _int('The larger of the two sides.', null=True),
        'bit_rate_gbps': _num('`amd-smi xgmi` bit_rate (the lower of the two GPUs).', null=True, unit='Gb/s'),
        'sides': _map('side', _AMD_LINK_SIDE, 'Each side as the tool reported it (`"0->1"`).'),
    }), 'Every GPU pair "A-B" (A < B): `amd-smi topology --json` (+ `amd-smi xgmi --json`), or `rocm-smi --showtopo`.',
        probe='amd_topology amd_xgmi', vendor='amd'),
    'xgmi': _map('gpu', _dict('One GPU.', _with_parse_error({
        'link_type': _str('Link type.', null=True),
        'bit_rate_gbps': _num('Bit rate.', null=True, unit='Gb/s'),
        'max_bandwidth_gbps': _num('Maximum bandwidth.', null=True, unit='GB/s'),
        'links': _map('peer', _dict('One peer.', {
            'status': _str('State as printed (`U`, `D`, `ENABLED`...).', null=True),
            'up': _bool('From the status; null when none is printed.', null=True),
        }), 'By peer GPU index.'),
    })), '`amd-smi xgmi --json`, by GPU index as a string.', vendor='amd'),
}, notes=(
    'When nvidia-smi is missing: `gpu: {vendor: nvidia, installed: false, count: 0, devices: []}`.',
    'The AMD probes (`amd_static`, `amd_metric`, `amd_bad_pages`, `amd_topology`, `amd_xgmi`, `amd_version`; '
    'docs/capture-format.md) run in the same probe call only when the node has `amd-smi` or `rocm-smi` (on PATH or in '
    '`/opt/rocm/bin`); a node with neither reads as an NVIDIA node. Where amd-smi is absent, `amd_static` and '
    '`amd_topology` fall back to `rocm-smi --showallinfo --json` and `rocm-smi --showtopo --json`, which print no ECC '
    'counters, PCIe generation, ECC mode or link state: those stay null (never a pass, see docs/checks.md). When the '
    'AMD probes ran and nvidia-smi did not answer, `gpu` is built from them, with the NVIDIA keys where the meaning is '
    'the same.',
    'A node without amd-smi and rocm-smi whose profile says `gpu.vendor: amd` fails `gpu.amd_tools_missing` (the '
    'NVIDIA facts, `installed: false`). `software.rocm_version` is present on AMD nodes only.',
))

# ------------------------------------------------------------------------------------------------------ infiniband

_COUNTERS = _map('counter', _int('Raw sysfs value (`port_rcv_data`/`port_xmit_data` count 4-byte words).'),
                 'sysfs `counters` and `hw_counters` of the port (`symbol_error`, `link_downed`, `port_rcv_errors`...).')

_PORT = _dict('One port.', _with_parse_error({
    'state': _str('`Active`, `Down`, `Initializing`, `Armed`.', null=True),
    'physical_state': _str('`LinkUp`, `Polling`, `Disabled`...', null=True),
    'rate_gbps': _num('Rate (an integer, `2.5` for fractional rates).', null=True, unit='Gb/s'),
    'link_layer': _str('`InfiniBand` or `Ethernet`.', null=True),
    'base_lid': _int('Base LID.', null=True),
    'lmc': _int('LMC.', null=True),
    'sm_lid': _int('Subnet manager LID.', null=True),
    'capability_mask': _str('Capability mask as printed.', null=True),
    'port_guid': _str('Port GUID.', null=True),
    'counters': dict(_COUNTERS, probe='ib_counters', description='Error counters of the port, when read: ' +
                     _COUNTERS['description']),
}))

_INFINIBAND = _dict('InfiniBand HCAs (`ibstat`), with their sysfs port counters.', {
    'installed': _bool('ibstat present; null when the probe did not run.', null=True, probe='ibstat'),
    'cas': _map('ca', _dict('One HCA; a field ibstat did not print is null.', _with_parse_error({
        'ca_type': _str('CA type (`MT4129`).', null=True),
        'number_of_ports': _int('Number of ports.', null=True),
        'firmware': _str('Firmware version.', null=True),
        'hardware_version': _str('Hardware version.', null=True),
        'node_guid': _str('Node GUID.', null=True),
        'system_image_guid': _str('System image GUID.', null=True),
        'ports': _map('port', _PORT, 'By port number as a string.'),
    })), 'By CA name (`mlx5_0`); `{}` without HCAs.', probe='ibstat'),
})

# --------------------------------------------------------------------------------------------------------- network

_PRIORITY_FLAGS = _map('priority', _bool('On.'), 'By priority (0-7) as a string.')

_ROCE = _dict('Only on interfaces backed by an RDMA device, when readable.', {
    'ecn': _dict('sysfs ECN knobs per priority.', {
        'np': dict(_PRIORITY_FLAGS, description='Notification point (the receiver sends CNPs).'),
        'rp': dict(_PRIORITY_FLAGS, description='Reaction point (the sender slows down).'),
    }, probe='roce_ecn'),
    'pfc': _dict('PFC: `dcb -j pfc show` (`prio_pfc`, `pfc_cap`, `macsec_bypass`, `delay`), else `mlnx_qos` (`trust`, '
                 '`dcbx_mode`, `pfc`, `buffer`, `tc`, `dscp2prio`).', {
                     'enabled_priorities': _list(_int('A priority.'), 'Priorities with PFC on.'),
                     'prio_pfc': dict(_PRIORITY_FLAGS, description='PFC per priority (dcb).'),
                     'pfc_cap': _int('Traffic classes that can have PFC (dcb).', null=True),
                     'macsec_bypass': _bool('MACsec bypass (dcb).', null=True),
                     'delay': _int('PFC delay (dcb).', null=True),
                     'trust': _str('`dscp` or `pcp` (mlnx_qos); null on tool versions that do not print it.',
                                   null=True),
                     'dcbx_mode': _str('DCBX mode (mlnx_qos).', null=True),
                     'pfc': dict(_PRIORITY_FLAGS, description='PFC per priority (mlnx_qos).'),
                     'buffer': _map('priority', _int('Buffer.'), 'Receive buffer per priority (mlnx_qos).'),
                     'tc': _map('tc', _dict('One traffic class.', {
                         'tsa': _str('Transmission selection algorithm (`ets`, `strict`...).'),
                         'bw_percent': _int('ETS bandwidth share.', null=True, unit='%'),
                         'ratelimit': _str('Rate limit as printed.'),
                         'priorities': _list(_int('A priority.'), 'Its priorities.'),
                     }), 'Traffic classes (mlnx_qos).'),
                     'dscp2prio': _map('dscp', _int('The priority.'), 'DSCP to priority mapping (mlnx_qos).'),
                 }, probe='roce_pfc'),
    'trust': _str('`dscp` or `pcp`: mlnx_qos only.', probe='roce_pfc'),
})

_INTERFACE = _dict('One interface.', _with_parse_error(_joined(
    _from('ip_link', {
        'mtu': _int('MTU.', null=True, unit='bytes'),
        'operstate': _str('As ip prints it (`UP`).', null=True),
        'flags': _list(_str('A flag.'), '`[BROADCAST, MULTICAST, UP, LOWER_UP]`.'),
        'link_type': _str('`ether`, `infiniband`, `loopback`...', null=True),
        'address': _str('Link-layer address.', null=True),
        'kind': _str('`ip -d` linkinfo kind (`veth`, `bridge`, `ipoib`, `bond`...); null for a plain NIC.', null=True),
        'slave_kind': _str('linkinfo slave kind (`bond`, `bridge`).', null=True),
        'master': _str('Its master (bond, bridge).', null=True),
        'altnames': _list(_str('A name.'), 'Alternative names.'),
        'parentbus': _str('Parent bus (`pci`).', null=True),
        'parentdev': _str('Parent device (`0000:17:00.0`).', null=True),
    }),
    _from('ethtool', {
        'ifname': _str('The interface ethtool names.', null=True),
        'speed_mbps': _int('ethtool Speed; null when Unknown.', null=True, unit='Mb/s'),
        'duplex': _str('Duplex; null when unknown.', null=True, choices=('full', 'half')),
        'link_detected': _bool('Link detected.', null=True),
        'autoneg': _bool('Auto-negotiation on.', null=True),
        'port': _str('Port as ethtool names it (`Direct Attach Copper`, `FIBRE`, `Other`).', null=True),
        'lanes': _int('Lanes.', null=True),
    }),
    _from('ethtool_driver', {
        'driver': _str('Driver (`ethtool -i`: `mlx5_core`, `virtio_net`).', null=True),
        'version': _str('Driver version.', null=True),
        'firmware': _str('Firmware version (mlx5: `28.39.1002`).', null=True),
        'psid': _str('Board id in parentheses after the firmware (`MT_0000000838`).', null=True),
        'expansion_rom_version': _str('Expansion ROM version.', null=True),
        'bus_info': _str('PCI address (`0000:00:03.0`).', null=True),
    }),
    {'roce': _ROCE},
)))

_NETWORK = _dict('Network interfaces (`ip -j -d link show`, then `ethtool`, `ethtool -i` and the RoCE probes of each '
                 'interface probed).', {
                     'interfaces': _map('interface', _INTERFACE, 'By name.'),
                     'probed': _bool('`ip link` was read.', probe='ip_link'),
                     'link_events': _map('name', _dict('One interface.', {
                         'down': _int('Link down events in the log (`journalctl -k -b`: since boot).'),
                         'up': _int('Link up events.'),
                         'last': _str('State of the latest event.', null=True, choices=('up', 'down')),
                         'lines': _list(_str('A line.'), 'The last 5 event lines.'),
                     }), 'From the kernel_log probe\'s output (no extra command); absent when not read. By interface '
                         'name, or `pci:<address>` for an mlx5 module (cable) event.'),
                 }, notes=(
                     'Link events recognised: `NIC Link is Up/Down` (Intel igb/igc/ixgbe/i40e/ice/e1000e), `<if>: Link '
                     'up/down` and `Link is Up/Down` (mlx5e, mlxsw, phylink, r8125), bonding\'s `link status definitely '
                     'down for interface <if>`, `<if>: carrier lost` / `Lost carrier`, and mlx5 `Port module event: '
                     'module N, Cable plugged/unplugged/error` (keyed by PCI address; the check names the interface '
                     'whose `bus_info` it is).',
                 ))

# ------------------------------------------------------------------------------------------------------------ host

_ACS_FLAGS = ('SrcValid', 'TransBlk', 'ReqRedir', 'CmpltRedir', 'UpstreamFwd', 'EgressCtrl', 'DirectTrans')

_HOST = _dict('The operating system, clock, ports, disks, limits, PCIe ACS and job processes.', {
    'os': _dict('`/etc/os-release`; a key the file does not set is null.', {
        'id': _str('`ID`, lower case (`ubuntu`).', null=True),
        'id_like': _list(_str('A distribution.'), '`ID_LIKE`, lower case (`[debian]`).'),
        'version_id': _str('`VERSION_ID` (`24.04`).', null=True),
        'pretty_name': _str('`PRETTY_NAME`.', null=True),
        'name': _str('`NAME`.', null=True),
        'version': _str('`VERSION`.', null=True),
        'version_codename': _str('`VERSION_CODENAME`.', null=True),
    }),
    'kernel': _dict('`uname -a`.', {
        'kernel_name': _str('`Linux`.'),
        'hostname': _str('Node name.'),
        'release': _str('Kernel release (`6.18.44-fc-v657-gpu`).'),
        'version': _str('Kernel version (`#1 SMP PREEMPT_DYNAMIC ...`).', null=True),
        'machine': _str('Architecture (`x86_64`); null when uname printed `unknown`.', null=True),
        'operating_system': _str('`GNU/Linux`.', null=True),
    }),
    'kernel_modules': _list(_str('A module (`-` as `_`).'), 'Loaded modules (`/proc/modules`), sorted.'),
    'time': _dict('chrony; absent when the probe did not run.', {
        'installed': _bool('chronyc present (the other keys only then).'),
        'synchronised': _bool('Leap status Normal (or a pending leap second), stratum 1-15, and a reference that is '
                              'neither `00000000` nor `7F7F0101` (chronyd serving its own clock).'),
        'leap_status': _str('`Normal`, `Insert second`, `Delete second`, `Not synchronised`.'),
        'stratum': _int('Stratum.'),
        'reference': _str('Reference id (`A9FEA97B`).'),
        'reference_name': _str('Reference name, when printed.', null=True),
        'ref_time_epoch': _num('Time of the last update.', null=True, unit='s since the epoch'),
        'offset_seconds': _num('Signed: positive = system clock ahead ("fast"), in both chronyc formats (the -c CSV '
                               'prints a correction, positive when slow: flipped).', unit='s'),
        'last_offset_seconds': _num('Last offset (chronyc\'s sign).', null=True, unit='s'),
        'rms_offset_seconds': _num('RMS offset.', null=True, unit='s'),
        'frequency_ppm': _num('Positive: the clock would run fast without correction.', null=True, unit='ppm'),
        'residual_frequency_ppm': _num('Residual frequency.', null=True, unit='ppm'),
        'skew_ppm': _num('Skew.', null=True, unit='ppm'),
        'root_delay_seconds': _num('Root delay.', null=True, unit='s'),
        'root_dispersion_seconds': _num('Root dispersion.', null=True, unit='s'),
        'update_interval_seconds': _num('Update interval.', null=True, unit='s'),
    }, probe='chrony'),
    'listening': _list(_dict('One socket.', {
        'proto': _str('`tcp`, `udp`...; null when ss leaves out the Netid column.', null=True),
        'state': _str('`LISTEN`, `UNCONN`.'),
        'address': _str('Local address without brackets (`0.0.0.0`, `::`, `*`).'),
        'port': _int('Local port; null for `*`.', null=True),
        'interface': _str('The `%dev` scope (`127.0.0.53%lo` -> `lo`).', null=True),
        'process': _str('First process of `users:((...))`; null without ss.', null=True),
        'pid': _int('Its pid; null likewise.', null=True),
        'recv_q': _int('Recv-Q.'),
        'send_q': _int('Send-Q.'),
    }), '`ss -H -l -n -t -u -p`; without ss, `/proc/net/tcp`, `tcp6`, `udp`, `udp6` (the same shape, process and pid '
        'null: those files do not name them).'),
    'disks': _map('path', _dict('One filesystem (`df -P -B1`; `-` values are null).', {
        'filesystem': _str('Device (`/dev/nvme0n1p2`).'),
        'size_bytes': _int('Size.', null=True, unit='bytes'),
        'used_bytes': _int('Used.', null=True, unit='bytes'),
        'free_bytes': _int('Available.', null=True, unit='bytes'),
        'use_percent': _int('Use.', null=True, unit='%'),
        'mount': _str('Mount point.'),
    }), 'Keyed by the probed path (`disk_paths`), not the mount point.', probe='disks'),
    'memory': _dict('`/proc/meminfo`: the headroom DataLoader workers and pinned buffers draw on. A key the kernel '
                    'does not print is null.', {
                        'total_bytes': _int('MemTotal.', unit='bytes'),
                        'free_bytes': _int('MemFree.', null=True, unit='bytes'),
                        'available_bytes': _int('MemAvailable: what can be allocated without swapping (Linux 3.14+).',
                                                null=True, unit='bytes'),
                        'swap_total_bytes': _int('SwapTotal.', null=True, unit='bytes'),
                        'swap_free_bytes': _int('SwapFree.', null=True, unit='bytes'),
                        'hugepages_total': _int('HugePages_Total (default size).', null=True),
                        'hugepages_free': _int('HugePages_Free.', null=True),
                        'hugepage_size_bytes': _int('Hugepagesize.', null=True, unit='bytes'),
                        'hugepages_bytes': _int('Memory the default-size huge pages reserve (total x size): not '
                                                'available to ordinary allocations.', null=True, unit='bytes'),
                    }),
    'mounts': _list(_dict('One mount (a later one on the same point hides an earlier one).', {
        'device': _str('Source (`/dev/nvme0n1p2`, `server:/export`, `10.2.0.1@o2ib:/scratch`).'),
        'mount': _str('Mount point (the escapes of /proc/mounts decoded).'),
        'fstype': _str('File system type (`ext4`, `nfs4`, `lustre`, `gpfs`, `beegfs`, `ceph`...).'),
        'read_only': _bool('Mounted `ro`.'),
        'shared': _bool('A type that several nodes mount (NFS, SMB, Lustre, GPFS, BeeGFS, CephFS, GlusterFS, WekaFS, '
                        'JuiceFS, DAOS).'),
    }), '`/proc/mounts`, device, mount point and type only (options can name credentials).'),
    'storage_read': _map('path', _dict('The bounded read of one path.', {
        'path': _str('The path read.'),
        'bytes': _int('Bytes read.', unit='bytes'),
        'seconds': _num('Time the reading took.', unit='s'),
        'files': _int('Files read (opened).'),
        'mb_per_s': _num('bytes / 10^6 / seconds; null when nothing was timed.', null=True, unit='MB/s'),
        'cache': _str('How the files were read, the weakest of them: `direct` (O_DIRECT, never through the page cache), '
                      '`dropped` (their cached pages dropped first: POSIX_FADV_DONTNEED accepted) or `kept` (through '
                      'whatever the cache held: the figure may be the cache\'s).', choices=('direct', 'dropped', 'kept')),
        'cache_dropped': _bool('`cache` is `direct` or `dropped`.'),
        'complete': _bool('Every file was read to its end within the bounds (the dataset is smaller than they are).'),
        'error': _str('The first error (a path that does not exist, a file that cannot be read).', null=True),
    }), 'The `host.storage` paths with `read_mb_s_min`, by path: the files under each read in name order until '
        '`read_max_gib` or `read_max_s`.', probe='storage_read'),
    'memlock_kib': _int('`ulimit -l`; null = unlimited.', null=True, unit='KiB', probe='memlock'),
    'memlock_unlimited': _bool('`ulimit -l` is unlimited.', null=True, probe='memlock'),
    'pcie_acs': _dict('PCIe Access Control Services from `lspci -vvv` (run as root).', _with_parse_error({
        'checked': _bool('lspci listed devices and could read their capabilities.'),
        'access_denied': _bool('lspci printed `Capabilities: <access denied>` (not root); `checked` is then false.'),
        'devices': _map('bdf', _dict('The `ACSCtl` flags; a flag lspci did not print is null.', dict(
            (flag, _bool('%s on.' % flag, null=True)) for flag in _ACS_FLAGS)),
            'Every function with the ACS capability (`0000:00:01.0`).'),
        'names': _map('bdf', _str('lspci description.'), 'Their descriptions.'),
        'enabled': _list(_str('A function.'), 'Bridges whose ACSCtl has SrcValid+, ReqRedir+, CmpltRedir+ or '
                                              'UpstreamFwd+: they send peer-to-peer traffic to the root complex.'),
    })),
    'processes': _dict('The job processes of `ps -e -ww -o pid=,ppid=,user:32=,etimes=,args=` (kernel threads left '
                       'out); never the whole list: command lines can be long and carry secrets.', {
                           'count': _int('Processes read.'),
                           'patterns': _list(_str('A regular expression.'), "The probe's `process_patterns` (default: "
                                                                            "the profile schema's "
                                                                            "`host.leftover_process_patterns`)."),
                           'matched': _list(_dict('One process.', {
                               'pid': _int('Process id.'),
                               'ppid': _int('Parent.'),
                               'user': _str('User.'),
                               'etimes': _int('Seconds since it started.', unit='s'),
                               'args': _str('Command line.'),
                               'pattern': _str('The pattern it matched.'),
                           }), 'The processes matching one of them, at most 50.'),
                           'matched_total': _int('How many matched (more than listed when over 50).'),
                       }, probe='processes'),
})

# -------------------------------------------------------------------------------------------------------- software

_NCCL_LIBRARY_KEYS = {
    'path': _str('The file.'),
    'found_by': _str('How it was found: named by `xuanwu_nccl_library_globs`, the NCCL nccl-tests is built against '
                     '(`nccl_tests_build_nccl_home`), the NCCL wheel on the sys.path of `xuanwu_torch_python` (the one '
                     'PyTorch loads), the dynamic loader\'s `libnccl.so.2`, or a usual place.'),
    'version': _str('Its `ncclGetVersion` (else the version in its file name); null when neither says.', null=True),
}

_SOFTWARE = _dict('Versions the hosts are compared on.', {
    'driver_version': _str('= `gpu.driver_version`.', null=True, probe='nvidia_smi_xml nvidia_query_gpu amd_static'),
    'cuda_driver_version': _str('= `gpu.cuda_driver_version`.', null=True, probe='nvidia_smi_xml'),
    'cuda_toolkit_version': _str('`nvcc --version` (`13.0`); null when absent.', null=True),
    'nccl_version': _str("From libnccl's `ncclGetVersion` (`2.28.9`) of the library of `nccl_library`; null when not found.",
                         null=True),
    'nccl_library': _dict('Which `libnccl.so.2` `nccl_version` was read from and how it was found: the first found of '
                          '`xuanwu_nccl_library_globs`, `nccl_tests_build_nccl_home` (an absolute path), the NCCL wheel '
                          'on the sys.path of `xuanwu_torch_python`, the dynamic loader\'s, then the usual places; '
                          'null when none was found or a bundle of an older probe does not say.', dict(_NCCL_LIBRARY_KEYS, **{
                              'others': _list(_dict('One `libnccl.so.2`.', _NCCL_LIBRARY_KEYS),
                                              'The other libraries found, in that order (a run may load these too).'),
                          }), null=True),
    'rocm_version': _str('= `gpu.rocm_version`.', null=True, probe='amd_version', vendor='amd'),
})

# ---------------------------------------------------------------------------------------------------------- facts

_TOP = {
    'schema_version': _int('Facts format version; this collection writes 1.', choices=(SCHEMA_VERSION,)),
    'source': _str('`replay`: read from a capture bundle.', choices=('live', 'replay')),
    'brief': _bool('Set (true) only in the brief facts that validate.yml keeps of a host taking part in no later stage '
                   '(below, "Brief facts"); absent from the full facts.'),
    'probes': _PROBES,
}

FACTS = _dict('`xuanwu_facts`: what `node_probe` returns for a host.', dict(_TOP, **{
    'gpu': _GPU,
    'infiniband': _INFINIBAND,
    'network': _NETWORK,
    'host': _HOST,
    'software': _SOFTWARE,
}))

FACTS_END = _dict('`xuanwu_facts_end`: what `node_probe` with `stage: end` returns.', dict(_TOP, **{
    'infiniband': _dict('The port counters read again.', {
        'counters': _map('ca', _map('port', _COUNTERS, 'By port number as a string.'),
                         'By CA name; null when not read.', null=True),
    }),
}))

SCHEMAS = {'start': FACTS, 'end': FACTS_END}


def spec_at(path, stage='start', schemas=None):
    """The spec of the fact at the dotted ``path`` (``host.memory``; keys of fixed mappings only) of ``stage``'s
    schema, or None when the schema does not declare it."""
    return _spec.at((schemas or SCHEMAS)[stage], path)


def mark_landings(schemas, landings):
    """Mark the fact each probe lands at (``landings``: ``{stage: [(key, probe name, path)]}``, _collect.landings) as
    coming from that probe: its spec in ``schemas`` is replaced by a copy with ``probe``. The problems, ``[]`` when
    none: a path the schema does not declare, a fact whose ``probe`` is written by hand as well."""
    problems = []
    for stage, places in sorted(landings.items()):
        for _key, name, path in places:
            parent, _dot, last = path.rpartition('.')
            holder = spec_at(parent, stage, schemas) if parent else schemas[stage]
            spec = spec_at(path, stage, schemas)
            if spec is None:
                problems.append('%s (lands of probe %s): not declared in the facts schema' % (path, name))
            elif spec.get('probe'):
                problems.append('%s: its probe %s is written by hand; it comes from the lands of probe %s'
                                % (path, spec['probe'], name))
            else:
                holder['keys'][last] = dict(spec, probe=name)
    return problems


# The facts the probes land at, marked with their probe; a problem here fails test_probe_table.py.
LANDING_PROBLEMS = mark_landings(SCHEMAS, dict((stage, _collect.landings(stage)) for stage in SCHEMAS))


# -------------------------------------------------------------------------------------------------------- validate

def validate(facts, stage='start'):
    """The problems of a facts dictionary against the schema (``stage`` ``end``: the facts of ``stage: end``), each
    ``key: reason``: a key the schema does not declare, a value of another type, null where the schema does not allow
    it, a value outside its choices, a key of a mapping that does not match its pattern (``_spec.validate``, mode
    ``strict``). ``[]`` when it conforms. Never raises."""
    return [str(problem) for problem in _spec.validate(SCHEMAS[stage], facts, None, _spec.STRICT)[1]]


def probe_sources(spec=None):
    """The probe names the schema says facts come from (the ``probe`` of every spec)."""
    found = set()
    stack = [spec] if spec is not None else list(SCHEMAS.values())
    while stack:
        item = stack.pop()
        found.update((item.get('probe') or '').split())
        stack.extend(_spec.children(item))
    return found


# ------------------------------------------------------------------------------------------------------------ docs

HEADER = '''# Node facts (schema version %d)

<!-- Generated from plugins/module_utils/_facts.py (facts_markdown); do not edit by hand: run make docs. -->

`xuanwu.cluster.node_probe` returns one dictionary, `xuanwu_facts`, per host. Every value is
produced by a pure parser in `plugins/module_utils/` from one tool's raw output. This page is the
contract between the parsers, the checks and the reports: keep it stable, add keys rather than
rename them.

Conventions
- A value that the tool did not report, or reported as `N/A`, is `null` (`None`), never a guess.
- Sizes are integers in the unit named by the key (`_mib`, `_bytes`, `_kib`, `_mbps`, `_gbps`).
- Booleans are booleans (`Enabled`/`Yes`/`Active` become `true`).
- Parsers raise `ParseError` (`plugins/module_utils/_errors.py`) when the text is not what the tool
  prints; they never raise anything else. An empty but valid output (no devices) is an empty dict
  or list, not an error.
- Output made of independent sections is read section by section (`nvidia-smi --query-gpu` rows,
  `nvidia-smi -q -x` `<gpu>` elements, `nvidia-smi topo -m` rows, `nvidia-smi nvlink --status` GPUs, `ibstat` CAs and ports,
  `ip -j link` interfaces, `lspci -vvv` devices): text
  that is not understood inside one section does not discard the others. That section keeps what
  was read and gets `parse_error: {section, error, excerpt}` (`excerpt`: the lines read); the
  probe's status lists these records under `section_errors` and each becomes a
  `probe.section_parse_error` finding naming the section, so the part not read is never a pass.
- Every key below is declared in the facts schema (`plugins/module_utils/_facts.py`), with its type and whether
  it may be null; `_facts.validate(facts)` lists a key the schema does not declare, or a value of another type,
  and the tests replay every node of the fault corpus and every real capture through it. A fact the probe adds
  is declared there first; this page is generated from it.
- A key may be absent where its probe did not run (the facts of a group not probed, a probe that failed);
  `<name>` in a key stands for any key of a mapping (a GPU index, an interface name), `[]` for each item of a list.
  **null**: the value may be null. **from**: the probes (docs/capture-format.md) whose output a key holds; the keys
  inside it come from the same. **NVIDIA**/**AMD**: that vendor's nodes only.
''' % SCHEMA_VERSION

_REPLAY_NOTE = ('In a replay, a probe whose file in the capture bundle is not read (a symbolic link, not a regular '
                'file, larger than the limit; docs/capture-format.md) has status `parse_error` and an `error` naming '
                'the bundle, the file and the reason, so it becomes a `probe.parse_error` finding and spoils only '
                "that probe's facts.")

END_NOTES = '''Why a second read, and when: one read cannot show growth, and counters that grew since the last
reset (months ago, at the last boot) say little about the link now. validate.yml reads the counters
again after the collectives and workloads, on the hosts with InfiniBand HCAs whose profile sets
`infiniband.counters_growth_max` and where a load ran (`xuanwu_workloads` not empty, or
`xuanwu_recheck_counters: true`), and `workload_check` kind `link_counters` compares the
two reads with `infiniband.counters_growth_max` (findings `workload.ib_counter_growth`,
`workload.ib_counters_unread`). That is one module call per host (O(1) in the number of hosts) that
reads sysfs; without a load it does not run, so a validation without workloads costs no extra round
trip. A counter that went down between the reads (reset with `perfquery -R`) counts its new value
as growth.
'''

# What node_validate keeps of the facts and the profile of a host that takes part in no later stage (no flags): what
# the whole-run steps read of them (the report's facts summary, the run record's versions, the launch kit's GPU count,
# the scheduler's health check), each at its place in the schema. Every host's result passes through Ansible's main
# process, which converts and copies all of it, one host after the other: the full facts of a 4-GPU node are about
# 3,400 values, these about 280 (docs/architecture.md, "Cost per host").
BRIEF_GPU = ('vendor', 'installed', 'tool', 'count', 'driver_version', 'cuda_driver_version', 'rocm_version',
             'amd_smi_version', 'kernel_module', 'nvml_error')
BRIEF_DEVICE = ('index', 'name', 'uuid', 'bus_id', 'serial', 'memory_total_mib', 'max_operating_temp_c')
BRIEF_CA = ('ca_type', 'number_of_ports', 'firmware')
BRIEF_PORT = ('state', 'physical_state', 'rate_gbps', 'link_layer')
BRIEF_HOST = ('os', 'kernel')


def _some(value, keys):
    return dict((key, value[key]) for key in keys if key in value) if isinstance(value, dict) else {}


def brief(facts):
    """The brief facts of ``facts`` (``brief: true``): ``schema_version``, ``source``, ``software``, ``host.os`` and
    ``host.kernel``, the GPUs' vendor, count, versions and each device's identity, each InfiniBand adapter's type and
    firmware and its ports' state and rate. ``{}`` for no facts."""
    if not isinstance(facts, dict) or not facts:
        return {}
    out = _some(facts, ('schema_version', 'source'))
    out['brief'] = True
    gpu = facts.get('gpu')
    if isinstance(gpu, dict):
        out['gpu'] = _some(gpu, BRIEF_GPU)
        if isinstance(gpu.get('devices'), list):
            out['gpu']['devices'] = [_some(device, BRIEF_DEVICE) for device in gpu['devices']]
    ib = facts.get('infiniband')
    if isinstance(ib, dict):
        out['infiniband'] = _some(ib, ('installed',))
        if isinstance(ib.get('cas'), dict):
            cas = out['infiniband']['cas'] = {}
            for name, ca in ib['cas'].items():
                cas[name] = _some(ca, BRIEF_CA)
                if isinstance(ca, dict) and isinstance(ca.get('ports'), dict):
                    cas[name]['ports'] = dict((port, _some(value, BRIEF_PORT)) for port, value in ca['ports'].items())
    if isinstance(facts.get('host'), dict):
        out['host'] = _some(facts['host'], BRIEF_HOST)
    if isinstance(facts.get('software'), dict):
        out['software'] = dict(facts['software'])
    return out


def brief_profile(profile):
    """The brief resolved profile (``brief: true``): its ``name`` and ``gpu.count``; the report resolves the whole
    profile again, once per profile, where it needs it."""
    if not isinstance(profile, dict):
        return profile
    out = {'brief': True, 'name': profile.get('name')}
    gpu = profile.get('gpu')
    if isinstance(gpu, dict) and 'count' in gpu:
        out['gpu'] = {'count': gpu['count']}
    return out


# The facts node_validate sets besides xuanwu_facts (docs/facts.md, "Facts set around the node facts").
SET_AROUND = (
    ('`xuanwu_profile_resolved`, `xuanwu_profile_path`',
     "the host's profile, overrides applied, and its file"),
    ('`xuanwu_workloads`',
     'empty; the stages append their runs'),
    ('`xuanwu_node`',
     "the host's one result, small whatever the size of its facts, read by the later steps, the report and the gate: "
     '`status` (`pass`/`warn`/`fail`, `error` when the node could not be probed), `findings` (the node checks\' and the '
     'stages\' that follow), `error` (why the node could not be probed: unreachable, the probe failed; else `null`), '
     "`verdict` (the gate's message, empty when the host passes), `fail_on`, `flags` (the stages the host takes part "
     'in: `stages`, `on_failed`, `multinode`, `recheck`), `compare` (profile file, its `checks` overrides and the '
     'four values the hosts are compared on: driver, NCCL, CUDA toolkit, kernel; `null` leaves the host out of the '
     'comparison) and `checks` (`{check: {status, why}}` of the checks that judged nothing on the host: '
     '`not_applicable` or `not_measured`, with why; docs/report-format.md, "Check status")'),
)

TRAILER = '''## `ib_write_bw` between two nodes (isolation)

Not a probe fact: playbooks/isolate.yml runs `ib_write_bw` (perftest) between the two nodes of each pair
when the profile sets `infiniband.ib_write_bw_gbps_min` (docs/isolation.md), and reads the client's report
with `parse_ib_write_bw` (also the `ib_write_bw` parser of the filter `xuanwu.cluster.parse`):

```yaml
test: RDMA_Write BW Test
device: mlx5_0
link_type: IB                  # IB | Ethernet
transport_type: IB
connection_type: RC
qps: 1
mtu: 4096[B]
unit: Gb/sec                   # Gb/sec with --report_gbits, else MB/sec (2^20 bytes/s)
rows: [{size_bytes: 65536, iterations: 3742510, bw_peak: 0.0, bw_average: 392.41, msg_rate_mpps: 0.748477}]
bw_average_gbps: 392.41        # BW average of the largest size, in Gb/s whatever the unit
```

A report without its result table (the client could not connect, the run failed) is a parse error that
quotes what was read; the pair is then not measured.

## Facts set around the node facts

`xuanwu.cluster.node_validate` (validate.yml's one task per host) sets, besides `xuanwu_facts`:

%s

The values of the job's secret environment variables are masked in these facts before they are set
(a fact cache may keep facts on disk). The comparison between hosts, the host list of each later play
and the gate's hosts are results of the run, set on `localhost` with `set_fact` (never cached):
`xuanwu_group_findings`, `xuanwu_group_failing`, `xuanwu_stage_hosts`, `xuanwu_multinode_hosts`,
`xuanwu_recheck_hosts`, `xuanwu_run_hosts`, and from the report `validation_report_gate_hosts`, `validation_report_verdicts`.

## Brief facts

`node_validate` sets the whole `xuanwu_facts` and `xuanwu_profile_resolved` only for the hosts that take part in a
later stage of the run (`xuanwu_node.flags` not empty: the collectives, workloads, container smoke, multi-node stage or
the second read of the counters read them), or for every host with `xuanwu_full_facts: true`. Every other host gets
them in brief, with `brief: true`:

- `xuanwu_facts`: `schema_version`, `source`, `software`, `host.os`, `host.kernel`; `gpu.%s`; each of
  `gpu.devices[]` with `%s`; `infiniband.installed`, each of `infiniband.cas.<ca>` with `%s` and each of its
  `ports.<port>` with `%s`. Each value is where the schema above puts it, so what reads `xuanwu_facts.gpu.count` reads
  the same in both. `{}` when the node could not be probed.
- `xuanwu_profile_resolved`: `name` and `gpu.count`; the report resolves the whole profile again, once per profile,
  for the fleet checks.

Why: every host's result passes through Ansible's main process, which converts and copies all of it, one host after
the other, however many forks run. The full facts of a 4-GPU node with 8 InfiniBand ports are about 3,400 values
(35 KB), the brief ones about 280 (3 KB); the judgement, the findings and `xuanwu_node` are the same either way
(docs/architecture.md, "Cost per host"). The whole facts of a host come from `node_probe`
(`ansible <host> -m xuanwu.cluster.node_probe`) or from a run with `xuanwu_full_facts: true`.
''' % ('\n'.join(['| fact | what |', '|---|---|'] + ['| %s | %s |' % row for row in SET_AROUND]),
       '`, `gpu.'.join(BRIEF_GPU), '`, `'.join(BRIEF_DEVICE), '`, `'.join(BRIEF_CA), '`, `'.join(BRIEF_PORT))

# The columns of the tables (_spec.COLUMNS).
COLUMNS = ('key', 'type', 'null', 'unit', 'from', 'description')


def _section(title, description, specs, seen, notes=()):
    """A ``## title``, ``description``, the table of the ``(path, spec)`` pairs and every paragraph of ``notes``."""
    out = ['## %s' % title, '', description, ''] + _spec.table_header(COLUMNS) + _spec.table_rows(COLUMNS, specs, seen)
    for note in notes:
        out += ['', note]
    return out


def facts_markdown():
    """docs/facts.md: the schema, section by section, between a fixed introduction and the facts set around them."""
    out = [HEADER]
    seen = {}
    out += _section('Top level', FACTS['description'] + ' Besides these, the sections below: `gpu`, `infiniband`, '
                    '`network`, `host`, `software`.', [(key, FACTS['keys'][key]) for key in _TOP], seen,
                    notes=(_REPLAY_NOTE,))
    for key, spec in FACTS['keys'].items():
        if key not in _TOP:
            out += [''] + _section('`%s`' % key, spec['description'], [(key, spec)], seen, notes=spec.get('notes') or ())
    end = FACTS_END['keys']['infiniband']
    out += [''] + _section('The read at the end of the run (`xuanwu_facts_end`)', FACTS_END['description'] + (
        ' `node_probe` with `stage: end` reads only the port counters again (probe `ib_counters_end`, the same `grep` '
        'over sysfs); `schema_version`, `source` and `probes` are those of the top level.'), [('infiniband', end)], seen,
        notes=(END_NOTES.rstrip('\n'),))
    out += ['', TRAILER]
    return '\n'.join(out)

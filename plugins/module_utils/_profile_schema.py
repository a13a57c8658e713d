# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hardware profiles: the schema, as data (``SCHEMA``), and the built-in values it names (the Xid classification, the
link flaps ignored, the IB counters' growth bounds).

Plain data in the spec language of ``_spec``, and nothing that reads it: ``_profile`` validates a profile against it
(``_spec.validate``, and re-exports every name of this module, so ``_profile.SCHEMA`` is this ``SCHEMA``),
``_profile_docs`` puts its tables (``_spec.table_rows``) into docs/profiles.md. The profile keys a
check area declares (``_catalogue.PROFILE_KEYS``) are taken in here, under their section, when this module loads.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils._catalogue import PROFILE_KEYS
from ansible_collections.xuanwu.cluster.plugins.module_utils._findings import SEVERITIES
from ansible_collections.xuanwu.cluster.plugins.module_utils._hygiene import DEFAULT_LEFTOVER_PATTERNS
from ansible_collections.xuanwu.cluster.plugins.module_utils._spec import LINK_PATTERN  # noqa: F401 pylint: disable=unused-import


SCHEMA_VERSION = 1


# A profile file's top-level key that names what it extends (_profile: extends_refs); never a key of the schema.
EXTENDS = 'extends'

CLOCK_EVENT_REASONS = (
    'gpu_idle', 'applications_clocks_setting', 'sw_power_cap', 'hw_slowdown', 'hw_thermal_slowdown',
    'hw_power_brake_slowdown', 'sync_boost', 'sw_thermal_slowdown', 'display_clocks_setting',
)

COLLECTIVES = (
    'all_reduce', 'all_gather', 'reduce_scatter', 'alltoall', 'sendrecv', 'broadcast', 'reduce',
    'gather', 'scatter', 'hypercube',
)

# Built-in Xid classification, used when a profile has no ``gpu.xid`` section. Source: NVIDIA
# "Xid Errors" and the Xid catalog for Ampere and newer
# (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html): "fatal" are the Xids
# whose immediate action is a GPU reset, node reboot or hardware service; "warn" are the common
# ones that usually point at the application or at a condition a reset clears.
DEFAULT_XID_FATAL = [
    {'xid': 48, 'reason': 'double-bit (uncorrectable) ECC error'},
    {'xid': 61, 'reason': 'internal micro-controller breakpoint/warning'},
    {'xid': 62, 'reason': 'internal micro-controller halt'},
    {'xid': 64, 'reason': 'ECC page retirement or row remapping recording failure'},
    {'xid': 74, 'reason': 'NVLink error'},
    {'xid': 79, 'reason': 'GPU has fallen off the bus',
     'remediation': 'GPU fell off the bus: drain the node, power-cycle it (a warm reboot is not enough), check the PCIe riser, '
                    'cabling and slot power; RMA the GPU or baseboard if it repeats.'},
    {'xid': 95, 'reason': 'uncontained ECC error'},
    {'xid': 119, 'reason': 'GSP RPC timeout'},
    {'xid': 120, 'reason': 'GSP error'},
    {'xid': 140, 'reason': 'unrecovered ECC error'},
    {'xid': 154, 'reason': 'GPU recovery action changed (reset or reboot required)'},
]
DEFAULT_XID_WARN = [
    {'xid': 13, 'reason': 'graphics engine exception (usually an application fault)'},
    {'xid': 31, 'reason': 'GPU memory page fault (usually an application fault)'},
    {'xid': 32, 'reason': 'invalid or corrupted push buffer stream (PCIe quality)'},
    {'xid': 43, 'reason': 'GPU stopped processing (application fault)'},
    {'xid': 45, 'reason': 'preemptive cleanup after earlier errors'},
    {'xid': 63, 'reason': 'ECC page retirement or row remapping event (reset the GPU to apply)'},
    {'xid': 92, 'reason': 'high single-bit ECC error rate'},
    {'xid': 94, 'reason': 'contained ECC error (the affected application was stopped)'},
]


# ---------------------------------------------------------------------------------------------
# Schema, in the spec language of ``_spec`` (types, required, default, choices, min / max, pattern, min_items; ``check``:
# the name of a further check of ``_profile``). A null key counts as absent (an override can reset a key to its default).

def _link(description, **kw):
    spec = {'type': 'link', 'description': description}
    spec.update(kw)
    return spec


# nvidia-smi compute modes (nvidia-smi -q -x <compute_mode>, --query-gpu=compute_mode).
COMPUTE_MODES = ('Default', 'Exclusive_Thread', 'Exclusive_Process', 'Prohibited')


# InfiniBand error counters that must not grow while the load runs (a link that went down, retrained or
# took bit errors under traffic). symbol_error may tick under load on a healthy HDR/NDR link (FEC corrects).
DEFAULT_COUNTERS_GROWTH_MAX = {'link_downed': 0, 'link_error_recovery': 0, 'symbol_error': 10}

# Interfaces whose link flaps say nothing about the node: containers, bridges, tunnels.
LINK_FLAPS_IGNORE = ('lo', 'docker*', 'veth*', 'virbr*', 'podman*', 'cni*', 'flannel*', 'cali*', 'vxlan*', 'br-*', 'tun*',
                     'tap*', 'kube-*', 'cilium*', 'weave*')


_XID_ENTRY = {
    'type': 'dict', 'description': 'One Xid code.',
    'keys': {
        'xid': {'type': 'int', 'required': True, 'min': 1, 'description': 'Xid number as the driver logs it.'},
        'reason': {'type': 'str', 'required': True, 'description': 'What it means (quoted in the finding).'},
        'remediation': {'type': 'str', 'description': 'What the operator does; the check default when absent.'},
    },
}

_VERSION_PATTERN_DOC = ('Matches when the version starts with these components ("580", "580." and "580.159.04" match '
                        '580.159.04; "13.0" matches 13.0.88), or a glob ("580.*"). Quote it: YAML reads 12.10 as the number 12.1.')

_COLLECTIVE_CURVES = {
    'type': 'dict', 'description': 'One collective.',
    'keys': {
        'curve': {
            'type': 'list', 'required': True, 'min_items': 1, 'check': 'curve_sorted',
            'description': ('From min_bytes upward, busbw must reach busbw_gbps_min. Give one point per size where a small drop '
                            'must be caught (e.g. 1, 2, 4 and 8 GiB at 97 % of a healthy median, docs/collectives.md).'),
            'elements': {
                'type': 'dict', 'description': 'One point.',
                'keys': {
                    'min_bytes': {'type': 'int', 'required': True, 'min': 1, 'description': 'Message size, bytes.'},
                    'busbw_gbps_min': {'type': 'float', 'required': True, 'min': 0,
                                       'description': 'Bus bandwidth, GB/s as nccl-tests prints it.'},
                },
            },
        },
    },
}

SCHEMA = {
    'type': 'dict',
    'description': 'A hardware profile: what one node type must look like.',
    'refused': {EXTENDS: 'only a profile file can extend others (xuanwu_profile and xuanwu_profile_dirs name the files): an '
                         'override, or a profile given as data, cannot'},
    'keys': {
        'schema_version': {'type': 'int', 'required': True, 'choices': [SCHEMA_VERSION],
                           'description': 'Profile format version; this collection reads 1.'},
        'name': {'type': 'str', 'required': True, 'pattern': r'^[A-Za-z0-9][A-Za-z0-9_.-]*$',
                 'description': 'Profile name; the file is profiles/<name>.yml.'},
        'description': {'type': 'str', 'default': '', 'description': 'One line for reports.'},
        'gpu': {
            'type': 'dict', 'check': 'vendor_keys',
            'description': 'GPUs. Omit the section on nodes without GPUs.',
            'keys': {
                'vendor': {'type': 'str', 'default': 'nvidia', 'choices': ['nvidia', 'amd'],
                           'description': ('GPU vendor: nvidia (nvidia-smi) or amd (amd-smi, else rocm-smi). topology, nvlink, '
                                           'clock_event_reasons, xid, compute_modes and persistence mode are NVIDIA checks; '
                                           'xgmi and bad_pages are AMD checks (a key of the other vendor is a profile error).')},
                'model': {'type': 'str', 'description': 'Case-insensitive substring of every GPU name ("H100 80GB HBM3").'},
                'count': {'type': 'int', 'required': True, 'min': 0, 'description': 'Exact number of GPUs.'},
                'memory_mib_min': {'type': 'int', 'min': 0, 'description': 'Minimum memory.total of every GPU, MiB.'},
                'pcie': {
                    'type': 'dict', 'default': {}, 'description': 'PCIe link of every GPU.',
                    'keys': {
                        'gen_min': {'type': 'int', 'min': 1, 'max': 7,
                                    'description': 'Minimum link generation the slot can train to (pcie.link.gen.max).'},
                        'width_min': {'type': 'int', 'choices': [1, 2, 4, 8, 16, 32],
                                      'description': 'Minimum current link width (pcie.link.width.current).'},
                        'warn_downtrained': {'type': 'bool', 'default': True,
                                             'description': 'Warn when the current generation or width is below the maximum.'},
                    },
                },
                'persistence_mode_required': {'type': 'bool', 'default': True,
                                              'description': 'Persistence mode must be on (NVIDIA; AMD GPUs have none).'},
                'ecc_required': {'type': 'bool', 'default': True, 'description': 'ECC must be enabled.'},
                'topology': {
                    'type': 'dict', 'description': 'nvidia-smi topo -m expectations.',
                    'keys': {
                        'gpu_pair_link': _link('Worst acceptable connection between every GPU pair: NV<n> needs at least n bonded '
                                               'NVLinks; otherwise PIX > PXB > PHB > NODE > SYS.'),
                        'pairs': {'type': 'map', 'default': {}, 'description': 'Per-pair exceptions, e.g. "0-1": NV12.',
                                  'key': {'type': 'str', 'pattern': r'^[0-9]+-[0-9]+$', 'description': '"<gpu>-<gpu>"'},
                                  'values': _link('Worst acceptable connection for this pair.')},
                        'nic_link': _link('Every GPU must reach at least one NIC over this path or better (GPUDirect RDMA).'),
                    },
                },
                'nvlink': {
                    'type': 'dict', 'description': 'nvidia-smi nvlink --status expectations.',
                    'keys': {
                        'links_per_gpu': {'type': 'int', 'required': True, 'min': 0, 'description': 'Active NVLinks per GPU.'},
                        'speed_gbps_min': {'type': 'float', 'min': 0,
                                           'description': 'Minimum speed of every active link, GB/s as nvidia-smi prints it.'},
                        'errors_max': {
                            'type': 'map', 'default': {},
                            'description': 'Warn (gpu.nvlink_errors) when an NVLink error counter of nvidia-smi nvlink -e is '
                                           'above its bound, by the counter name in lower case with _ (replay_errors, '
                                           'recovery_errors, crc_errors; rx_errors, symbol_errors ... on newer drivers). '
                                           '{} turns it off.',
                            'key': {'type': 'str', 'description': 'counter'},
                            'values': {'type': 'int', 'min': 0}},
                    },
                },
                'ecc_errors': {
                    'type': 'dict', 'default': {}, 'description': 'ECC error counter thresholds (null turns one off).',
                    'keys': {
                        'volatile_uncorrectable_max': {'type': 'int', 'min': 0, 'default': 0,
                                                       'description': 'Uncorrectable errors since the last driver load.'},
                        'aggregate_uncorrectable_max': {'type': 'int', 'min': 0, 'default': 0,
                                                        'description': 'Uncorrectable errors over the GPU lifetime.'},
                        'volatile_correctable_warn_above': {'type': 'int', 'min': 0,
                                                            'description': 'Warn above this many correctable errors since driver load.'},
                        'aggregate_correctable_warn_above': {'type': 'int', 'min': 0,
                                                             'description': 'Warn above this many lifetime correctable errors.'},
                    },
                },
                'xgmi': {
                    'type': 'dict', 'description': 'AMD xGMI links between every GPU pair (amd-smi topology --json, amd-smi xgmi --json).',
                    'keys': {
                        'pair_link_type': {'type': 'str', 'default': 'XGMI', 'choices': ['XGMI', 'PCIE'],
                                           'description': 'Link type every GPU pair must have (both sides).'},
                        'max_hops': {'type': 'int', 'default': 1, 'min': 1,
                                     'description': 'Most hops between every pair (1: a direct xGMI link per pair).'},
                        'links_up_required': {'type': 'bool', 'default': True,
                                              'description': 'Every pair link must be up (link_status ENABLED); a state the '
                                                             'tool does not report is not measured, never a pass.'},
                        'bit_rate_gbps_min': {'type': 'float', 'min': 0,
                                              'description': 'Minimum xGMI bit rate of every GPU, Gb/s as amd-smi xgmi prints it.'},
                    },
                },
                'bad_pages': {
                    'type': 'dict', 'description': 'AMD bad (retired) HBM pages, amd-smi bad-pages --json (null turns one off).',
                    'keys': {
                        'retired_max': {'type': 'int', 'min': 0, 'description': 'Fail above this many retired pages.'},
                        'pending_max': {'type': 'int', 'min': 0, 'default': 0,
                                        'description': 'Fail above this many pages pending retirement (a reset retires them).'},
                        'unreservable_max': {'type': 'int', 'min': 0, 'default': 0,
                                             'description': 'Fail above this many pages that could not be retired.'},
                    },
                },
                'retired_pages_max': {'type': 'int', 'min': 0,
                                      'description': 'Fail above this many retired pages (GPUs with page retirement, pre-A100).'},
                'clock_event_reasons': {
                    'type': 'dict', 'default': {}, 'description': 'Active clock event (throttle) reasons.',
                    'keys': {
                        'fail': {'type': 'list', 'default': ['hw_slowdown', 'hw_thermal_slowdown', 'hw_power_brake_slowdown'],
                                 'elements': {'type': 'str', 'choices': list(CLOCK_EVENT_REASONS)},
                                 'description': 'Reasons that fail the GPU.'},
                        'warn': {'type': 'list', 'default': ['sw_thermal_slowdown'],
                                 'elements': {'type': 'str', 'choices': list(CLOCK_EVENT_REASONS)},
                                 'description': 'Reasons that warn.'},
                    },
                },
                'xid': {
                    'type': 'dict', 'default': {}, 'description': 'Kernel-log Xid events.',
                    'keys': {
                        'fatal': {'type': 'list', 'elements': _XID_ENTRY, 'default': DEFAULT_XID_FATAL,
                                  'description': 'Xids that fail the GPU (default: built-in catalog).'},
                        'warn': {'type': 'list', 'elements': _XID_ENTRY, 'default': DEFAULT_XID_WARN,
                                 'description': 'Xids that warn with a known reason; any other Xid also warns.'},
                        'ignore': {'type': 'list', 'default': [], 'elements': {'type': 'int', 'min': 1},
                                   'description': 'Xids to ignore.'},
                    },
                    'check': 'xid_lists',
                },
                'compute_modes': {'type': 'list', 'default': ['Default'], 'min_items': 1,
                                  'elements': {'type': 'str', 'choices': list(COMPUTE_MODES)},
                                  'description': 'Compute modes a GPU may be in before a job (nvidia-smi -q -x <compute_mode>); '
                                                 'Exclusive_Process lets one process use the GPU, Prohibited none.'},
                'idle_required': {'type': 'bool', 'default': True,
                                  'description': 'No process may hold a GPU before a job (nvidia-smi -q -x <processes>).'},
                'idle_ignore_processes': {'type': 'list', 'default': [], 'elements': {'type': 'str'},
                                          'description': 'Globs of process names or command lines that may hold a GPU '
                                                         '(a monitoring agent).'},
            },
        },
        'infiniband': {
            'type': 'dict', 'description': 'InfiniBand (or RoCE) HCAs as ibstat reports them. Omit on nodes without.',
            'keys': {
                'ports_min': {'type': 'int', 'required': True, 'min': 0,
                              'description': 'Ports (with this link layer) that must be up at the rate.'},
                'rate_gbps_min': {'type': 'float', 'min': 0, 'description': 'Minimum port rate, Gb/s (NDR 400, HDR 200).'},
                'link_layer': {'type': 'str', 'default': 'InfiniBand', 'choices': ['InfiniBand', 'Ethernet'],
                               'description': 'Link layer of the ports that count.'},
                'state': {'type': 'str', 'default': 'Active', 'description': 'Required logical port state.'},
                'physical_state': {'type': 'str', 'default': 'LinkUp', 'description': 'Required physical port state.'},
                'ca_type': {'type': 'str', 'description': 'Required CA type (MT4129 = ConnectX-7, MT4123 = ConnectX-6).'},
                'ca_names': {'type': 'list', 'default': ['*'], 'elements': {'type': 'str'}, 'min_items': 1,
                             'description': 'Globs of the CA names that count (e.g. compute HCAs only).'},
                'counters_max': {'type': 'map', 'default': {}, 'description': 'Warn when a port error counter exceeds this.',
                                 'key': {'type': 'str', 'description': 'sysfs counter name'},
                                 'values': {'type': 'int', 'min': 0}},
                'counters_growth_max': {
                    'type': 'map', 'default': DEFAULT_COUNTERS_GROWTH_MAX,
                    'description': 'Fail when a port error counter grew by more than this while the collectives and workloads '
                                   'ran (read again at the end of validate.yml; see docs/checks.md, link_counters). {} turns it off.',
                    'key': {'type': 'str', 'description': 'sysfs counter name'},
                    'values': {'type': 'int', 'min': 0}},
                'ib_write_bw_gbps_min': {
                    'type': 'float', 'min': 0,
                    'description': 'Minimum ib_write_bw (perftest) bandwidth between two nodes, Gb/s (the BW average of '
                                   '`ib_write_bw --report_gbits`). Judged on every pair by playbooks/isolate.yml '
                                   '(docs/isolation.md) as a second measurement; absent: ib_write_bw is not run.'},
            },
        },
        'network': {
            'type': 'dict', 'description': 'Ethernet interfaces and RoCE.',
            'keys': {
                'interfaces': {
                    'type': 'map', 'default': {}, 'description': 'Interfaces by name or glob.',
                    'key': {'type': 'str', 'description': 'interface name or glob'},
                    'values': {
                        'type': 'dict', 'description': 'Expectations for every matching interface.',
                        'keys': {
                            'required': {'type': 'bool', 'default': True, 'description': 'At least one interface must match.'},
                            'mtu': {'type': 'int', 'min': 68, 'description': 'Exact MTU.'},
                            'speed_mbps_min': {'type': 'int', 'min': 1, 'description': 'Minimum link speed, Mb/s (ethtool).'},
                            'link_detected': {'type': 'bool', 'default': True, 'description': 'Require a link (and operstate UP).'},
                        },
                    },
                },
                'roce': {
                    'type': 'dict', 'description': 'RoCE lossless settings.',
                    'keys': {
                        'interfaces': {'type': 'list', 'required': True, 'min_items': 1, 'elements': {'type': 'str'},
                                       'description': 'Names or globs of the RoCE interfaces.'},
                        'pfc_priority': {'type': 'int', 'required': True, 'min': 0, 'max': 7,
                                         'description': 'Priority that must have PFC (and ECN) enabled.'},
                        'ecn': {'type': 'bool', 'default': True, 'description': 'ECN (roce_np and roce_rp) on that priority.'},
                        'trust': {'type': 'str', 'choices': ['dscp', 'pcp'], 'description': 'QoS trust mode, when reported.'},
                    },
                },
            },
        },
        'host': {
            'type': 'dict', 'description': 'Operating system and node settings.',
            'keys': {
                'kernel_modules_required': {'type': 'list', 'default': [], 'elements': {'type': 'str'},
                                            'description': 'Modules that must be loaded (- and _ are the same).'},
                'time': {
                    'type': 'dict', 'description': 'Clock synchronisation (chrony).',
                    'keys': {
                        'require_synchronised': {'type': 'bool', 'default': True, 'description': 'chrony must be synchronised.'},
                        'max_offset_ms': {'type': 'float', 'min': 0, 'description': 'Fail above this absolute offset, ms.'},
                    },
                },
                'memlock_unlimited': {'type': 'bool', 'default': False, 'description': 'ulimit -l must be unlimited (RDMA).'},
                'disks': {
                    'type': 'list', 'default': [], 'description': 'Free space.',
                    'elements': {
                        'type': 'dict', 'description': 'One path.',
                        'keys': {
                            'path': {'type': 'str', 'required': True, 'pattern': r'^/', 'description': 'Absolute path.'},
                            'min_free_gb': {'type': 'float', 'required': True, 'min': 0,
                                            'description': 'Minimum free space, GB (10^9 bytes).'},
                        },
                    },
                },
                'ports_must_be_free': {'type': 'list', 'default': [], 'elements': {'type': 'port'},
                                       'description': 'Ports nothing may listen on: 29500 (tcp) or "5353/udp".'},
                'leftover_process_patterns': {
                    'type': 'list', 'default': DEFAULT_LEFTOVER_PATTERNS, 'elements': {'type': 'str', 'check': 'regex'},
                    'description': 'Regular expressions (Python, searched in the full command line of `ps`) of processes that '
                                   'belong to a distributed job; one still running before a job is a leftover. [] turns the '
                                   'check off.'},
                'link_flaps': {
                    'type': 'dict', 'default': {},
                    'description': 'Link down events of network interfaces (Ethernet, RoCE, IPoIB) in the kernel log since boot '
                                   '(network.link_flaps); kept under host because every profile has that section.',
                    'keys': {
                        'down_events_max': {'type': 'int', 'min': 0, 'default': 1,
                                            'description': 'Fail an interface that went down more often than this since boot; '
                                                           'null turns the check off.'},
                        'ignore': {'type': 'list', 'default': list(LINK_FLAPS_IGNORE), 'elements': {'type': 'str'},
                                   'description': 'Globs of interfaces whose link events are ignored (containers, bridges).'},
                    },
                },
                'pcie_acs_must_be_disabled': {'type': 'bool', 'default': False,
                                              'description': 'No PCIe bridge may have ACS redirection enabled (GPUDirect P2P/RDMA).'},
                'os': {
                    'type': 'dict', 'description': 'Allowed operating systems.',
                    'keys': {
                        'ids': {'type': 'list', 'required': True, 'min_items': 1, 'elements': {'type': 'str'},
                                'description': 'Allowed os-release ID values (ubuntu, debian, rocky, rhel, ...).'},
                        'versions': {'type': 'map', 'default': {}, 'description': 'Allowed VERSION_ID prefixes per ID.',
                                     'key': {'type': 'str', 'description': 'os-release ID'},
                                     'values': {'type': 'list', 'min_items': 1, 'elements': {'type': 'version'}}},
                    },
                },
            },
        },
        'software': {
            'type': 'dict', 'description': 'Driver and library versions.',
            'keys': {
                'driver_version': {'type': 'version', 'description': 'NVIDIA driver. ' + _VERSION_PATTERN_DOC},
                'driver_version_min': {'type': 'version', 'description': 'Minimum NVIDIA driver version.'},
                'cuda_driver_version_min': {'type': 'version', 'description': 'Minimum CUDA version the driver supports.'},
                'cuda_toolkit_version': {'type': 'version', 'description': 'CUDA toolkit (nvcc). ' + _VERSION_PATTERN_DOC},
                'cuda_toolkit_version_min': {'type': 'version', 'description': 'Minimum CUDA toolkit version.'},
                'nccl_version': {'type': 'version', 'description': 'NCCL library. ' + _VERSION_PATTERN_DOC},
                'nccl_version_min': {'type': 'version', 'description': 'Minimum NCCL version.'},
            },
        },
        'collectives': {
            'type': 'map', 'description': ('Expected bus bandwidth per collective within one node: nccl-tests -g N and the torch all-reduce '
                                           'benchmark. A run of several cycles (nccl-tests -N) is judged on the median of each size. A '
                                           'collective that runs and has no curve here is reported as not judged, never as a pass.'),
            'key': {'type': 'str', 'choices': list(COLLECTIVES), 'description': 'nccl-tests collective'},
            'values': _COLLECTIVE_CURVES,
        },
        'collectives_multinode': {
            'type': 'map', 'description': 'Expected bus bandwidth per collective of one job across the nodes of a group (mpirun, one rank per GPU).',
            'key': {'type': 'str', 'choices': list(COLLECTIVES), 'description': 'nccl-tests collective'},
            'values': _COLLECTIVE_CURVES,
        },
        'fleet': {
            'type': 'dict', 'description': ('Fleet thresholds (docs/fleet-history.md): per collective and size, the hosts of this profile '
                                            'are held to median - k x MAD of its healthy hosts (status pass or warn) in the run. Left out: '
                                            'no fleet threshold.'),
            'keys': {
                'k': {'type': 'float', 'default': 3.0, 'min': 0, 'description': 'How many MADs below the median a host may be.'},
                'min_hosts': {'type': 'int', 'default': 8, 'min': 2,
                              'description': 'Fewer healthy hosts with a figure: the fleet does not judge it, and the report says so.'},
                'min_bytes': {'type': 'int', 'default': 1073741824, 'min': 1,
                              'description': 'Sizes judged, bytes: from this size up (smaller ones are latency-bound and noisy).'},
                'min_spread_share': {'type': 'float', 'default': 0.01, 'min': 0, 'max': 1,
                                     'description': ('The MAD (scaled by 1.4826) is taken as at least this share of the median, so a fleet '
                                                     'of near-identical figures does not fail a host for noise.')},
                'runs': {'type': 'int', 'default': 0, 'min': 0, 'max': 100,
                         'description': 'Also count the healthy hosts of the profile in this many earlier runs of the history database.'},
            },
        },
        'history': {
            'type': 'dict', 'description': ('Regression against each host\'s own history (the history database, docs/fleet-history.md). '
                                            'Left out: no regression check (the run is still recorded).'),
            'keys': {
                'regression_max_share': {'type': 'float', 'default': 0.05, 'min': 0, 'max': 1,
                                         'description': 'A host more than this share below the median of its own last runs fails.'},
                'runs': {'type': 'int', 'default': 5, 'min': 1, 'max': 100, 'description': 'How many earlier healthy runs of the host make its baseline.'},
                'min_runs': {'type': 'int', 'default': 3, 'min': 1, 'max': 100,
                             'description': 'Fewer earlier runs with the figure: not judged, and the report says so.'},
                'min_bytes': {'type': 'int', 'default': 1073741824, 'min': 1, 'description': 'Sizes judged, bytes: from this size up.'},
            },
        },
        'isolation': {
            'type': 'dict', 'description': 'Bad-node isolation by rounds of node pairs (playbooks/isolate.yml, docs/isolation.md).',
            'keys': {
                'pair_busbw_gbps_min': {
                    'type': 'float', 'min': 0,
                    'description': 'The pair floor: a two-node nccl-tests run (mpirun, one rank per GPU) passes when its '
                                   'busbw at the largest size reaches this, GB/s. Absent: the floor of the '
                                   'collectives_multinode curve of the collective at the largest size.'},
                'collective': {'type': 'str', 'default': 'all_reduce', 'choices': list(COLLECTIVES),
                               'description': 'The nccl-tests collective each pair runs.'},
            },
        },
        'monitoring': {
            'type': 'dict', 'description': 'Bounds for the GPU samples nvidia-smi dmon takes during the workloads '
                                           '(dmon.* checks, docs/metrics.md). Absent: the defaults below.',
            'keys': {
                'load_sm_pct': {'type': 'float', 'default': 80, 'min': 0, 'max': 100,
                                'description': 'A sample is under load when its sm % is at least this.'},
                'min_load_samples': {'type': 'int', 'default': 3, 'min': 1,
                                     'description': 'Fewer samples under load: throttling and memory growth are not measured.'},
                'sustained_sm_clock_min_mhz': {
                    'type': 'float', 'min': 1,
                    'description': 'The median SM clock under load of every GPU must reach this, MHz (dmon.sustained_clock). '
                                   'Source it from healthy GPUs of the model at their power limit (a SW power cap lowers '
                                   'the clock of a healthy GPU under full load), never from the boost clock. Absent: not '
                                   'judged, and each run says so.'},
                'clock_event_min_samples': {
                    'type': 'int', 'default': 2, 'min': 1,
                    'description': 'A clock event reason of gpu.clock_event_reasons counts when the clock event sampling '
                                   'saw it in at least this many samples (NVML: HW slowdown may also be reported for a '
                                   'moment during a P-state or clock change).'},
                'clock_min_fraction': {'type': 'float', 'min': 0.01, 'max': 1,
                                       'description': 'Opt-in: under load the lowest SM clock must stay at or above this '
                                                      'share of the reference clock. Absent: not judged (a power-capped '
                                                      'healthy GPU runs well below its boost clock).'},
                'sm_clock_mhz': {'type': 'float', 'min': 1,
                                 'description': 'The reference SM clock of clock_min_fraction, MHz. Absent: the highest SM '
                                                'clock any GPU of the run reached.'},
                'violation_max_pct': {'type': 'float', 'min': 0,
                                      'description': 'Opt-in: fail above this power (pviol) or thermal (tviol) violation '
                                                     'value. Absent: not judged (pviol is 100 on a healthy GPU at its power '
                                                     'limit; the clock event reasons say why clocks are held down).'},
                'gtemp_max_c': {'type': 'float', 'min': 0,
                                'description': 'GPU temperature bound, C. Absent: the maximum operating temperature the GPUs '
                                               'report of themselves (nvidia-smi -q -x), where they report one.'},
                'mtemp_max_c': {'type': 'float', 'min': 0,
                                'description': 'GPU memory (HBM) temperature bound, C. Absent: not checked.'},
                'fb_growth_max_mb': {'type': 'float', 'default': 1024, 'min': 0,
                                     'description': 'Framebuffer memory rising in every sample under load by more than '
                                                    'this, MiB, is a leak.'},
                'dbecc_max': {'type': 'int', 'default': 0, 'min': 0,
                              'description': 'Double-bit (uncorrectable) ECC errors dmon counted during a workload above '
                                             'this fail (dmon.ecc).'},
                'sbecc_max': {'type': 'int', 'min': 0,
                              'description': 'Single-bit (corrected) ECC errors during a workload above this warn. Absent: '
                                             'counted, not checked.'},
            },
        },
        'workloads': {
            'type': 'dict', 'default': {}, 'description': 'Bounds for the PyTorch workloads (training smoke, fault isolation, elastic restart, soak).',
            'keys': {
                'ddp_smoke': {
                    'type': 'dict', 'default': {}, 'description': 'DDP training smoke job (a small transformer, synthetic data).',
                    'keys': {
                        'steps': {'type': 'int', 'default': 20, 'min': 2, 'max': 1000, 'description': 'Training steps.'},
                        'min_loss_drop_pct': {'type': 'float', 'default': 10.0, 'min': 0,
                                              'description': 'The loss must fall by at least this share from the first to the last step.'},
                        'max_step_time_ms': {'type': 'float', 'min': 0, 'description': 'Fail above this median step time, ms.'},
                        # the step-time distribution after the warm-up (docs/metrics.md says why the defaults)
                        'warmup_steps': {'type': 'int', 'min': 0, 'description': 'First steps left out of the step-time '
                                         'distribution (allocations, kernel selection, the first all-reduce). Absent: 3.'},
                        'max_p99_ratio': {'type': 'float', 'min': 1, 'description': 'Warn when the p99 step time exceeds '
                                          'this multiple of the median (workload.ddp_step_jitter). Absent: 3.'},
                        'spike_ratio': {'type': 'float', 'min': 1, 'description': 'A step slower than this multiple of '
                                        'the median is a slow step (workload.ddp_step_periodic). Absent: 1.5.'},
                        'spike_min_count': {'type': 'int', 'min': 2, 'description': 'Warn when at least this many slow '
                                            'steps fall at one fixed distance (workload.ddp_step_periodic). Absent: 3.'},
                        'max_rank_lag_pct': {
                            'type': 'float', 'min': 0,
                            'description': 'Warn when one rank was last to reach the gradient all-reduce in half of the '
                                           'steps or more, by a median lag of at least this share of the median step time '
                                           '(workload.ddp_straggler). Absent: not judged (the report says so): no healthy '
                                           'run on two or more GPUs has proven a default yet.'},
                        'timeout_s': {'type': 'int', 'default': 600, 'min': 1, 'description': 'Bound on the whole job.'},
                    },
                },
                'host_cpu': {
                    'type': 'dict', 'default': {}, 'description': 'Bounds for the host CPU sampled during each torch workload '
                                                                  'on one node (workload.host_cpu_*, docs/metrics.md).',
                    'keys': {
                        'iowait_max_pct': {'type': 'float', 'min': 0, 'max': 100,
                                           'description': 'Fail when the median share of CPU time in iowait exceeds this '
                                                          '(workload.host_cpu_iowait). Absent: 20.'},
                        'steal_max_pct': {'type': 'float', 'min': 0, 'max': 100,
                                          'description': 'Fail when the median share of CPU time stolen by the hypervisor '
                                                         'exceeds this (workload.host_cpu_steal). Absent: 10.'},
                        'pegged_pct': {'type': 'float', 'min': 1, 'max': 100,
                                       'description': 'A workload process at this share of one core is pegged. Absent: 95.'},
                        'cpu_bound_max_pct': {
                            'type': 'float', 'min': 0, 'max': 100,
                            'description': 'Opt-in: warn when a workload process was pegged in at least this share of the '
                                           'samples while the GPUs\' median sm % stayed below monitoring.load_sm_pct '
                                           '(workload.host_cpu_bound). Absent: not judged (a healthy rank busy-waits on its GPU).'},
                    },
                },
                'fault_isolation': {
                    'type': 'dict', 'default': {}, 'description': 'Kill one rank of a running job; the job must end with an error.',
                    'keys': {
                        'bound_s': {'type': 'float', 'default': 120.0, 'min': 1,
                                    'description': 'The job must end with an error this soon after the kill; longer is a hang.'},
                    },
                },
                'elastic_restart': {
                    'type': 'dict', 'default': {},
                    'description': 'Elastic restart (field guide §5.4): a training job under torchrun --max-restarts '
                                   'that checkpoints every checkpoint_every steps loses one rank (SIGKILL) after a '
                                   'checkpoint; torchrun must restart the workers, which resume from the last checkpoint '
                                   'and finish (workload.elastic_*).',
                    'keys': {
                        'steps': {'type': 'int', 'default': 20, 'min': 4, 'max': 1000,
                                  'description': 'Training steps; the kill comes after step checkpoint_every + '
                                                 'max(1, checkpoint_every // 2), which must leave steps after it.'},
                        'checkpoint_every': {'type': 'int', 'default': 5, 'min': 1, 'max': 500,
                                             'description': 'Steps between checkpoints; at most this many steps may be '
                                                            'redone after the restart (workload.elastic_steps_lost).'},
                        'max_restarts': {'type': 'int', 'default': 3, 'min': 1, 'max': 100,
                                         'description': 'torchrun --max-restarts: restarts of the worker group allowed.'},
                        'recover_s_max': {
                            'type': 'float', 'default': 60.0, 'min': 1,
                            'description': 'Fail when the first step after the restart ends more than this many seconds '
                                           'after the kill (workload.elastic_recovery_slow). A healthy restart is torchrun '
                                           'noticing the dead rank (0.5 s), stopping the others, starting new workers '
                                           '(python and torch import), CUDA and NCCL initialisation, the checkpoint read '
                                           'and one step: a few seconds to about 20 on a GPU node; 60 leaves three times '
                                           'that.'},
                        'timeout_s': {'type': 'int', 'default': 600, 'min': 30,
                                      'description': 'Bound on the whole job, restart included; past it the job is hung.'},
                    },
                },
                'gpu_single': {
                    'type': 'dict', 'default': {},
                    'description': 'Each GPU alone before the collectives (field guide §3.5): a dense bf16 matmul and a '
                                   'device-to-device copy per GPU, one GPU at a time (workload.gpu_*).',
                    'keys': {
                        'min_bf16_tflops': {
                            'type': 'float', 'min': 0,
                            'description': 'Each GPU alone must reach this median TFLOP/s of bf16 matmuls (--matmul-n) at its '
                                           'power limit (workload.gpu_compute_low). Source it from healthy GPUs of the model; '
                                           'absent: not judged against a floor.'},
                        'min_membw_gbps': {
                            'type': 'float', 'min': 0,
                            'description': 'Each GPU alone must copy device memory at this median GB/s, read and write '
                                           'counted (workload.gpu_membw_low). Absent: not judged against a floor.'},
                        'max_spread_pct': {
                            'type': 'float', 'default': 10.0, 'min': 0, 'max': 100,
                            'description': 'A GPU this far below the median of its node\'s GPUs (the faster of two) is '
                                           'workload.gpu_outlier; 100 switches the comparison off.'},
                        'matmul_n': {'type': 'int', 'default': 8192, 'min': 256, 'max': 65536,
                                     'description': 'Size of the square bf16 matrices.'},
                        'compute_s': {'type': 'float', 'default': 3.0, 'min': 0.5, 'max': 600,
                                      'description': 'Seconds of matmuls per GPU.'},
                        'copy_mib': {'type': 'int', 'default': 4096, 'min': 64, 'max': 1048576,
                                     'description': 'Size of the copied buffer, MiB.'},
                        'membw_s': {'type': 'float', 'default': 2.0, 'min': 0.5, 'max': 600,
                                    'description': 'Seconds of copies per GPU.'},
                    },
                },
                'soak': {
                    'type': 'dict', 'default': {}, 'description': 'Sustained all-reduce and matmul load.',
                    'keys': {
                        'duration_s': {'type': 'int', 'default': 300, 'min': 1, 'description': 'Minutes by default; hours for burn-in.'},
                        'sample_s': {'type': 'int', 'default': 10, 'min': 1, 'description': 'Sampling interval.'},
                        'max_rss_growth_pct': {'type': 'float', 'default': 10.0, 'min': 0, 'description': 'Host RSS growth bound.'},
                        'max_gpu_mem_growth_pct': {'type': 'float', 'default': 10.0, 'min': 0, 'description': 'GPU memory growth bound.'},
                        'min_iterations_per_s': {
                            'type': 'float', 'min': 0,
                            'description': 'The slowest rank of the soak (its default all-reduce and matmul sizes) must run at '
                                           'least this many iterations per second (workload.soak_throughput): a GPU shared '
                                           'with another process, or held down, does less work. Source it from healthy '
                                           'nodes of the same GPU count; absent: not judged.'},
                    },
                },
            },
        },
        'checks': {
            'type': 'dict', 'default': {}, 'description': 'Site overrides of the checks (docs/checks.md).',
            'keys': {
                'disable': {'type': 'list', 'default': [], 'elements': {'type': 'str', 'check': 'check_id'},
                            'description': 'Check ids or globs ("ib.*", "collectives.*") whose findings are dropped.'},
                'severity': {'type': 'map', 'default': {}, 'description': 'Check id or glob -> fail | warn | info.',
                             'key': {'type': 'str', 'description': 'check id or glob', 'check': 'check_id'},
                             'values': {'type': 'str', 'choices': list(SEVERITIES)}},
            },
        },
    },
}


def _take_in(schema, declared):
    """The profile keys a check module declares (``_catalogue.PROFILE_KEYS``) added to ``schema``'s sections; a key
    the schema or another module already declares is an error of the collection, said when it loads."""
    for owner, sections in declared:
        for section, keys in sections.items():
            target = schema['keys'][section]['keys']
            for key, spec in keys.items():
                if key in target:
                    raise ValueError('%s declares the profile key %s.%s, which is already declared' % (owner, section, key))
                target[key] = spec


_take_in(SCHEMA, PROFILE_KEYS)

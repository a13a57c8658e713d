#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: node_probe
short_description: Probe a GPU/HPC node's hardware and software in one round trip
version_added: 0.1.0
description:
  - Runs the read-only probes of the selected groups on the node (C(nvidia-smi) query, XML, topology
    and NVLink status, kernel log Xid events, C(ibstat) and InfiniBand port counters, C(ip), C(ethtool),
    RoCE ECN/PFC state, OS, kernel modules, chrony, listening ports, job processes (C(ps)), free disk,
    memlock limit, PCIe ACS, CUDA toolkit and NCCL versions) and returns the parsed facts as C(xuanwu_facts).
  - On a node with AMD GPUs (C(amd-smi) or C(rocm-smi) installed) the same call runs the AMD probes too
    (C(amd-smi static), C(metric), C(bad-pages), C(topology), C(xgmi), C(version), else the C(rocm-smi) JSON forms)
    and C(xuanwu_facts.gpu) has C(vendor=amd).
  - A tool that is not installed is recorded as a fact (status C(missing)), never an error. Output that
    cannot be parsed is recorded with status C(parse_error), the parser's reason and an excerpt of what
    was read, so that the checks can report it.
  - With O(replay_dir) the probes read a capture bundle instead of running the tools, through the same
    parsers. With O(capture_dir) every raw output is also saved as a capture bundle (a support bundle).
  - The facts are described in C(docs/facts.md), the bundle format in C(docs/capture-format.md).
extends_documentation_fragment:
  - xuanwu.cluster.attributes
attributes:
  check_mode:
    support: full
    description: Can run in check_mode and return changed status prediction without modifying target.
    details: The probes only read. In check mode a capture bundle is not written; the result says that it would be.
  diff_mode:
    support: none
    description: Will return details on what has changed (or possibly needs changing in diff_mode), when in diff mode.
options:
  gather:
    description:
      - The probe groups to run. V(all) selects every group.
    type: list
    elements: str
    default: [all]
    choices: [all, host, gpu, xid, infiniband, network, software]
  interfaces:
    description:
      - Names or shell globs of the network interfaces to probe with C(ethtool) and the RoCE probes.
      - By default every interface that is not loopback or virtual (container, bridge, tunnel) is probed.
    type: list
    elements: str
  disk_paths:
    description:
      - Paths whose filesystem's free space is reported.
    type: list
    elements: path
    default: ['/']
  read_tests:
    description:
      - Paths to read for a throughput figure (the probe C(storage_read:<path>), fact C(host.storage_read)); the role takes
        them from the profile's C(host.storage) entries that set C(read_mb_s_min).
      - The regular files under each path are read in name order, links not followed, each after asking the kernel to drop
        its cached pages (C(POSIX_FADV_DONTNEED)), until O(read_tests[].max_bytes) or O(read_tests[].max_seconds).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: An absolute path, a file or a folder (a dataset).
        type: path
        required: true
      max_bytes:
        description: Stop after this many bytes.
        type: int
        default: 1073741824
      max_seconds:
        description: Stop after this many seconds.
        type: float
        default: 10
  replay_dir:
    description:
      - Read the raw outputs from this capture bundle directory instead of running the tools.
      - The directory is read on the host the module runs on; replayed hosts normally use C(ansible_connection=local).
      - A bundle is untrusted input. An invalid C(manifest.json) fails the task with a message naming the key.
        A probe's file that is a symbolic link, not a regular file, or larger than 64 MiB is not read; that probe
        gets status C(parse_error) naming the file and the reason. Bytes that are not UTF-8 are read as U+FFFD.
        See C(docs/capture-format.md).
    type: path
  capture_dir:
    description:
      - Also save every raw output, with a C(manifest.json), as a capture bundle in this directory.
      - The directory is made with mode 0700 when it does not exist (its parent must exist). An existing path
        is used only when it is an empty directory owned by the user the module runs as, and not a symbolic
        link; anything else is refused, so pick a new directory per capture (C(playbooks/capture.yml) uses
        a fresh temporary directory). Files are created with mode 0600 and never through a symbolic link.
    type: path
  timeout:
    description:
      - Seconds after which one probe command is stopped and recorded as failed (a hung C(nvidia-smi) is a
        symptom, not a reason to hang the run). V(0) disables the limit.
    type: int
    default: 60
  nccl_library_globs:
    description:
      - Extra glob patterns where C(libnccl.so.2) may be found (for example inside a Python virtual
        environment's C(nvidia/nccl/lib)); searched before the usual system and pip-wheel locations.
    type: list
    elements: str
    default: []
  nccl_python:
    description:
      - The Python the PyTorch workloads run with (C(xuanwu_torch_python)); the NCCL wheel on its C(sys.path) (the one
        PyTorch loads) is preferred to the system's. Asked once, with a 20 s limit. The empty string asks no Python.
      - The NCCL probed is, in this order, the first found of O(nccl_library_globs), O(nccl_home), this Python's wheel,
        the dynamic loader's C(libnccl.so.2), then the usual system and pip-wheel places; the facts name the library
        and how it was found (C(software.nccl_library)).
    type: str
    default: python3
  nccl_home:
    description:
      - The NCCL directory nccl-tests is built against (C(nccl_tests_build_nccl_home) when it is an absolute path); its
        C(lib/libnccl.so.2) comes before the torch Python's wheel. Anything but an absolute path is ignored.
    type: str
  stage:
    description:
      - V(start) runs the probes of O(gather) and returns C(xuanwu_facts).
      - V(end) reads only what is compared with the start of the run (the InfiniBand error counters, probe
        C(ib_counters_end), one C(grep) over sysfs, no tool) and returns C(xuanwu_facts_end)
        (C(schema_version), C(source), C(probes), C(infiniband.counters)); validate.yml runs it after the
        collectives and workloads, when they ran, and judges the growth with
        M(xuanwu.cluster.workload_check) kind C(link_counters). With O(replay_dir) the bundle's
        C(ib_counters_end) entry is read (when absent, its status is C(skipped)).
    type: str
    choices: [start, end]
    default: start
  process_patterns:
    description:
      - Regular expressions (Python syntax, searched in the full command line) of the processes of C(ps)
        kept in the facts (C(host.processes.matched)), the processes of a distributed job. Only those are
        kept, never the whole process list.
      - Defaults to the profile schema's default C(host.leftover_process_patterns) (torchrun,
        torch.distributed launchers, mpirun/orted, nccl-tests C(*_perf), deepspeed).
    type: list
    elements: str
  parse:
    description:
      - V(true) parses the outputs on the node and returns the facts (C(xuanwu_facts) or C(xuanwu_facts_end)).
      - V(false) returns the raw outputs instead (RV(outputs)), for the controller to parse with the parsers it has
        loaded once per run; M(xuanwu.cluster.node_validate) probes this way, so that no node, and no replayed host of a
        controller, loads the parsers (C(docs/architecture.md), "Cost per host"). What the parsers leave out because it can
        carry secrets is taken out on the node even then. The process list keeps only the job processes of
        O(process_patterns), the processes on a GPU and their parents (command lines), and the mounts lose their options
        except C(ro)/C(rw) (credentials of a CIFS, Ceph or FUSE mount).
    type: bool
    default: true
seealso:
  - module: xuanwu.cluster.node_check
notes:
  - Reading PCIe ACS control and the listening processes needs root; without it those facts are partial.
'''

EXAMPLES = r'''
- name: Probe every group
  xuanwu.cluster.node_probe:

- name: Probe only the GPUs and the InfiniBand fabric
  xuanwu.cluster.node_probe:
    gather: [gpu, xid, infiniband]

- name: Read the InfiniBand error counters again after a load (compare with workload_check kind link_counters)
  xuanwu.cluster.node_probe:
    stage: end

- name: Make a private temporary directory for a support bundle
  ansible.builtin.tempfile:
    state: directory
    prefix: xuanwu-bundle.
  register: bundle_tmp

- name: Save a support bundle while probing (capture_dir is made by the module, mode 0700)
  xuanwu.cluster.node_probe:
    capture_dir: "{{ bundle_tmp.path }}/bundle"

- name: Analyse a bundle a customer sent, offline
  xuanwu.cluster.node_probe:
    replay_dir: /srv/tickets/12345/node17
  delegate_to: localhost
'''

RETURN = r'''
ansible_facts:
  description: The probed facts.
  returned: when O(parse=true)
  type: dict
  contains:
    xuanwu_facts:
      description:
        - Facts of schema version 1 (C(docs/facts.md)) with the keys C(schema_version), C(source),
          C(probes) (status, command, rc, error and excerpt per probe), C(gpu), C(infiniband),
          C(network), C(host) and C(software).
      type: dict
      returned: when O(stage=start)
      sample:
        schema_version: 1
        source: live
        probes:
          nvidia_query_gpu: {status: ok, command: nvidia-smi --query-gpu=index,name --format=csv, rc: 0, error: null, excerpt: null}
        gpu: {vendor: nvidia, installed: true, count: 4, driver_version: 580.159.04}
    xuanwu_facts_end:
      description:
        - The end-of-run read (O(stage=end)) with the keys C(schema_version), C(source), C(probes) and
          C(infiniband.counters) (counter values by CA and port, null when not read).
      type: dict
      returned: when O(stage=end)
      sample:
        schema_version: 1
        source: live
        probes:
          ib_counters_end: {status: ok, command: grep -H . /sys/class/infiniband/*/ports/*/counters/*, rc: 0, error: null, excerpt: null}
        infiniband: {counters: {mlx5_0: {'1': {link_downed: 0, symbol_error: 0}}}}
outputs:
  description:
    - With O(parse=false), the raw output of every probe that ran, in order, for the controller to parse (RV(source)
      says whether they were read live or from O(replay_dir)).
    - Each is C(probe) (its key, C(docs/capture-format.md)), C(alternative) (which of its ways of obtaining it answered,
      from 0), C(status), C(command), C(rc), C(stdout), C(stderr), C(note) where the bundle's file was not UTF-8, and
      for the process list C(rows), the processes it listed before the filter.
  returned: when O(parse=false)
  type: list
  elements: dict
  sample:
    - {probe: uname, alternative: 0, status: ok, command: uname -a, rc: 0, stdout: "Linux gpu-node01 6.8.0-49-generic ...", stderr: ""}
source:
  description: V(live) or V(replay) (O(replay_dir)), where the outputs came from.
  returned: when O(parse=false)
  type: str
  sample: live
disk_paths:
  description: The paths of O(disk_paths) as the node read them (C(~) and variables expanded), in order.
  returned: when O(parse=false)
  type: list
  elements: str
  sample: [/]
read_paths:
  description: The paths of O(read_tests) as the node read them, in order.
  returned: when O(parse=false)
  type: list
  elements: str
  sample: [/data/imagenet]
bundle:
  description: The capture bundle written (or that would be written in check mode).
  returned: when O(capture_dir) is set
  type: dict
  sample: {directory: /tmp/xuanwu-bundle.k2j4x9/bundle, files: [manifest.json, nvidia_query_gpu.txt]}
'''

import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xuanwu.cluster.plugins.module_utils import _collect
from ansible_collections.xuanwu.cluster.plugins.module_utils import _probe_node


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gather=dict(type='list', elements='str', default=['all'], choices=['all'] + list(_collect.GROUPS)),
            interfaces=dict(type='list', elements='str'),
            disk_paths=dict(type='list', elements='path', default=['/']),
            replay_dir=dict(type='path'),
            capture_dir=dict(type='path'),
            timeout=dict(type='int', default=60),
            nccl_library_globs=dict(type='list', elements='str', default=[]),
            nccl_python=dict(type='str', default='python3'),
            nccl_home=dict(type='str'),
            process_patterns=dict(type='list', elements='str'),
            stage=dict(type='str', default='start', choices=['start', 'end']),
            read_tests=dict(type='list', elements='dict', default=[], options=dict(
                path=dict(type='path', required=True),
                max_bytes=dict(type='int', default=1 << 30),
                max_seconds=dict(type='float', default=10.0),
            )),
            parse=dict(type='bool', default=True),
        ),
        mutually_exclusive=[('replay_dir', 'capture_dir')],
        supports_check_mode=True,
    )
    p = module.params
    # the same options, tools and runner as the direct answer node_validate asks for (module_utils/_probe_node)
    try:
        options = _probe_node.check_options(dict((name, p[name]) for name in _probe_node.OPTIONS), expand=False)
        runner = _probe_node.runner(options)
    except _probe_node.ProbeOptionError as err:
        module.fail_json(msg=str(err))
    except _collect.BundleError as err:
        module.fail_json(msg=str(err))
    groups = _probe_node.groups(options)

    writer = _collect.BundleWriter(p['capture_dir']) if p['capture_dir'] else None
    read_paths = [test['path'] for test in options['read_tests']]
    try:
        if p['parse']:
            # the parsers are loaded only here: a node that answers with raw outputs never compiles them
            from ansible_collections.xuanwu.cluster.plugins.module_utils import _probe
            facts = _probe.probe(runner, groups=groups, interfaces=options['interfaces'], disk_paths=options['disk_paths'],
                                 capture=writer, process_patterns=options['process_patterns'], stage=options['stage'],
                                 read_paths=read_paths)
            result = dict(changed=False, ansible_facts={'xuanwu_facts_end' if p['stage'] == 'end' else 'xuanwu_facts': facts})
        else:
            result = dict(_probe_node.raw_answer(options, runner, capture=writer), changed=False)
    except _collect.BundleError as err:
        module.fail_json(msg=str(err))

    if writer is not None:
        meta = {'host': socket.gethostname(),
                'captured_at': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
                'groups': sorted(groups)}
        files = sorted(writer.files) + [_collect.MANIFEST]
        if not module.check_mode:
            try:
                files = writer.write(meta)
            except _collect.BundleError as err:
                module.fail_json(msg='cannot write the capture bundle: %s' % err)
            except (IOError, OSError) as err:
                module.fail_json(msg='cannot write the capture bundle to %s: %s' % (p['capture_dir'], err))
        result['changed'] = True
        result['bundle'] = dict(directory=p['capture_dir'], files=files)
    module.exit_json(**result)


if __name__ == '__main__':
    main()

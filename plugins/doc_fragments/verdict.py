# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """The options of a host's verdict (plugin_utils/_node.VERDICT_ARGUMENT_SPEC): node_check and node_validate."""

    DOCUMENTATION = r'''
options:
  fail_on:
    description: Lowest severity listed in RV(failing).
    type: str
    choices: [fail, warn]
    default: fail
  job_ports:
    description:
      - Ports the job will listen on (the torchrun rendezvous / MASTER_PORT and any other), numbers or
        C(PORT/tcp|udp); they are checked like the profile's C(host.ports_must_be_free).
    type: list
    elements: raw
    default: []
  job_env:
    description:
      - The job's environment; the ports in C(MASTER_PORT), C(NCCL_COMM_ID=host:port),
        C(OMPI_MCA_oob_tcp_static_ipv4_ports) and C(OMPI_MCA_btl_tcp_port_min_v4) must be free too.
    type: dict
    default: {}
  job_mpirun_args:
    description:
      - The job's mpirun arguments; the ports of C(--mca oob_tcp_static_ipv4_ports) and
        C(--mca btl_tcp_port_min_v4) must be free too.
    type: list
    elements: str
    default: []
'''

#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: validation_report
short_description: Write a validation run's report as JSON, JUnit XML, Markdown and HTML
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin).
  - Reads C(xuanwu_node) (status, findings, error), C(xuanwu_facts) and the profile of every host in O(hosts) as the
    facts hold them (once per host, never templated again), adds the C(consistency.*) findings of
    M(xuanwu.cluster.host_compare) (C(xuanwu_group_findings) of the controller) and writes
    C(report.json) (schema in C(docs/report-format.md)), C(junit.xml) (one testcase per host and check),
    C(report.md), C(report.html) and C(xuanwu.prom) (the run as Prometheus textfile metrics, C(docs/metrics.md)) into
    O(report_dir)/O(run_id)/.
  - Returns the hosts the gate must fail (RV(gate_hosts)) and why, so that the gate runs on those hosts only.
  - The run's folder gets mode 0750 and the files mode 0640 (also files that existed). The secret values of the hosts'
    C(xuanwu_nccl_env) and C(xuanwu_torch_env) (see C(xuanwu_redact_env_keys)) and the passwords of URLs are masked
    (C(***)) in every file, also where a tool printed them (the node checks' facts and findings are masked where they
    are made, M(xuanwu.cluster.node_validate); the environments of the hosts where a stage ran are read here).
  - A host without C(xuanwu_node), or whose C(xuanwu_node.status) is C(error) (unreachable, or failed before its checks),
    is reported with status C(error).
  - The report is written in check mode too, because it is the record of the run, kept on the controller.
  - Once per run, the profiles' C(fleet) and C(history) settings judge every host's nccl-tests figures against the
    healthy hosts of its profile and against its own earlier runs (C(docs/fleet-history.md)).
extends_documentation_fragment:
  - xuanwu.cluster.attributes
options:
  hosts:
    description: Hosts to report on.
    type: list
    elements: str
    required: true
  report_dir:
    description: Directory under which the run's folder is made.
    type: path
    required: true
  run_id:
    description: Name of the run's folder.
    type: str
    required: true
  started_at:
    description: Start time of the run (ISO 8601, UTC).
    type: str
  playbook:
    description: Name of the playbook, recorded in the report.
    type: str
    default: validate
  history_db:
    description:
      - The run history, an SQLite file (schema in C(docs/fleet-history.md)); the run is recorded in it (a run id recorded
        again replaces its rows), and the profiles' C(fleet) and C(history) settings judge the hosts' bus bandwidth
        against the other hosts of their profile and against their own earlier runs, adding their findings before the
        summary is built.
      - Unset is O(report_dir)/C(history.sqlite); an empty string switches the history off. The file is made with mode
        0600 (its folder 0700 when made). A file that cannot be used fails the task, after the report is written.
    type: str
  controller_textfile_dir:
    description:
      - Also write the run's metrics as C(xuanwu.prom) in this folder, for a node_exporter textfile collector on the
        controller, atomically (a temporary file in the folder, renamed over the old one) and mode 0644. An empty string
        writes none.
      - This export holds the run's series (C(xuanwu_run_*)) and the host series of the hosts that get no node export
        (O(export_hosts)), never a series that a node's file holds, so that no query counts a host twice with both
        exports scraped (C(docs/metrics.md), section Which export carries what). The run's folder always has the whole run
        as C(xuanwu.prom).
      - A folder that cannot be written fails the task, after the report is written.
    type: str
    default: ''
  export_hosts:
    description:
      - Write the metrics of each probed host whose C(xuanwu_prometheus_textfile_dir) is set (not an empty string) to
        O(report_dir)/O(run_id)/C(metrics/<host>.prom) and return those hosts as RV(export_hosts), for a play that
        copies them to the nodes' textfile collectors, replacing the file of the last run.
      - A host's file holds its own series, with the run's series only where O(controller_textfile_dir) is empty.
      - Hosts that could not be probed get no file (they may be unreachable); their status is in C(xuanwu.prom) and in
        the controller's export.
    type: bool
    default: false
'''

EXAMPLES = r'''
- name: Write the report
  xuanwu.cluster.validation_report:
    hosts: "{{ groups['gpu_nodes'] }}"
    report_dir: "{{ playbook_dir }}/reports"
    run_id: "{{ xuanwu_run_id }}"
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
report_dir:
  description: The run's report folder.
  returned: success
  type: str
files:
  description: The files written.
  returned: success
  type: list
  elements: str
summary:
  description: Hosts counted per status, the failed hosts and the overall result (C(pass), C(warn), C(fail)).
  returned: success
  type: dict
failed_reasons:
  description: One line per failing finding of a failed host, with measured, expected and remediation.
  returned: success
  type: list
  elements: str
gate_hosts:
  description: The hosts whose findings fail them (at or above their C(xuanwu_fail_on)) or that could not be probed.
  returned: success
  type: list
  elements: str
verdicts:
  description: For each host of RV(gate_hosts), the message the gate fails it with.
  returned: success
  type: dict
failed_checks:
  description:
    - For each host of RV(gate_hosts), the names of the checks it failed (C(probe) for a host that was not probed);
      site.yml writes them into the scheduler's drain reason.
  returned: success
  type: dict
  sample: {node2: [gpu.count, nvlink.links_per_pair]}
export_hosts:
  description: The hosts whose metrics were written under RV(metrics_dir) (O(export_hosts) true), in name order.
  returned: success
  type: list
  elements: str
metrics_dir:
  description: The folder of the per-host metrics files (C(<safe host name>.prom), the C(xuanwu.cluster.safe_name) filter).
  returned: success
  type: str
fleet_findings:
  description:
    - The findings the fleet and history checks added, per host (only hosts that got one). They are in the report and
      in RV(verdicts), so the gate fails those hosts.
  returned: success
  type: dict
'''

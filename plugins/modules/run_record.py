#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: run_record
short_description: Keep the record of a rollout in runs/<run id>/ (start, each batch, finish), resume it, write launch kits
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin); call it with C(run_once) on C(localhost). The layout of the record,
    what is redacted and how a rollout resumes are described in C(docs/run-record.md).
  - O(step=start) makes O(runs_dir)/O(run_id)/ (mode 0750; files 0640) and writes C(inventory.yml) (every host's inventory
    variables, secrets masked), C(profiles/<name>.yml) (each profile used, once), C(hostfile), C(nccl-env.txt) (masked),
    C(meta.json) and C(state.json). When C(state.json) exists (the same run id, a resumed rollout) it is kept, the
    resumption is added to C(meta.json) and RV(resumed) is true.
  - O(step=drain) runs before a batch's first drain command; C(state.json) then names O(hosts) as C(draining) (in
    C(held_drained) and C(drain_in_progress), the run C(interrupted)) until O(step=batch) writes their outcomes, so that a
    rollout killed at any moment leaves a record naming every node it may have drained.
  - O(step=batch) appends the batch and each host's outcome to C(state.json) and the versions read from each host's
    C(xuanwu_facts) to C(versions.json); both are replaced atomically (a temporary file and a rename).
  - O(step=finish) copies the run's report folder (O(reports_dir)/O(run_id)/) into C(reports/), the part of the Ansible
    log (C(log_path)) written since the run started into C(ansible.log) (secret assignments masked), and writes the
    run's end into C(state.json); once the rollout has ended or stopped (no host left that no batch reached), the launch
    kit of the hosts whose latest outcome is C(passed) (as O(step=kit)).
  - O(step=kit) (C(playbooks/validate.yml), after the report) writes the launch kit of O(hosts) less O(failed) into
    C(launch-kit/), namely C(hostfile) (slots = GPUs per host), C(env.sh) (the NCCL/torch environment that passed, exported),
    C(versions.json), C(launch-mpirun.sh) and C(launch-torchrun.sh) (templates for the site's own training script) and
    C(kit.json) (the manifest); files 0644, scripts 0755. No host passed - no kit (an earlier one of the run id is
    removed). C(launch-kit.json) beside it says whether a kit was written, of which hosts, and why hosts were left out.
    A variable whose name or value looks secret, whose name is not C(^[A-Z_][A-Z0-9_]*$) or whose value holds a control
    character is left out and named in C(kit.json).
  - In check mode the record is written too, as the record of the plan, but under C(runs/<run id>/check/); a rehearsal
    starts from the real run's state (so RV(remaining_hosts) shows what a real run would skip) and never changes it.
  - Secrets never reach a file of the record; inventory variables named like C(password), C(passwd), C(passphrase),
    C(secret), C(token), C(credential), C(api_key), C(private_key) or ending in C(_pass) are masked (C(***)) at any depth,
    so are the secret keys of C(xuanwu_nccl_env) and C(xuanwu_torch_env) (with C(xuanwu_redact_env_keys)), the passwords
    of URLs, and every secret value wherever else it appears.
extends_documentation_fragment:
  - xuanwu.cluster.attributes
options:
  step:
    description: Which step of the rollout this is.
    type: str
    required: true
    choices: [start, drain, batch, finish, kit]
  run_id:
    description: The run's id (C(xuanwu_run_id)); names the folder (made a safe file name).
    type: str
    required: true
  runs_dir:
    description: Folder of the run records. Unset is C(xuanwu_runs_dir), else C(runs/) in the current directory.
    type: path
  hosts:
    description:
      - O(step=start) the hosts of the rollout (their variables are recorded); O(step=batch) the hosts of the batch
        (each needs an entry in O(outcomes)); O(step=drain) the hosts the batch is about to drain; O(step=kit) the hosts of the validation, in the play's order.
    type: list
    elements: str
    default: []
  batch:
    description: O(step=batch) and O(step=drain) the index of the batch (0 is the canary).
    type: int
  outcomes:
    description:
      - O(step=batch) per host of the batch, C({outcome, reasons, failed_checks}); C(outcome) is one of C(passed),
        C(failed), C(reboot_required), C(not_ours), C(unreachable).
    type: dict
    default: {}
  started:
    description: O(step=batch) when the batch started (ISO 8601, UTC); unset is when the previous batch (or the run) ended.
    type: str
  redo:
    description: O(step=start) list the hosts already finished in RV(remaining_hosts) too.
    type: bool
    default: false
  reports_dir:
    description: O(step=finish) the folder holding the run's report folder. Unset is C(xuanwu_reports_dir), else C(reports/).
    type: path
  failed:
    description:
      - O(step=kit) the hosts of O(hosts) that did not pass, each with why (the report's verdicts, C(validation_report_verdicts));
        they are left out of the launch kit.
    type: dict
    default: {}
  stopped_at_batch:
    description:
      - O(step=finish) the batch at which the rollout stopped (its failures exceeded C(xuanwu_max_fail_percentage)).
      - Unset, a run that ends with hosts no batch reached stopped at its last recorded batch.
    type: int
'''

EXAMPLES = r'''
- name: Start (or resume) the record of the rollout
  xuanwu.cluster.run_record:
    step: start
    run_id: "{{ xuanwu_run_id }}"
    runs_dir: "{{ xuanwu_runs_dir | default(omit) }}"
    hosts: "{{ ansible_play_hosts_all }}"
  run_once: true
  delegate_to: localhost
  register: __record

- name: Record a batch
  xuanwu.cluster.run_record:
    step: batch
    run_id: "{{ xuanwu_run_id }}"
    batch: 0
    hosts: [gpu-node01]
    outcomes:
      gpu-node01: {outcome: failed, reasons: ["gpu.count: measured 3, expected 4"], failed_checks: [gpu.count]}
  run_once: true
  delegate_to: localhost

- name: Write the launch kit of the hosts that passed (validate.yml)
  xuanwu.cluster.run_record:
    step: kit
    run_id: "{{ xuanwu_run_id }}"
    hosts: "{{ groups['all'] }}"
    failed: "{{ validation_report_verdicts }}"
  run_once: true
  delegate_to: localhost

- name: Finish the record
  xuanwu.cluster.run_record:
    step: finish
    run_id: "{{ xuanwu_run_id }}"
    reports_dir: "{{ xuanwu_reports_dir | default(omit) }}"
  run_once: true
  delegate_to: localhost
'''

RETURN = r'''
run_dir:
  description: The run's record folder (C(runs/<run id>/), or C(runs/<run id>/check/) in check mode).
  returned: success
  type: str
resumed:
  description: O(step=start) whether the record existed (a resumed rollout).
  returned: success
  type: bool
done_hosts:
  description: Hosts whose latest outcome in this run is C(passed).
  returned: success
  type: list
  elements: str
failed_hosts:
  description: Hosts whose latest outcome in this run is C(failed) or C(unreachable).
  returned: success
  type: list
  elements: str
batches:
  description: The batches so far, each C({index, hosts, started, finished, counts}) (counts by outcome).
  returned: success
  type: list
  elements: dict
remaining_hosts:
  description: O(step=start) the hosts of O(hosts) a resumed rollout still works on (all with O(redo)).
  returned: success
  type: list
  elements: str
check_mode:
  description: Whether the record was written under C(check/).
  returned: success
  type: bool
outcome:
  description: >-
    O(step=finish) C(passed), C(failed) (a host's latest outcome is not passed, or a host had none), C(stopped) or
    C(interrupted) (hosts remain that no batch reached, or a batch's drain began and its outcome was never written).
  returned: success
  type: str
not_run_hosts:
  description: O(step=finish) the hosts of the run that no batch reached.
  returned: success
  type: list
  elements: str
draining:
  description: O(step=drain) the hosts whose drain began and whose batch outcome is not written yet.
  returned: when O(step) is C(drain)
  type: list
  elements: str
held_drained:
  description: O(step=drain) the hosts the record names as left drained by this run if it were killed now.
  returned: when O(step) is C(drain)
  type: list
  elements: str
launch_kit:
  description:
    - O(step=finish) and O(step=kit) the launch kit, C({written, reason, partial, hosts, left_out_hosts, dir}); C(reason)
      says why none was written, C(dir) is its folder (null when none was written).
  returned: when O(step) is C(finish) or C(kit)
  type: dict
'''

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compare a host's probed facts with its hardware profile and return findings (controller only)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError

from ansible_collections.xuanwu.cluster.plugins.module_utils import _findings, _hygiene, _judge

CONSISTENCY_KEYS = ('software.driver_version', 'software.nccl_version', 'software.cuda_toolkit_version', 'host.kernel.release')


def _peer_facts(task_vars, host, profile_path):
    """Facts of the hosts of this play that were probed and share this host's profile."""
    hostvars = task_vars.get('hostvars') or {}
    peers = {}
    for peer in task_vars.get('ansible_play_hosts_all') or [host]:
        try:
            pvars = hostvars[peer]
            facts = pvars.get('xuanwu_facts')
            same = pvars.get('xuanwu_profile_path') == profile_path
        except Exception:  # pylint: disable=broad-except
            continue
        if facts and same:
            peers[peer] = facts
    return peers


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(('facts', 'profile', 'fail_on', 'consistency', 'job_ports', 'job_env', 'job_mpirun_args'))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=dict(
            facts=dict(type='dict'),
            profile=dict(type='dict'),
            fail_on=dict(type='str', default='fail', choices=['fail', 'warn']),
            consistency=dict(type='bool', default=True),
            job_ports=dict(type='list', elements='raw', default=[]),
            job_env=dict(type='dict', default={}),
            job_mpirun_args=dict(type='list', elements='str', default=[]),
        ))
        host = task_vars.get('inventory_hostname')
        facts = args['facts'] if args['facts'] is not None else self._templar.template(task_vars.get('xuanwu_facts'))
        profile = args['profile'] if args['profile'] is not None else self._templar.template(task_vars.get('xuanwu_profile_resolved'))
        if not facts or not profile:
            result['failed'] = True
            result['msg'] = 'node_check needs facts (xuanwu.cluster.node_probe) and a resolved profile (xuanwu.cluster.node_profile)'
            return result

        ports = _hygiene.job_ports(env=args['job_env'], mpirun_args=args['job_mpirun_args'], extra=args['job_ports'])
        profile = _hygiene.with_job_ports(profile, ports)
        try:
            judge = _judge.Judge(profile)
        except ProfileError as err:
            result['failed'] = True
            result['msg'] = str(err)
            return result
        findings = judge.node(facts, host)
        if args['consistency']:
            peers = _peer_facts(task_vars, host, task_vars.get('xuanwu_profile_path'))
            if len(peers) > 1:
                findings.extend(f for f in judge.group(peers, keys=CONSISTENCY_KEYS) if f.get('host') == host)
        summary = _findings.summarise(findings)
        status = summary['status']
        failing = [f for f in findings if _findings.is_failing(f, args['fail_on'])]
        result.update(
            changed=False,
            findings=findings,
            status=status,
            summary=summary,
            failing=failing,
            # xuanwu_workloads starts empty: facts may come back from a fact cache of an earlier run.
            ansible_facts={'xuanwu_findings': findings, 'xuanwu_status': status, 'xuanwu_workloads': []},
        )
        return result

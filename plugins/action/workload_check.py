# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge a workload run against the host's profile and add the findings to the host's (controller only)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.xuanwu.cluster.plugins.module_utils import _dmon_checks, _findings, _host_samples, _judge, _workloads
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection, _node, _worker


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(('kind', 'run', 'component', 'profile', 'record', 'debug_run', 'scope', 'dmon_required'))

    def run(self, tmp=None, task_vars=None):
        # this host's parsing and judging creates many objects: the collector skips the main process's (_worker)
        _worker.freeze_inherited()
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=dict(
            kind=dict(type='str', required=True, choices=sorted(_workloads.EVALUATORS)),
            run=dict(type='dict', required=True),
            component=dict(type='str'),
            profile=dict(type='dict'),
            record=dict(type='bool', default=True),
            debug_run=dict(type='dict'),
            scope=dict(type='str', default='node', choices=['node', 'multinode']),
            dmon_required=dict(type='bool', default=False),
        ))
        host = task_vars.get('inventory_hostname')
        try:
            # a host in no later stage keeps its profile in brief: resolved again here (docs/facts.md, "Brief facts")
            profile = args['profile'] if args['profile'] is not None else _collection.host_profile(
                self._templar.template(task_vars.get('xuanwu_profile_resolved')), task_vars, self._templar.template)
        except ProfileError as err:
            result.update(failed=True, msg=str(err))
            return result
        run = dict(args['run'])
        if args['component']:
            run['component'] = args['component']
        kind = args['kind']
        if run.get('not_applicable') and args['record']:
            # not run because it cannot apply here (one GPU: no link, no peer): listed once as not applicable, with why;
            # never a pass, never a failure, and no tool time spent on a figure nothing could judge
            summary = {'kind': kind, 'component': run.get('component'), 'exit_code': None, 'seconds': 0,
                       'command': None, 'timed_out': None, 'not_run': True,
                       'not_applicable': str(run['not_applicable'])}
            workloads = list(self._templar.template(task_vars.get('xuanwu_workloads')) or []) + [summary]
            node = _node.with_findings(self._templar.template(task_vars.get('xuanwu_node')), host, [])
            result.update(changed=False, findings=[], status=node['status'], summary=summary,
                          ansible_facts={'xuanwu_node': node, 'xuanwu_workloads': workloads})
            return result
        # a container smoke that did not run is judged by its own check (container.not_measured)
        if kind != 'container_smoke' and (run.get('skipped_reason') or run.get('skipped')):
            # requested and not run (check mode, no recorded output in the replayed bundle, ...): never a pass
            reason = run.get('skipped_reason') or run.get('skip_reason') or 'the run was skipped'
            if not args['record']:
                result.update(changed=False, findings=[], failed_checks=[], skipped_reason=reason)
                return result
            stage = 'collectives' if kind == 'nccl_tests' else 'torch_workloads'
            run = {'stage': stage + ('_multinode' if args['scope'] == 'multinode' else ''), 'reason': reason,
                   'component': run.get('component'), 'not_measured': reason}
            kind = 'not_measured'
        run.setdefault('collective', run.get('component'))
        run = _workloads.with_parsed(kind, run)
        section = 'collectives_multinode' if args['scope'] == 'multinode' else 'collectives'
        if profile:
            try:
                judge = _judge.Judge(profile)
            except ProfileError as err:
                result.update(failed=True, msg=str(err))
                return result
            findings = judge.workload(kind, run, host, section)
            judged = judge.for_section(section)
        else:
            # no resolved profile (the task runs without node_profile): nothing to compare curves with
            judged = {}
            findings = _workloads.evaluate(kind, run, judged, host)
        if not args['record']:
            result.update(changed=False, findings=findings, failed_checks=_findings.failed_checks(findings))
            return result
        summary = _workloads.summarise_run(kind, run, ((judged.get('workloads') or {}).get('ddp_smoke')) if kind == 'ddp_smoke' else None)
        own = findings
        curve = ((judged.get('collectives') or {}).get(run.get('collective')) or {}).get('curve') if kind == 'nccl_tests' else None
        if curve:
            summary['curve'] = curve
        if kind == 'gpu_single':
            one = ((judged.get('workloads') or {}).get('gpu_single') or {})
            summary['floors'] = dict((key, one.get(key)) for key in ('min_bf16_tflops', 'min_membw_gbps', 'max_spread_pct'))
        if isinstance(run.get('dmon'), dict) and kind != 'not_measured':
            unjudged = _workloads.DMON_UNJUDGED.get(kind)
            try:
                if profile:
                    # through the judge: the site's checks.disable / checks.severity apply to dmon.* as to every check
                    # where the profile sets no temperature bound, the GPUs' own maximum operating temperature
                    device = _judge.device_bounds(self._templar.template(task_vars.get('xuanwu_facts')) or {})
                    sampled, summary['dmon'] = judge.dmon(run['dmon'], host, run.get('component'), args['dmon_required'],
                                                          device, unjudged)
                else:
                    sampled, summary['dmon'] = _dmon_checks.judged_without(
                        lambda b: _dmon_checks.judge_run(run['dmon'], b, host, run.get('component'), args['dmon_required']),
                        None, unjudged)
            except ProfileError as err:
                result.update(failed=True, msg=str(err))
                return result
            findings = sorted(findings + sampled, key=_findings.sort_key)
        if isinstance(run.get('host_cpu'), dict) and kind != 'not_measured':
            # the host's CPU sampled beside the workload (_host_samples): judged and shown next to the GPU samples
            if profile:
                sampled, summary['host_cpu'] = judge.host_cpu(run['host_cpu'], host, run.get('component'), run.get('dmon'))
            else:
                sampled, summary['host_cpu'] = _host_samples.judge_run(run['host_cpu'], None, host, run.get('component'),
                                                                       run.get('dmon'))
            findings = sorted(findings + sampled, key=_findings.sort_key)
        node = _node.with_findings(self._templar.template(task_vars.get('xuanwu_node')), host, findings)
        if kind == 'not_measured':
            summary['not_measured'] = run['reason']
            # the stage that measured nothing: its checks are not measured (docs/report-format.md, "Check status")
            summary['stage'] = run.get('stage') or 'workload'
        elif _workloads.not_applicable(kind, run):
            # fewer than two ranks: the run is listed, once, as not applicable (never a pass, never a failure)
            summary['not_applicable'] = _workloads.not_applicable(kind, run)
            if kind == 'nccl_tests' and str(run.get('toolchain_smoke')).lower() == 'true':
                # one GPU: it ran once, small, to prove nccl-tests and NCCL start; its figures are not a measurement
                summary['toolchain_smoke'] = True
                summary['not_applicable'] = 'toolchain smoke only (sizes up to 8 MiB, one cycle: nccl-tests and NCCL ' \
                    'started on this GPU); bandwidth %s' % summary['not_applicable']
            if 'busbw_gbps' in summary:
                # no link carried these figures: kept aside, neither plotted nor exported as a measurement
                summary['busbw_gbps_not_applicable'] = summary.pop('busbw_gbps')
                summary.pop('avg_busbw_gbps', None)
        elif not _findings.failed_checks(own):
            reason = _workloads.not_judged(kind, run, judged)
            if reason:
                summary['not_judged'] = reason
        implausible = [f for f in own if f['check'] == 'collectives.implausible']
        if implausible and 'busbw_gbps' in summary:
            # a figure no link carries is neither plotted nor exported as a measurement: kept aside, with why
            summary['implausible'] = implausible[0]['message']
            summary['busbw_gbps_implausible'] = summary.pop('busbw_gbps')
            summary.pop('avg_busbw_gbps', None)
        debug = args['debug_run'] or {}
        if debug.get('output_tail') and not debug.get('skipped'):
            summary['debug_command'] = debug.get('command')
            summary['debug_log_tail'] = debug.get('output_tail')
        workloads = list(self._templar.template(task_vars.get('xuanwu_workloads')) or []) + [summary]
        result.update(changed=False, findings=findings, status=node['status'], summary=summary,
                      ansible_facts={'xuanwu_node': node, 'xuanwu_workloads': workloads})
        return result

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write the run's report.json, junit.xml, report.md and report.html on the controller."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

from ansible import __version__ as ANSIBLE_VERSION
from ansible.plugins.action import ActionBase

from ansible_collections.xuanwu.cluster.plugins.module_utils import _catalogue
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection, _paths, _report


def _now():
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(('hosts', 'report_dir', 'run_id', 'started_at', 'playbook'))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=dict(
            hosts=dict(type='list', elements='str', required=True),
            report_dir=dict(type='path', required=True),
            run_id=dict(type='str', required=True),
            started_at=dict(type='str'),
            playbook=dict(type='str', default='validate'),
        ))
        hostvars = task_vars.get('hostvars') or {}
        entries = {}
        profiles = {}
        for host in args['hosts']:
            try:
                hv = hostvars[host]
                status = hv.get('xuanwu_status')
                findings = hv.get('xuanwu_findings')
                facts = hv.get('xuanwu_facts')
                profile = hv.get('xuanwu_profile_resolved') or {}
                path = hv.get('xuanwu_profile_path')
                probe_error = hv.get('node_health_probe_error')
                workloads = hv.get('xuanwu_workloads')
            except Exception as err:  # pylint: disable=broad-except
                status, findings, facts, profile, path, probe_error, workloads = None, None, None, {}, None, None, None
                self._display.warning('cannot read the results of %s: %s' % (host, err))
            name = profile.get('name') if isinstance(profile, dict) else None
            if name:
                profiles[name] = path
            if status is None or probe_error:
                entries[host] = _report.host_entry(host, 'error', [], facts, name, path, error=probe_error or (
                    'host was not probed: unreachable, or a task failed before the checks ran'))
            else:
                entries[host] = _report.host_entry(host, status, findings, facts, name, path, workloads=workloads)
        report = _report.build_report(
            run_id=args['run_id'], started_at=args['started_at'], finished_at=_now(),
            collection_version=_collection.version(), ansible_version=ANSIBLE_VERSION,
            playbook=args['playbook'], hosts=entries, profiles=profiles)
        # the run id names a folder: made a safe file name (docs/report-format.md) so it stays in report_dir
        directory = os.path.join(args['report_dir'], _paths.safe_name(args['run_id']))
        files = {
            'report.json': _report.render_json(report),
            'junit.xml': _report.render_junit(report, _catalogue.titles()),
            'report.md': _report.render_markdown(report),
            'report.html': _report.render_html(report),
        }
        try:
            if not os.path.isdir(directory):
                os.makedirs(directory)
            for name, text in files.items():
                with open(os.path.join(directory, name), 'w', encoding='utf-8') as handle:
                    handle.write(text)
        except (IOError, OSError) as err:
            result['failed'] = True
            result['msg'] = 'cannot write the report to %s: %s' % (directory, err)
            return result
        reasons = []
        for host in report['summary']['failed_hosts']:
            entry = report['hosts'][host]
            if entry.get('error'):
                reasons.append('%s: %s' % (host, entry['error']))
            for f in entry['findings']:
                if f['severity'] == 'fail':
                    reasons.append('%s: [%s] %s: measured %s, expected %s — %s' % (
                        host, f['check'], f['component'], _report._fmt(f.get('measured')), _report._fmt(f.get('expected')), f.get('remediation')))
        result.update(changed=False, report_dir=directory, files=sorted(os.path.join(directory, n) for n in files),
                      summary=report['summary'], failed_reasons=reasons)
        return result

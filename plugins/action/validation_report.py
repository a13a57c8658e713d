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

from ansible_collections.xuanwu.cluster.plugins.module_utils import _catalogue, _check_status, _checks, _findings, _prom, _redact
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _collection, _fleet_step, _node, _paths, _report


# the report folder and its files: the owner writes, the owner's group reads, nobody else (docs/security.md); a
# stricter umask keeps the group out too (_paths.umask_mode)
DIR_MODE = 0o750
FILE_MODE = 0o640
# the inventory variables whose values reach the workloads' environments
ENV_VARIABLES = ('xuanwu_nccl_env', 'xuanwu_torch_env')
# what the report reads of each host, as stored (facts are data: never templated again)
RESULT_VARIABLES = ('xuanwu_facts', 'xuanwu_profile_resolved', 'xuanwu_profile_path', 'xuanwu_workloads', 'xuanwu_node')


def _write_private(path, text):
    """Write ``text`` to ``path`` with mode ``FILE_MODE``, also where the file exists (never through a symlink)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, 'O_NOFOLLOW', 0), FILE_MODE)
    with os.fdopen(fd, 'w', encoding='utf-8') as handle:
        os.fchmod(handle.fileno(), _paths.umask_mode(FILE_MODE))
        handle.write(text)


# Seconds the report's files may take to render and write before the run says so (a hung file system, never a hung run).
WRITE_TIMEOUT = 900


# Side by side from this many usable CPUs: each writer's pages of the report are copied on write, which costs more
# than it saves on fewer (1,000 hosts on 2 busy cores: 4.6 s one after the other, 5.5 - 6.5 s side by side).
SIDE_BY_SIDE_CPUS = 4


def _usable_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _write_files(directory, renderers, timeout=WRITE_TIMEOUT, side_by_side=None):
    """Render and write each of ``renderers`` (``{file name: function returning its text}``) into ``directory``: with
    ``side_by_side`` (by default: ``os.fork`` exists and SIDE_BY_SIDE_CPUS CPUs are usable) each in a child process
    of its own, the five formats of a fleet's report at once (the report is the one serial step of a run at 1,000
    hosts); else one after the other. Returns ``[(file name, error)]`` of the files that could not be written; a child
    still running after ``timeout`` seconds is stopped and said so."""
    if side_by_side is None:
        side_by_side = hasattr(os, 'fork') and _usable_cpus() >= SIDE_BY_SIDE_CPUS
    if not side_by_side or len(renderers) < 2:
        errors = [(name, _write_one(directory, name, render)) for name, render in renderers.items()]
        return [(name, error) for name, error in errors if error is not None]
    children = {}
    try:
        for name, render in renderers.items():
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:    # pragma: no cover - the child's lines run in another process
                os.close(read_end)
                code = 1
                try:
                    error = _write_one(directory, name, render)
                    if error is None:
                        code = 0
                    else:
                        os.write(write_end, error.encode('utf-8', 'replace')[:4000])
                finally:
                    os._exit(code)  # pylint: disable=protected-access
            os.close(write_end)
            children[pid] = (name, read_end)
    finally:
        errors = _reap(children, timeout)
    return errors


def _write_one(directory, name, render):
    """Render and write one file: None, or why it was not written."""
    try:
        _write_private(os.path.join(directory, name), render())
    except (IOError, OSError) as err:
        return str(err)
    except Exception as err:  # pylint: disable=broad-except
        return '%s: %s' % (type(err).__name__, err)
    return None


def _reap(children, timeout):
    """Wait for the writers ``{pid: (file name, pipe)}``; ``[(file name, error)]`` of those that failed."""
    deadline = time.monotonic() + timeout
    errors = []
    pending = dict(children)
    while pending:
        for pid in list(pending):
            done, status = os.waitpid(pid, os.WNOHANG)
            if not done and time.monotonic() < deadline:
                continue
            name, read_end = pending.pop(pid)
            if not done:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                errors.append((name, 'not written within %d s (stopped)' % timeout))
            elif status != 0:
                with os.fdopen(read_end, 'rb') as handle:
                    message = handle.read().decode('utf-8', 'replace')
                read_end = None
                errors.append((name, message or 'its writer ended with status %d' % status))
            if read_end is not None:
                os.close(read_end)
        if pending:
            time.sleep(0.02)
    return errors


def _secrets_of(hv):
    """The secret values of a host's environments (``hv`` are its variables)."""
    extra_keys = hv.get('xuanwu_redact_env_keys') or []
    extra_keys = extra_keys if isinstance(extra_keys, list) else []
    secrets = []
    for name in ENV_VARIABLES:
        env = hv.get(name)
        if isinstance(env, dict):
            secrets.extend(_redact.secret_values(env, extra_keys))
    return secrets


def _now():
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(('hosts', 'report_dir', 'run_id', 'started_at', 'playbook', 'history_db', 'controller_textfile_dir', 'export_hosts'))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=dict(
            hosts=dict(type='list', elements='str', required=True),
            report_dir=dict(type='path', required=True),
            run_id=dict(type='str', required=True),
            started_at=dict(type='str'),
            playbook=dict(type='str', default='validate'),
            history_db=dict(type='str'),
            # node_exporter textfile metrics (docs/metrics.md): a copy for a collector on the controller, and one file
            # per host under <report>/metrics/ for the nodes' collectors (the export play copies them)
            controller_textfile_dir=dict(type='str', default=''),
            export_hosts=dict(type='bool', default=False),
        ))
        hostvars = task_vars.get('hostvars') or {}
        # consistency.* findings of the hosts compared with each other (xuanwu.cluster.host_compare, once per run)
        group_findings = task_vars.get('xuanwu_group_findings') or {}
        entries = {}
        profiles = {}
        resolved = {}
        brief = {}
        secrets = []
        fail_on = {}
        nodes = {}
        for host in args['hosts']:
            try:
                hv = self._host_results(hostvars, host)
                secrets.extend(_secrets_of(hv))
                node = hv.get('xuanwu_node') if isinstance(hv.get('xuanwu_node'), dict) else {}
                status = node.get('status')
                findings = list(node.get('findings') or [])
                facts = hv.get('xuanwu_facts')
                profile = hv.get('xuanwu_profile_resolved') or {}
                path = hv.get('xuanwu_profile_path')
                probe_error = node.get('error')
                workloads = hv.get('xuanwu_workloads')
                fail_on[host] = node.get('fail_on') or 'fail'
            except Exception as err:  # pylint: disable=broad-except
                status, findings, facts, profile, path, probe_error, workloads, node = None, [], None, {}, None, None, None, {}
                self._display.warning('cannot read the results of %s: %s' % (host, err))
            nodes[host] = node
            name = profile.get('name') if isinstance(profile, dict) else None
            if name:
                profiles[name] = path
                if profile.get('brief'):
                    brief.setdefault(name, host)
                else:
                    resolved.setdefault(name, profile)
            if status in (None, 'error') or probe_error:
                entries[host] = _report.host_entry(host, 'error', [], facts, name, path, error=probe_error or (
                    'host was not probed: unreachable, or a task failed before the checks ran'))
            else:
                if group_findings.get(host):
                    findings, summary = _findings.merged(findings, group_findings[host])
                    status = summary['status']
                entries[host] = _report.host_entry(host, status, findings, facts, name, path, workloads=workloads)
        # what each host's node account says of the checks that judged nothing on it (docs/report-format.md, "Check status")
        compared = _compared(nodes)
        for host, entry in entries.items():
            entry['checks'] = _node_checks(nodes[host], compared)
        # a profile whose every host kept it in brief (no later stage ran on them: docs/facts.md, "Brief facts") is
        # resolved here, once, from the variables of its first host
        for name, host in sorted(brief.items()):
            if name not in resolved:
                profile = self._full_profile(hostvars, host)
                if profile is not None:
                    resolved[name] = profile
        # fleet thresholds and regressions, once per run (docs/fleet-history.md); '' switches the history off
        history_db = os.path.join(args['report_dir'], 'history.sqlite') if args['history_db'] is None else (args['history_db'] or None)
        extra, fleet = _fleet_step.judge(entries, resolved, history_db, args['run_id'])
        entries = _fleet_step.with_findings(entries, extra)
        report = _report.build_report(
            run_id=args['run_id'], started_at=args['started_at'], finished_at=_now(),
            collection_version=_collection.version(), ansible_version=ANSIBLE_VERSION,
            playbook=args['playbook'], hosts=entries, profiles=profiles)
        report['fleet'] = fleet
        # a secret of the environments may come back in a tool's output or a failure message
        report = _redact.redact(report, secrets)
        # the run id names a folder: made a safe file name (docs/report-format.md) so it stays in report_dir
        directory = os.path.join(args['report_dir'], _paths.safe_name(args['run_id']))
        files = {
            'report.json': lambda: _report.render_json(report),
            'junit.xml': lambda: _report.render_junit(report, _catalogue.titles()),
            'report.md': lambda: _report.render_markdown(report),
            'report.html': lambda: _report.render_html(report),
            'xuanwu.prom': lambda: _prom.render(report),
        }
        # the textfile exports (docs/metrics.md, "Which export carries what"): the nodes that get their own file are the
        # probed hosts (one that was not may not be reachable) whose xuanwu_prometheus_textfile_dir is set; each series
        # of the run is in one export only, so that nothing is counted twice with both exports on
        export = self._export_hosts(task_vars, report) if args['export_hosts'] else []
        exports = _prom.render_exports(report, export, controller=bool(args['controller_textfile_dir']))
        try:
            if not os.path.isdir(directory):
                os.makedirs(directory, DIR_MODE)
            os.chmod(directory, _paths.umask_mode(DIR_MODE))
            errors = _write_files(directory, files)
            if errors:
                raise IOError('; '.join('%s: %s' % error for error in errors))
            if export:
                metrics_dir = os.path.join(directory, 'metrics')
                if not os.path.isdir(metrics_dir):
                    os.makedirs(metrics_dir, DIR_MODE)
                for host, text in exports['nodes'].items():
                    # each run replaces the file: never appended to
                    _write_private(os.path.join(metrics_dir, _paths.safe_name(host) + '.prom'), text)
        except (IOError, OSError) as err:
            result['failed'] = True
            result['msg'] = 'cannot write the report to %s: %s' % (directory, err)
            return result
        if args['controller_textfile_dir']:
            target = os.path.join(args['controller_textfile_dir'], 'xuanwu.prom')
            try:
                _prom.write_atomic(target, exports['controller'])
            except (IOError, OSError, ValueError) as err:
                result['failed'] = True
                result['msg'] = ('cannot write the metrics to %s (xuanwu_prometheus_controller_textfile_dir): %s; the report '
                                 'is in %s' % (target, err, directory))
                return result
        history_error = fleet['history_error'] or _fleet_step.record(history_db, report)
        reasons = []
        for host in report['summary']['failed_hosts']:
            entry = report['hosts'][host]
            if entry.get('error'):
                reasons.append('%s: %s' % (host, entry['error']))
            # one line per check (24 sizes of a collective are one line), root cause first, each remediation once
            reasons.extend('%s: %s' % (host, line) for line in _findings.grouped_text(
                [f for f in entry['findings'] if f['severity'] == 'fail']))
        gate, verdicts, failed_checks = _gate(report, fail_on)
        result.update(changed=False, report_dir=directory, files=sorted(os.path.join(directory, n) for n in files),
                      summary=report['summary'], failed_reasons=reasons, fleet_findings=extra,
                      # the gate play runs on these hosts only: a healthy fleet costs no task per host there
                      gate_hosts=gate, verdicts=verdicts, failed_checks=failed_checks, export_hosts=export,
                      metrics_dir=os.path.join(directory, 'metrics'))
        if history_error:
            result.update(failed=True, msg=history_error)
        return result

    @staticmethod
    def _export_hosts(task_vars, report):
        """The probed hosts of ``report`` whose own ``xuanwu_prometheus_textfile_dir`` is set (a group or host may set
        it to '' for none), in name order: those the export play copies a file to."""
        hostvars = task_vars.get('hostvars') or {}
        out = []
        for host in sorted(report['hosts']):
            if report['hosts'][host].get('error'):
                continue
            try:
                folder = hostvars[host].get('xuanwu_prometheus_textfile_dir')
            except Exception:  # pylint: disable=broad-except
                folder = None
            # unset for the host: the value the report was asked with (the role default or -e) holds for it
            if folder is None or folder:
                out.append(host)
        return out

    def _full_profile(self, hostvars, host):
        """``host``'s resolved profile from its variables (None, with a warning, where it cannot be resolved)."""
        try:
            return _collection.host_profile({'brief': True}, hostvars[host])
        except Exception as err:  # pylint: disable=broad-except
            self._display.warning('cannot resolve the profile of %s for the fleet checks: %s' % (host, err))
            return None

    def _host_results(self, hostvars, host):
        """What the report reads of ``host``: its results as the facts hold them, without templating them again.

        The node checks' facts and findings are redacted where they are made (xuanwu.cluster.node_validate);
        the environments (they may name a vault) are templated here only for the hosts where a stage ran, whose
        tools' outputs may print a secret.
        """
        values = _node.host_values(hostvars, host, RESULT_VARIABLES)
        if values.get('xuanwu_workloads'):
            variables = hostvars[host]
            for name in ENV_VARIABLES + ('xuanwu_redact_env_keys',):
                if name in variables:
                    values[name] = variables[name]
        return values


def _compared(nodes):
    """{profile file: how many hosts the comparison between hosts (``xuanwu_node.compare``) reads of it}."""
    out = {}
    for node in nodes.values():
        compare = node.get('compare') if isinstance(node, dict) else None
        if isinstance(compare, dict):
            out[compare.get('profile_path')] = out.get(compare.get('profile_path'), 0) + 1
    return out


def _node_checks(node, compared):
    """What a host's node account (``node``: its ``xuanwu_node``) says of the checks that judged nothing on it
    (``checks``), and the comparison between hosts where it was compared with no other (``consistency.*``: not
    applicable; ``compared``: ``_compared``'s)."""
    node = node if isinstance(node, dict) else {}
    checks = dict(node.get('checks') or {}) if isinstance(node.get('checks'), dict) else {}
    compare = node.get('compare') if isinstance(node.get('compare'), dict) else None
    if compare is None:
        why = 'the hosts were not compared with each other (xuanwu_consistency_check: false)'
    elif compared.get(compare.get('profile_path'), 0) < 2:
        why = 'no other host of its profile in this run to compare it with'
    else:
        why = None
    if why:
        for check in _checks.CONSISTENCY_CHECKS:
            checks.setdefault(check, {'status': _check_status.NOT_APPLICABLE, 'why': why})
    return checks


def _gate(report, fail_on):
    """The hosts the gate fails (their findings at or above their ``xuanwu_fail_on``, or not probed) and why."""
    gate, verdicts, checks = [], {}, {}
    for host in sorted(report['hosts']):
        entry = report['hosts'][host]
        if entry.get('error'):
            gate.append(host)
            verdicts[host] = '%s was not validated: %s' % (host, entry['error'])
            checks[host] = ['probe']
            continue
        level = fail_on.get(host) if fail_on.get(host) in ('fail', 'warn') else 'fail'
        message = _findings.verdict(host, entry['findings'], level)
        if message:
            gate.append(host)
            checks[host] = sorted(set(f['check'] for f in entry['findings'] if _findings.is_failing(f, level)))
            verdicts[host] = message
    return gate, verdicts, checks

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet thresholds and regressions: a host's bus bandwidth against the other hosts of its profile, and
against its own history (docs/fleet-history.md).

Pure functions, no I/O. Figures are ``{host: {component: {size_bytes: busbw_gbps}}}`` (the nccl-tests runs of
a report: the median over a run's cycles of each size).

Fleet: per profile, collective and size, the median and the MAD of the healthy hosts' figures (status pass
or warn; the hosts of this run, and optionally of the last runs of the history). The MAD is scaled by
1.4826 (so that it estimates the standard deviation of normal noise) and never taken below
``min_spread_share`` of the median (a fleet of near-identical figures would otherwise fail a host 0.1 %
below the median). A host under ``median - k * MAD`` is ``collectives.fleet_outlier``. Fewer than
``min_hosts`` hosts: the fleet does not judge, and the section says so.

Regression: a host under ``(1 - regression_max_share)`` times the median of its own last ``runs`` healthy
runs is ``collectives.regressed``, "regressed since run X", X the newest of those runs where it was within
the share.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils import _collectives, _findings
from ansible_collections.xuanwu.cluster.plugins.module_utils._collectives import human_bytes

MAD_SCALE = 1.4826
HEALTHY = ('pass', 'warn')

REMEDIATION_FLEET = (
    'This host moves {component} at {size} slower than the other hosts of profile {profile} do ({measured} GB/s against '
    'a fleet median of {median} GB/s over {hosts} hosts). Hosts of one build differ by noise only: compare it with a '
    'healthy neighbour (nvidia-smi topo -m, nvidia-smi nvlink --status, nvidia-smi -q -d PERFORMANCE,CLOCK for '
    'throttling, PCIe width and generation, the NICs NCCL uses and their link rate), rerun the benchmark with '
    'NCCL_DEBUG=INFO, and drain the host until it is back within the fleet.')
REMEDIATION_REGRESSED = (
    'This host was faster at {component} {size} before: {baseline} GB/s (median of its last {runs} healthy runs), '
    '{measured} GB/s now, slower since run {since}. Look for what changed since that run on this host: driver, '
    'firmware, kernel or NCCL versions (the report of each run lists them), a reseated or replaced part, a link '
    'that trained down (nvidia-smi nvlink --status, PCIe width), thermal or power throttling '
    '(nvidia-smi -q -d PERFORMANCE), another job sharing the GPUs; rerun to rule out a one-off.')

_e = _findings.entry
# The fleet and history checks (joined into the catalogue in plugins/module_utils/_catalogue.py).
CHECKS = {
    'collectives.fleet_outlier': _e(
        'Bus bandwidth below the fleet threshold: median - k x MAD of the healthy hosts of the profile', 'fail',
        REMEDIATION_FLEET),
    'collectives.regressed': _e(
        'Bus bandwidth more than regression_max_share below the median of the host\'s own last runs', 'fail',
        REMEDIATION_REGRESSED),
}


# the median of the collective checks (a non-empty list)
median = _collectives._median  # pylint: disable=protected-access


def mad(values, centre=None):
    """The median absolute deviation of ``values`` (unscaled)."""
    centre = median(values) if centre is None else centre
    return median([abs(v - centre) for v in values])


def _component(component, size):
    return '%s %s' % (component, human_bytes(size))


def fleet_threshold(values, k, min_spread_share):
    """{median, mad, spread, threshold, samples} of one collective and size; ``mad`` is scaled, ``spread`` is
    the MAD the threshold uses (never below ``min_spread_share`` of the median)."""
    centre = median(values)
    scaled = MAD_SCALE * mad(values, centre)
    spread = max(scaled, float(min_spread_share) * centre)
    return {'median': round(centre, 3), 'mad': round(scaled, 3), 'spread': round(spread, 3),
            'threshold': round(centre - float(k) * spread, 3), 'samples': len(values)}


def _figures_at(figures, min_bytes):
    """[(component, size)] of every figure of ``figures`` at ``min_bytes`` and above."""
    keys = set()
    for per_host in figures.values():
        for component, sizes in per_host.items():
            keys.update((component, int(size)) for size in sizes if int(size) >= min_bytes)
    return sorted(keys)


def evaluate_fleet(figures, statuses, settings, profile_name, extra_samples=None):
    """Fleet findings of the hosts of one profile, and the fleet's figures.

    ``figures``: {host: {component: {size: busbw}}} of this run's hosts of the profile; ``statuses``: {host: status};
    ``settings``: the profile's ``fleet`` section; ``extra_samples``: {(component, size): [(host, busbw), ...]} of
    healthy hosts of earlier runs (a host counts once towards ``min_hosts``, each figure is a sample). Returns ``(findings, section)``.
    """
    k, min_hosts, min_bytes = float(settings['k']), int(settings['min_hosts']), int(settings['min_bytes'])
    share = float(settings['min_spread_share'])
    extra_samples = extra_samples or {}
    healthy = sorted(h for h in figures if statuses.get(h) in HEALTHY)
    section = {'k': k, 'min_hosts': min_hosts, 'min_bytes': min_bytes, 'min_spread_share': share,
               'runs': settings.get('runs') or 0, 'figures': {}, 'not_applied': [], 'outliers': {}}
    findings = []
    for component, size in _figures_at(figures, min_bytes):
        hosts = [h for h in healthy if figures[h].get(component, {}).get(size) is not None]
        earlier = list(extra_samples.get((component, size)) or [])
        values = [float(figures[h][component][size]) for h in hosts] + [float(v) for _h, v in earlier]
        count = len(set(hosts) | set(h for h, _v in earlier))
        name = _component(component, size)
        if count < min_hosts:
            section['not_applied'].append('fleet threshold not applied to %s: %d healthy host(s) < min_hosts %d'
                                          % (name, count, min_hosts))
            continue
        fleet = fleet_threshold(values, k, share)
        fleet['hosts'] = count
        section['figures'].setdefault(component, {})[str(size)] = fleet
        for host in sorted(figures):
            measured = figures[host].get(component, {}).get(size)
            if measured is None or float(measured) >= fleet['threshold']:
                continue
            section['outliers'].setdefault(host, []).append(name)
            context = dict(fleet, component=component, size=human_bytes(size), profile=profile_name, measured=measured)
            findings.append(_findings.make(
                CHECKS, host, 'collectives.fleet_outlier', name, measured,
                '>= %s GB/s (fleet median %s - k %g x MAD %s over %d hosts)' % (
                    fleet['threshold'], fleet['median'], k, fleet['spread'], fleet['hosts']),
                '%s busbw %s GB/s is below the fleet threshold %s GB/s: median %s GB/s, MAD %s GB/s (scaled; %s used), '
                'k %g, %d healthy hosts of profile %s%s' % (
                    name, measured, fleet['threshold'], fleet['median'], fleet['mad'], fleet['spread'], k, fleet['hosts'],
                    profile_name, ', %d samples with earlier runs' % fleet['samples'] if earlier else ''),
                context=context))
    return findings, section


def evaluate_regression(host, figures, history, settings):
    """Regression findings of one host, and notes on what could not be judged.

    ``figures``: {component: {size: busbw}} of this run; ``history``: {component: {size: [(run_id, busbw), ...]}},
    the host's earlier healthy runs, newest first; ``settings``: the profile's ``history`` section.
    Returns ``(findings, regressed, not_judged)``: the findings, their components, and components without
    enough earlier runs.
    """
    share, runs = float(settings['regression_max_share']), int(settings['runs'])
    min_runs, min_bytes = int(settings['min_runs']), int(settings['min_bytes'])
    findings, regressed, not_judged = [], [], []
    for component, sizes in sorted(figures.items()):
        for size, measured in sorted((int(s), v) for s, v in sizes.items()):
            if size < min_bytes or measured is None:
                continue
            name = _component(component, size)
            earlier = list((history.get(component) or {}).get(size) or [])[:runs]
            if len(earlier) < min_runs:
                not_judged.append('%s: %d earlier run(s) < min_runs %d' % (name, len(earlier), min_runs))
                continue
            baseline = median([v for _run, v in earlier])
            floor = baseline * (1.0 - share)
            if float(measured) >= floor:
                continue
            since = next(run for run, value in earlier if value >= floor)
            regressed.append('%s since run %s' % (name, since))
            drop = 100.0 * (1.0 - float(measured) / baseline)
            findings.append(_findings.make(
                CHECKS, host, 'collectives.regressed', name, measured,
                '>= %s GB/s (%g %% under the median %s GB/s of the last %d runs)' % (
                    round(floor, 3), 100 * share, round(baseline, 3), len(earlier)),
                '%s regressed since run %s: %s GB/s now, %.1f %% below its own baseline %s GB/s (median of its last %d '
                'healthy runs; allowed %g %%)' % (name, since, measured, drop, round(baseline, 3), len(earlier), 100 * share),
                context={'component': component, 'size': human_bytes(size), 'baseline': round(baseline, 3),
                         'runs': len(earlier), 'measured': measured, 'since': since}))
    return findings, regressed, not_judged

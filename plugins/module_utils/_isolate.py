# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bad-node isolation by rounds of node pairs (pure: no Ansible imports, Python 3.8).

Round 1 tests disjoint pairs of all hosts at once. The members of pairs under the floor are the
suspects, every host of a pair that passed is a reference. Round 2 tests each suspect against a
distinct reference (in waves when suspects outnumber references). Round 3 tests each suspect that
failed round 2 against another reference. The verdict names:

* bad nodes: slow (or not measurable) against two references, in rounds 2 and 3;
* bad links: a round-1 pair that failed while both of its members passed against a reference;
* inconclusive cases: a suspect with one slow and one good reference, a suspect whose runs all
  failed without a figure, or suspects that had no reference at all (every pair of round 1 failed).

A pair result is a dict: ``{'round': R, 'wave': W, 'pair': [a, b], 'busbw_gbps': number or None,
'ib_write_bw_gbps': number or None, 'error': text or None}``. ``floors`` is
``{'busbw_gbps': number, 'ib_write_bw_gbps': number or None}``: a measurement whose floor is None
is not judged; a measurement with a floor and no figure fails the pair as not measured (never a
pass). Everything is deterministic given the host list: hosts are sorted by name, and the optional
``seed`` shuffles the order of round 1 only (a different seed pairs hosts differently, e.g. to
re-test a bad link's hosts with other partners).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import random

from ansible_collections.xuanwu.cluster.plugins.module_utils._collectives import busbw_by_size, threshold_for
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_ib import parse_ib_write_bw
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_nccl import parse_nccl_tests

MEASUREMENTS = (
    ('busbw_gbps', 'nccl-tests bus bandwidth', 'GB/s'),
    ('ib_write_bw_gbps', 'ib_write_bw bandwidth', 'Gb/s'),
)
MAX_ROUNDS = 3


class IsolationError(ValueError):
    """Bad input to the algorithm (a host list or result it cannot use)."""


def _hosts(hosts):
    if not isinstance(hosts, (list, tuple)) or not all(isinstance(h, str) and h for h in hosts):
        raise IsolationError('hosts must be a list of host names, got %r' % (hosts,))
    names = sorted(set(hosts))
    if len(names) != len(hosts):
        raise IsolationError('hosts must be distinct, got %s' % ', '.join(sorted(h for h in names if list(hosts).count(h) > 1)))
    return names


def round1(hosts, seed=None):
    """Waves of round 1: disjoint pairs of the (sorted, optionally shuffled) hosts in wave 1; an odd
    host out is tested in a wave 2 against the first host of wave 1 (the other hosts idle)."""
    order = _hosts(hosts)
    if seed is not None:
        random.Random(seed).shuffle(order)
    pairs = [sorted(order[i:i + 2]) for i in range(0, len(order) - 1, 2)]
    waves = [pairs] if pairs else []
    if len(order) % 2 and pairs:
        waves.append([sorted([order[0], order[-1]])])
    return waves


def _assign(suspects, references, avoid):
    """Each suspect against a reference, distinct within a wave, never one in ``avoid[suspect]`` when
    another exists. Returns waves of [suspect, reference] pairs (sorted names)."""
    waves = []
    count = len(references)
    for index, suspect in enumerate(suspects):
        rotation = [references[(index + k) % count] for k in range(count)]
        candidates = [r for r in rotation if r not in avoid.get(suspect, ())] or rotation
        for wave in waves:
            free = [r for r in candidates if r not in wave['used']]
            if free:
                break
        else:
            wave = {'pairs': [], 'used': set()}
            waves.append(wave)
            free = candidates
        wave['used'].add(free[0])
        wave['pairs'].append(sorted([suspect, free[0]]))
    return [wave['pairs'] for wave in waves]


def outcome(result, floors):
    """'pass', 'slow' (a figure under its floor) or 'not_measured' (a judged figure missing)."""
    status = 'pass'
    for key, _what, _unit in MEASUREMENTS:
        floor = floors.get(key)
        if floor is None:
            continue
        value = result.get(key)
        if value is None:
            status = 'not_measured' if status == 'pass' else status
        elif value < floor:
            status = 'slow'
    return status


def _by_round(results, number):
    return [r for r in results if r.get('round') == number]


def _state(hosts, results, floors):
    """What rounds 1-3 so far say: suspects, references, and each suspect's round-2/3 outcomes."""
    names = _hosts(hosts)
    first = _by_round(results, 1)
    suspects = set()
    seen = set()
    for result in first:
        seen.update(result['pair'])
        if outcome(result, floors) != 'pass':
            suspects.update(result['pair'])
    suspects.update(h for h in names if h not in seen)  # not tested in round 1: never a reference
    references = [h for h in names if h not in suspects]
    later = {}
    for number in (2, 3):
        for result in _by_round(results, number):
            for host in result['pair']:
                if host in suspects:
                    partner = [h for h in result['pair'] if h != host][0]
                    later.setdefault(host, {})[number] = (outcome(result, floors), partner, result)
    return names, sorted(suspects), references, later


def next_round(hosts, results, floors, seed=None):
    """The next round to run, ``{'round': N, 'waves': [[[a, b], ...], ...]}``, or None when the
    results so far decide every host (or nothing more can be learnt)."""
    done = max([r.get('round', 0) for r in results] or [0])
    if done == 0:
        waves = round1(hosts, seed)
        return {'round': 1, 'waves': waves} if waves else None
    if done >= MAX_ROUNDS:
        return None
    _names, suspects, references, later = _state(hosts, results, floors)
    if not suspects or not references:
        return None
    if done == 1:
        return {'round': 2, 'waves': _assign(suspects, references, {})}
    again = [s for s in suspects if later.get(s, {}).get(2, ('pass',))[0] != 'pass']
    if not again:
        return None
    avoid = dict((s, {later[s][2][1]}) for s in again if 2 in later.get(s, {}))
    return {'round': 3, 'waves': _assign(again, references, avoid)}


def _evidence(result, floors):
    entry = {'round': result.get('round'), 'wave': result.get('wave'), 'pair': list(result['pair']),
             'outcome': outcome(result, floors)}
    for key, _what, _unit in MEASUREMENTS:
        if floors.get(key) is not None or result.get(key) is not None:
            entry[key] = result.get(key)
            entry[key.replace('_gbps', '_floor_gbps')] = floors.get(key)
    if result.get('error'):
        entry['error'] = result['error']
    return entry


def verdict(hosts, results, floors):
    """The answer: bad nodes, bad links, inconclusive cases and passed hosts, each with its evidence."""
    names, suspects, references, later = _state(hosts, results, floors)
    involving = {}
    for result in results:
        for host in result['pair']:
            involving.setdefault(host, []).append(_evidence(result, floors))
    bad, unsure = [], []
    for host in suspects:
        seen = later.get(host, {})
        second, third = seen.get(2), seen.get(3)
        evidence = involving.get(host, [])
        target, reason = unsure, None
        if not references:
            reason = 'no reference node: every pair of round 1 failed (a fabric-wide fault, or a floor above what the fabric gives)'
        elif second is None:
            reason = 'not tested against a reference node'
        elif second[0] == 'pass':
            continue
        elif third is None:
            reason = 'slow against %s in round 2 and not confirmed in round 3' % second[1]
        elif third[0] == 'pass':
            reason = ('failed against %s (round 2) but passed against %s (round 3): an intermittent fault or a bad link to %s'
                      % (second[1], third[1], second[1]))
        elif second[0] == 'not_measured' and third[0] == 'not_measured':
            reason = 'no figure from its pairs with %s and %s: the runs failed (see the errors)' % (second[1], third[1])
        else:
            target, reason = bad, 'failed against two reference nodes: %s (round 2) and %s (round 3)' % (second[1], third[1])
        target.append({'host': host, 'reason': reason, 'evidence': evidence})
    flagged = set(e['host'] for e in bad) | set(e['host'] for e in unsure)
    links = []
    for result in _by_round(results, 1):
        state = outcome(result, floors)
        if state == 'pass' or any(h in flagged for h in result['pair']):
            continue
        a, b = result['pair']
        links.append({'pair': [a, b], 'outcome': state,
                      'reason': '%s with %s under the floor while both passed against reference nodes' % (a, b)
                      if state == 'slow' else 'the run of %s with %s gave no figure while both passed against reference nodes' % (a, b),
                      'evidence': [_evidence(result, floors)] + [_evidence(later[h][2][2], floors) for h in (a, b)]})
    status = dict((h, 'pass') for h in names)
    for link in links:
        for host in link['pair']:
            status[host] = 'bad_link'
    status.update((u['host'], 'inconclusive') for u in unsure)
    status.update((b['host'], 'bad_node') for b in bad)
    return {
        'host_status': status,
        'rounds': max([r.get('round', 0) for r in results] or [0]),
        'pair_runs': len(results),
        'floors': dict((k, floors.get(k)) for k, _w, _u in MEASUREMENTS),
        'bad_nodes': bad,
        'bad_links': links,
        'inconclusive': unsure,
        'passed': [h for h in names if h not in flagged],
        'pairs': [_evidence(r, floors) for r in results],
    }


_SIZE_UNITS = {'': 1, 'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}


def floors_of(profile, max_bytes):
    """The floors of a resolved profile: ``isolation.pair_busbw_gbps_min``, else the floor of the
    ``collectives_multinode`` curve of the collective at ``max_bytes`` (nccl-tests -e: 8G, 512M, ...);
    ``infiniband.ib_write_bw_gbps_min`` or None. Raises IsolationError when no pair floor is given."""
    profile = profile or {}
    section = profile.get('isolation') or {}
    collective = section.get('collective') or 'all_reduce'
    floor = section.get('pair_busbw_gbps_min')
    if floor is None:
        text = str(max_bytes).strip().upper()
        unit = text[-1:] if text[-1:] in _SIZE_UNITS else ''
        number = text[:-1] if unit else text
        if not number.isdigit():
            raise IsolationError('the largest message size must be like 8G, 512M or 1048576, got %r' % (max_bytes,))
        curve = ((profile.get('collectives_multinode') or {}).get(collective) or {}).get('curve')
        point = threshold_for(curve, int(number) * _SIZE_UNITS[unit]) if curve else None
        if point is None:
            raise IsolationError('the profile %r gives no pair floor: set isolation.pair_busbw_gbps_min, or a '
                                 'collectives_multinode.%s curve point at or below %s' % (profile.get('name'), collective, max_bytes))
        floor = point['busbw_gbps_min']
    ib_floor = (profile.get('infiniband') or {}).get('ib_write_bw_gbps_min')
    return {'busbw_gbps': float(floor), 'ib_write_bw_gbps': None if ib_floor is None else float(ib_floor), 'collective': collective}


def _failed_run(run, what):
    """Why a run gave no figure, or None when it ran."""
    if not isinstance(run, dict):
        return '%s did not run' % what
    if run.get('skipped_reason') or run.get('skipped'):
        return '%s not run: %s' % (what, run.get('skipped_reason') or 'skipped')
    if run.get('timed_out'):
        return '%s timed out after %s s' % (what, run.get('timeout_s'))
    return None


def _tail(run):
    return ' '.join(str(run.get('output_tail') or '').split())[-300:]


def pair_measurement(nccl_run, expected_ranks, ib_run=None):
    """The figures of one pair run: ``{'busbw_gbps', 'ib_write_bw_gbps', 'error'}`` from the
    workload_run results of nccl-tests (mpirun) and, when run, of the ib_write_bw client. The nccl
    figure is the busbw (median over cycles) at the largest size; it counts only when the output has
    the expected rank count (two nodes' GPUs), else it is not measured and the error says why."""
    errors = []
    busbw = None
    why = _failed_run(nccl_run, 'nccl-tests')
    if why is None:
        try:
            parsed = parse_nccl_tests(nccl_run.get('stdout') or '')
        except ParseError as err:
            parsed = None
            errors.append('nccl-tests output not understood (exit %s): %s; output ends: %s' % (
                nccl_run.get('exit_code'), err.reason, _tail(nccl_run) or '(nothing)'))
        if parsed is not None:
            sizes = busbw_by_size(parsed)
            figures = [sizes[size] for size in sorted(sizes) if sizes[size] is not None]
            if expected_ranks and parsed.get('nranks') != int(expected_ranks):
                errors.append('nccl-tests ran %s rank(s), expected %s (two nodes x their GPUs)' % (parsed.get('nranks'), expected_ranks))
            elif not figures:
                errors.append('nccl-tests printed no bandwidth (exit %s): %s' % (nccl_run.get('exit_code'), _tail(nccl_run)))
            else:
                busbw = figures[-1]
                if nccl_run.get('exit_code'):
                    errors.append('nccl-tests exited %s after measuring' % nccl_run.get('exit_code'))
    else:
        errors.append(why)
    result = {'busbw_gbps': busbw, 'ib_write_bw_gbps': None}
    if ib_run is not None:
        why = _failed_run(ib_run, 'ib_write_bw')
        if why is None:
            try:
                result['ib_write_bw_gbps'] = parse_ib_write_bw(ib_run.get('stdout') or '')['bw_average_gbps']
            except ParseError as err:
                errors.append('ib_write_bw output not understood (exit %s): %s; read: %r' % (ib_run.get('exit_code'), err.reason,
                                                                                             err.excerpt[:200]))
        else:
            errors.append(why)
    result['error'] = '; '.join(errors) or None
    return result


def wave_results(found, round_no, wave_no, pairs):
    """The results of a wave, one per planned pair: ``found[i]`` is what pair i's head node recorded
    (None when the head failed or was unreachable: then not measured, with that as the error)."""
    results = []
    for index, pair in enumerate(pairs):
        entry = found[index] if index < len(found) else None
        # compared as text: a controller without native types templates numbers of a fact as strings
        if not isinstance(entry, dict) or (str(entry.get('round')), str(entry.get('wave'))) != (str(round_no), str(wave_no)):
            entry = {'busbw_gbps': None, 'ib_write_bw_gbps': None,
                     'error': 'no result from the head node %s (it failed or was unreachable during the wave)' % pair[0]}
        entry = dict(entry, round=round_no, wave=wave_no, pair=list(pair))
        results.append(entry)
    return results


def plan_for_hosts(plan):
    """``plan`` with ``assign``: {host: {"wave": [a, b]}} so that each host finds its pairs in O(1)."""
    assign = {}
    for wave_no, wave in enumerate(plan['waves'], 1):
        for pair in wave:
            for host in pair:
                assign.setdefault(host, {})[str(wave_no)] = list(pair)
    return dict(plan, assign=assign)


def run(hosts, measure, floors, seed=None):
    """Drive every round with ``measure(pair, round, wave) -> result fields`` (a simulation or a
    test); returns the verdict."""
    results = []
    while True:
        plan = next_round(hosts, results, floors, seed)
        if plan is None:
            return verdict(hosts, results, floors)
        for wave_no, wave in enumerate(plan['waves'], 1):
            for pair in wave:
                result = {'round': plan['round'], 'wave': wave_no, 'pair': pair}
                result.update(measure(pair, plan['round'], wave_no))
                results.append(result)

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
        if not references:
            unsure.append({'host': host, 'reason': 'no reference node: every pair of round 1 failed (a fabric-wide fault, '
                                                     'or a floor above what the fabric gives)', 'evidence': evidence})
        elif second is None:
            unsure.append({'host': host, 'reason': 'not tested against a reference node', 'evidence': evidence})
        elif second[0] == 'pass':
            continue
        elif third is None:
            unsure.append({'host': host, 'reason': 'slow against %s in round 2 and not confirmed in round 3' % second[1],
                           'evidence': evidence})
        elif third[0] == 'pass':
            unsure.append({'host': host, 'reason': 'failed against %s (round 2) but passed against %s (round 3): an '
                                                     'intermittent fault or a bad link to %s' % (second[1], third[1], second[1]),
                           'evidence': evidence})
        elif second[0] == 'not_measured' and third[0] == 'not_measured':
            unsure.append({'host': host, 'reason': 'no figure from its pairs with %s and %s: the runs failed (see the errors)'
                                                     % (second[1], third[1]), 'evidence': evidence})
        else:
            bad.append({'host': host, 'reason': 'failed against two reference nodes: %s (round 2) and %s (round 3)'
                                                % (second[1], third[1]), 'evidence': evidence})
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
    return {
        'rounds': max([r.get('round', 0) for r in results] or [0]),
        'pair_runs': len(results),
        'floors': dict((k, floors.get(k)) for k, _w, _u in MEASUREMENTS),
        'bad_nodes': bad,
        'bad_links': links,
        'inconclusive': unsure,
        'passed': [h for h in names if h not in flagged],
        'pairs': [_evidence(r, floors) for r in results],
    }


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

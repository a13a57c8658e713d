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

That is the ``quick`` coverage: it tests N/2 of the N(N-1)/2 links (plus the suspects' pairs), so a
bad link outside round 1's pairs goes unseen; the verdict says how many links it tested and calls the
hosts whose links were partly tested ``pass_partial``, never ``pass``. The ``full`` coverage tests
every link exactly once (round-robin by the circle method: N-1 waves of N/2 disjoint pairs for even
N, N waves with one host sitting out each for odd N, all in one round); the ``targeted`` coverage
tests every link between the hosts of interest (the same schedule) and each of them against two
other hosts (references). Both are judged on the matrix of tested links: a bad node fails with most
of its partners, a bad link is one failing pair whose two members pass with their other partners.

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
COVERAGES = ('quick', 'full', 'targeted')
REFERENCES_PER_HOST = 2   # targeted coverage: each host of interest against this many other hosts


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
    order = _order(hosts, seed)
    pairs = [sorted(order[i:i + 2]) for i in range(0, len(order) - 1, 2)]
    waves = [pairs] if pairs else []
    if len(order) % 2 and pairs:
        waves.append([sorted([order[0], order[-1]])])
    return waves


def _names_of(value, what):
    """A list of host names (sorted, each once)."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(h, str) and h.strip() for h in value):
        raise IsolationError('%s must be a list of host names (as JSON on the command line: -e \'{"%s": ["node1", "node2"]}\'), '
                             'got %r' % (what, what, value))
    return sorted(set(h.strip() for h in value))


def settings(hosts, seed=None, coverage=None, interest=None):
    """The checked options of an isolation run: ``{'seed', 'coverage', 'interest'}``. Raises
    IsolationError naming the variable (xuanwu_isolation_seed, xuanwu_isolation_coverage,
    xuanwu_isolation_hosts_of_interest) of a value of the wrong type or out of range."""
    names = _hosts(hosts)
    if seed is not None and not isinstance(seed, bool) and isinstance(seed, str) and seed.strip().lstrip('-').isdigit():
        seed = int(seed)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise IsolationError('xuanwu_isolation_seed must be an integer (or unset), got %r' % (seed,))
    coverage = 'quick' if coverage in (None, '') else coverage
    if not isinstance(coverage, str) or coverage not in COVERAGES:
        raise IsolationError('xuanwu_isolation_coverage must be one of %s, got %r' % (', '.join(COVERAGES), coverage))
    interest = _names_of([] if interest is None else interest, 'xuanwu_isolation_hosts_of_interest')
    if coverage == 'targeted':
        if not interest:
            raise IsolationError('xuanwu_isolation_coverage targeted needs xuanwu_isolation_hosts_of_interest: the hosts of the slow job')
        unknown = [h for h in interest if h not in names]
        if unknown:
            raise IsolationError('xuanwu_isolation_hosts_of_interest names host(s) that are not isolated here: %s' % ', '.join(unknown))
    elif interest:
        raise IsolationError('xuanwu_isolation_hosts_of_interest is given while xuanwu_isolation_coverage is %s: set it to targeted' % coverage)
    return {'seed': seed, 'coverage': coverage, 'interest': interest}


def _order(hosts, seed):
    order = _hosts(hosts)
    if seed is not None:
        random.Random(seed).shuffle(order)
    return order


def round_robin(hosts):
    """The circle method over ``hosts`` in the order given: a list of waves of disjoint pairs (sorted
    names) in which every pair of hosts appears exactly once - N-1 waves of N/2 pairs for even N; for
    odd N, N waves of (N-1)/2 pairs, one host sitting out each."""
    slots = list(hosts) + ([None] if len(hosts) % 2 else [])
    waves = []
    for _number in range(len(slots) - 1):
        half = len(slots) // 2
        pairs = [sorted([slots[i], slots[-1 - i]]) for i in range(half) if slots[i] is not None and slots[-1 - i] is not None]
        if pairs:
            waves.append(pairs)
        slots = [slots[0], slots[-1]] + slots[1:-1]
    return waves


def targeted_waves(hosts, interest, seed=None):
    """Every link between the hosts of interest (round-robin), then each of them against
    REFERENCES_PER_HOST other hosts, distinct within a wave."""
    order = _order(hosts, seed)
    chosen = [h for h in order if h in set(interest)]
    others = [h for h in order if h not in set(interest)]
    waves = round_robin(chosen)
    avoid = dict((h, set()) for h in chosen)
    for _number in range(min(REFERENCES_PER_HOST, len(others))):
        more = _assign(chosen, others, avoid)
        for pair in (p for wave in more for p in wave):
            host, reference = pair if pair[0] in avoid else pair[::-1]
            avoid[host].add(reference)
        waves += more
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


def next_round(hosts, results, floors, seed=None, coverage='quick', interest=None):
    """The next round to run, ``{'round': N, 'waves': [[[a, b], ...], ...]}``, or None when the
    results so far decide every host (or nothing more can be learnt). The ``full`` and ``targeted``
    coverages plan everything in round 1 (no later round)."""
    done = max([r.get('round', 0) for r in results] or [0])
    if done == 0:
        if coverage == 'full':
            waves = round_robin(_order(hosts, seed))
        elif coverage == 'targeted':
            waves = targeted_waves(hosts, interest or [], seed)
        else:
            waves = round1(hosts, seed)
        return {'round': 1, 'waves': waves} if waves else None
    if coverage != 'quick' or done >= MAX_ROUNDS:
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
    return {'round': 3, 'waves': _assign(again, _round3_references(suspects, references, later), avoid)}


def _round3_references(suspects, references, later):
    """Round 1's references and the suspects that passed against one in round 2 (cleared): with few hosts (three: one
    reference) a suspect gets a second, distinct reference in round 3 instead of the same one again."""
    cleared = [s for s in suspects if later.get(s, {}).get(2, ('',))[0] == 'pass']
    return list(references) + [s for s in cleared if s not in references]


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


def _some(names, most=8):
    """'a, b, c' or 'a, b, ... (12 more)'."""
    names = list(names)
    text = ', '.join(names[:most])
    return text + (', ... (%d more)' % (len(names) - most) if len(names) > most else '')


def _link_reason(a, b, state, why):
    what = 'under the floor' if state == 'slow' else 'gave no figure'
    return '%s with %s %s while %s: the link between them, not either node' % (a, b, what, why)


def _quick(names, results, floors):
    """Bad nodes, bad links and inconclusive cases of the quick coverage (rounds 1-3)."""
    _names, suspects, references, later = _state(names, results, floors)
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
        elif second[1] == third[1]:
            # one reference only: twice against the same node cannot tell a bad node from a bad link to it
            reason = ('%s against %s in rounds 2 and 3, the only reference node it could be tested against: a bad node or '
                      'a bad link to %s' % ('slow' if 'slow' in (second[0], third[0]) else 'no figure', second[1], second[1]))
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
        links.append({'pair': [a, b], 'outcome': state, 'reason': _link_reason(a, b, state, 'both passed against reference nodes'),
                      'evidence': [_evidence(result, floors)] + [_evidence(later[h][2][2], floors) for h in (a, b)]})
    return bad, links, unsure


def _matrix(names, results, floors):
    """Bad nodes, bad links and inconclusive cases judged on the matrix of tested links (full and
    targeted coverage): a host failing with two or more partners and with more than half of those not
    already explained by a bad node is a bad node (the worst first); a failing link that no bad node
    explains is a bad link when both of its members passed with another partner, else its members
    without such a pass are inconclusive."""
    last = {}
    for result in results:
        last[tuple(sorted(result['pair']))] = result
    partners = dict((h, {}) for h in names)
    for (a, b), result in sorted(last.items()):
        state = outcome(result, floors)
        partners.setdefault(a, {})[b] = (state, result)
        partners.setdefault(b, {})[a] = (state, result)
    declared = []
    while True:
        worst = []
        for host in names:
            others = [p for p in partners[host] if p not in declared]
            failed = [p for p in others if partners[host][p][0] != 'pass']
            if host not in declared and len(failed) >= 2 and 2 * len(failed) > len(others):
                worst.append((-len(failed) / len(others), -len(failed), host))
        if not worst:
            break
        declared.append(min(worst)[2])
    bad, unsure = [], []
    for host in sorted(declared):
        seen = partners[host]
        failed = sorted(p for p in seen if seen[p][0] != 'pass')
        passed = sorted(p for p in seen if seen[p][0] == 'pass')
        entry = {'host': host, 'failed_with': failed, 'passed_with': passed,
                 'evidence': [_evidence(seen[p][1], floors) for p in sorted(seen)]}
        if all(seen[p][0] == 'not_measured' for p in failed):
            unsure.append(dict(entry, reason='no figure from its pairs with %s: the runs failed (see the errors)' % _some(failed)))
        else:
            bad.append(dict(entry, reason='failed with %d of its %d tested partners (%s)%s: the node, not one link' % (
                len(failed), len(seen), _some(failed), '; passed with %s' % _some(passed) if passed else '')))
    links, doubtful = [], {}
    for (a, b), result in sorted(last.items()):
        state = outcome(result, floors)
        if state == 'pass' or a in declared or b in declared:
            continue
        good = dict((h, sorted(p for p in partners[h] if p not in (a, b) and p not in declared and partners[h][p][0] == 'pass'))
                    for h in (a, b))
        if good[a] and good[b]:
            why = '%s passed with %d other partner(s) (%s) and %s with %d (%s)' % (
                a, len(good[a]), _some(good[a], 3), b, len(good[b]), _some(good[b], 3))
            links.append({'pair': [a, b], 'outcome': state, 'reason': _link_reason(a, b, state, why),
                          'evidence': [_evidence(result, floors)] + [_evidence(partners[h][good[h][0]][1], floors) for h in (a, b)]})
            continue
        for host in (a, b):
            if not good[host]:
                doubtful.setdefault(host, []).append([b if host == a else a, result])
    for host, failures in sorted(doubtful.items()):
        unsure.append({'host': host, 'evidence': [_evidence(r, floors) for _p, r in failures],
                       'reason': 'failed with %s and passed with no other host tested with it: a bad node or bad link(s), untold '
                                 '(test it against more hosts)' % _some(p for p, _r in failures)})
    count = {}
    for link in links:
        for host in link['pair']:
            count[host] = count.get(host, 0) + 1
    for link in links:
        shared = [h for h in link['pair'] if count[h] > 1]
        if shared:
            link['reason'] += '; %s in %s bad links: its port, cable or leaf is their likely common part' % (
                ' and '.join(shared), ' and '.join(str(count[h]) for h in shared))
    return bad, links, unsure


def _answer(coverage, bad, links, unsure):
    cov = '%d of %d links tested (coverage %s)' % (
        coverage['links_tested'], coverage['links_total'], 'full' if coverage['complete'] else 'partial')
    if coverage.get('hosts_of_interest') is not None:
        count = len(coverage['hosts_of_interest'])
        cov += ', of them %d of the %d links between the %d hosts of interest' % (
            coverage['links_between_hosts_of_interest'], count * (count - 1) // 2, count)
    if not coverage['complete']:
        cov += '; xuanwu_isolation_coverage=full tests every link'
    if bad or links or unsure:
        return '%d bad node(s), %d bad link(s), %d inconclusive host(s); %s' % (len(bad), len(links), len(unsure), cov)
    if not coverage['links_tested']:
        return 'nothing tested: no pair of hosts ran'
    if coverage['complete']:
        return 'every host passed; %s' % cov
    return 'no bad node found among the tested pairs; %s' % cov


def verdict(hosts, results, floors, coverage='quick', interest=None):
    """The answer: bad nodes, bad links, inconclusive cases and passed hosts, each with its evidence,
    and the coverage: which links were tested, of the N(N-1)/2. A host is ``pass`` only when every one
    of its links was tested; ``pass_partial`` when no fault was found among the links tested, some
    untested; ``not_tested`` when none was."""
    names = _hosts(hosts)
    bad, links, unsure = (_quick if coverage == 'quick' else _matrix)(names, results, floors)
    tested = sorted(set(tuple(sorted(r['pair'])) for r in results))
    per_host = dict((h, 0) for h in names)
    for pair in tested:
        for host in pair:
            per_host[host] = per_host.get(host, 0) + 1
    status = dict((h, 'pass' if per_host[h] == len(names) - 1 else 'pass_partial' if per_host[h] else 'not_tested') for h in names)
    for link in links:
        for host in link['pair']:
            status[host] = 'bad_link'
    status.update((u['host'], 'inconclusive') for u in unsure)
    status.update((b['host'], 'bad_node') for b in bad)
    total = len(names) * (len(names) - 1) // 2
    covered = {
        'mode': coverage, 'links_tested': len(tested), 'links_total': total, 'complete': len(tested) == total and total > 0,
        'links_per_host': max(0, len(names) - 1), 'links_of_host': per_host, 'tested': [list(p) for p in tested],
    }
    if coverage == 'targeted':
        chosen = sorted(interest or [])
        covered['hosts_of_interest'] = chosen
        covered['links_between_hosts_of_interest'] = len([p for p in tested if p[0] in chosen and p[1] in chosen])
    return {
        'host_status': status,
        'answer': _answer(covered, bad, links, unsure),
        'coverage': covered,
        'rounds': max([r.get('round', 0) for r in results] or [0]),
        'pair_runs': len(results),
        'floors': dict((k, floors.get(k)) for k, _w, _u in MEASUREMENTS),
        'bad_nodes': bad,
        'bad_links': links,
        'inconclusive': unsure,
        'passed': [h for h in names if status[h] == 'pass'],
        'passed_partial': [h for h in names if status[h] == 'pass_partial'],
        'not_tested': [h for h in names if status[h] == 'not_tested'],
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


def run(hosts, measure, floors, seed=None, coverage='quick', interest=None):
    """Drive every round with ``measure(pair, round, wave) -> result fields`` (a simulation or a
    test); returns the verdict."""
    results = []
    while True:
        plan = next_round(hosts, results, floors, seed, coverage, interest)
        if plan is None:
            return verdict(hosts, results, floors, coverage, interest)
        for wave_no, wave in enumerate(plan['waves'], 1):
            for pair in wave:
                result = {'round': plan['round'], 'wave': wave_no, 'pair': pair}
                result.update(measure(pair, plan['round'], wave_no))
                results.append(result)

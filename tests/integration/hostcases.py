"""Many cases in one playbook run: each case is a host of one inventory (all on the local connection), so a
role's refusals and acceptances are proven by a single ansible-playbook run instead of one run per case.

``by_host(out)`` splits the output of such a run into each host's result text (whitespace made single blanks: the
callback wraps long messages) and ``recap(out)`` reads each host's PLAY RECAP counters."""
import collections
import re

RESULT = re.compile(r'^(?:ok|changed|fatal|failed|skipping|included|skipped): \[([^\]]+?)\]')
RECAP = re.compile(r'^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)')


def by_host(out):
    """{host: the text of every result of that host, in order}; a result runs to the next result, task or play."""
    texts = collections.defaultdict(list)
    host = None
    for line in out.splitlines():
        match = RESULT.match(line)
        if match:
            host = match.group(1).split(' -> ')[0]
        elif line.startswith(('TASK [', 'PLAY [', 'PLAY RECAP', 'RUNNING HANDLER [')):
            host = None
        if host:
            texts[host].append(line)
    return dict((name, ' '.join(' '.join(lines).split())) for name, lines in texts.items())


def recap(out):
    """{host: {'ok': n, 'changed': n, 'unreachable': n, 'failed': n}} from the PLAY RECAP."""
    counts = {}
    for line in out[out.rfind('PLAY RECAP'):].splitlines():
        match = RECAP.match(line)
        if match:
            counts[match.group(1)] = dict(zip(('ok', 'changed', 'unreachable', 'failed'), (int(g) for g in match.groups()[1:])))
    return counts


def case_hosts(prefix, cases):
    """Host names for a list of cases: prefix00, prefix01, ... (inventory names, sortable)."""
    return ['%s%02d' % (prefix, index) for index in range(len(cases))]

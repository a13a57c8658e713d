"""Named points of the job service's stateful steps where the test suite makes this process fail as the real world
does: ``XUANWU_FAILPOINT=<point>:<action>[:<times>][,...]`` in the service's environment, where ``kill`` is kill -9
of this process at that point and ``enospc`` makes the write that follows fail as on a full disk (``times`` times,
default once). Unset, as it always is outside the tests, a point is one dictionary lookup. Jobs never see the
variable (their environment is an allow-list, ``secure.job_environment``).

The points, in the order a job and a batch pass them: ``submit`` (before the job is stored), ``start`` (claimed,
before its attempt is launched), ``launch`` (the attempt process runs, before its pid is stored), ``running`` (the
attempt is watched), ``finish`` (it ended, before its end is stored), ``settle`` (the attempt is stored, before the
job is made final or retried), ``cancel`` (the job is cancelled in the store, before its tree is stopped),
``summary`` (before a batch's summary is written)."""
from __future__ import annotations

import errno
import os
import signal
import threading

VARIABLE = 'XUANWU_FAILPOINT'
ACTIONS = ('kill', 'enospc')
_lock = threading.Lock()


def _parse(text: str) -> dict:
    points = {}
    for item in filter(None, (part.strip() for part in (text or '').split(','))):
        name, rest = item.partition(':')[::2]
        action, times = rest.partition(':')[::2]
        if action not in ACTIONS or (times and not times.isdigit()):
            raise SystemExit('xuanwu: %s: %r is not <point>:<kill|enospc>[:<times>]' % (VARIABLE, item))
        points[name] = [action, int(times or 1)]
    return points


_POINTS = _parse(os.environ.get(VARIABLE, ''))


def hit(point: str) -> None:
    """Fail here when the point is armed: kill -9 of this process, or OSError(ENOSPC) while times are left."""
    armed = _POINTS.get(point)
    if armed is None:
        return
    if armed[0] == 'kill':
        os.kill(os.getpid(), signal.SIGKILL)
    with _lock:
        if armed[1] <= 0:
            return
        armed[1] -= 1
    raise OSError(errno.ENOSPC, 'No space left on device (at %s)' % point)

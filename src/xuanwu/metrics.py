"""Prometheus metrics of the job service, rendered as the text exposition format (version 0.0.4).

Gauges (jobs by state, queue depth, running) are read from the store at scrape time, so they are
right after a restart; counters and the duration histogram count what this process saw finish.
"""
from __future__ import annotations

import math
import threading

STATES = ('queued', 'running', 'succeeded', 'failed', 'cancelled')
FINAL_STATES = frozenset(('succeeded', 'failed', 'cancelled'))
# Job wall time from start to end, seconds: a short test job to a week-long soak.
DURATION_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600, 7 * 24 * 3600)


def _label(value: str) -> str:
    return str(value).replace('\\', '\\\\').replace('\n', '\\n').replace('"', '\\"')


def _num(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


class Metrics:
    """Counters fed by the executor's events; ``render`` adds the store's gauges."""

    def __init__(self):
        self._lock = threading.Lock()
        self._finished = {state: 0 for state in FINAL_STATES}
        self._attempts = 0
        self._buckets = [0] * len(DURATION_BUCKETS)
        self._count = 0
        self._sum = 0.0
        self._submitted = 0
        self._rejected = 0

    def submitted(self) -> None:
        with self._lock:
            self._submitted += 1

    def rejected(self) -> None:
        with self._lock:
            self._rejected += 1

    def attempt_started(self) -> None:
        with self._lock:
            self._attempts += 1

    def finished(self, status: str, duration: float | None) -> None:
        with self._lock:
            if status in self._finished:
                self._finished[status] += 1
            if duration is None or duration < 0 or not math.isfinite(duration):
                return
            self._count += 1
            self._sum += duration
            for i, bound in enumerate(DURATION_BUCKETS):
                if duration <= bound:
                    self._buckets[i] += 1

    def render(self, by_state: dict) -> str:
        """The exposition text; ``by_state`` maps each state to its number of jobs in the store."""
        with self._lock:
            finished = dict(self._finished)
            attempts, submitted, rejected = self._attempts, self._submitted, self._rejected
            buckets, count, total = list(self._buckets), self._count, self._sum
        lines = [
            '# HELP xuanwu_jobs Jobs in the store by state.',
            '# TYPE xuanwu_jobs gauge',
        ]
        lines += ['xuanwu_jobs{state="%s"} %d' % (_label(s), int(by_state.get(s, 0))) for s in STATES]
        lines += [
            '# HELP xuanwu_queue_depth Jobs waiting for a worker.',
            '# TYPE xuanwu_queue_depth gauge',
            'xuanwu_queue_depth %d' % int(by_state.get('queued', 0)),
            '# HELP xuanwu_jobs_running Jobs running now.',
            '# TYPE xuanwu_jobs_running gauge',
            'xuanwu_jobs_running %d' % int(by_state.get('running', 0)),
            '# HELP xuanwu_jobs_submitted_total Jobs accepted by this service process.',
            '# TYPE xuanwu_jobs_submitted_total counter',
            'xuanwu_jobs_submitted_total %d' % submitted,
            '# HELP xuanwu_jobs_rejected_total Submissions refused as bad input by this service process.',
            '# TYPE xuanwu_jobs_rejected_total counter',
            'xuanwu_jobs_rejected_total %d' % rejected,
            '# HELP xuanwu_jobs_finished_total Jobs that reached a final state in this service process.',
            '# TYPE xuanwu_jobs_finished_total counter',
        ]
        lines += ['xuanwu_jobs_finished_total{state="%s"} %d' % (s, finished[s]) for s in sorted(finished)]
        lines += [
            '# HELP xuanwu_job_attempts_total Attempts started in this service process (retries included).',
            '# TYPE xuanwu_job_attempts_total counter',
            'xuanwu_job_attempts_total %d' % attempts,
            '# HELP xuanwu_job_duration_seconds Wall time of finished jobs, start to end.',
            '# TYPE xuanwu_job_duration_seconds histogram',
        ]
        for bound, value in zip(DURATION_BUCKETS, buckets):
            lines.append('xuanwu_job_duration_seconds_bucket{le="%r"} %d' % (float(bound), value))
        lines += [
            'xuanwu_job_duration_seconds_bucket{le="+Inf"} %d' % count,
            'xuanwu_job_duration_seconds_sum %s' % _num(total),
            'xuanwu_job_duration_seconds_count %d' % count,
        ]
        return '\n'.join(lines) + '\n'

# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the test suites as jobs on a few lanes at once (what `make test` calls).

    python3 scripts/test.py [--lanes N] [--shards N] [SUITE ...]      suites: unit lint sanity integration molecule

Every suite is cut into jobs: unit, lint and sanity are one job each; integration is one job per shard of the
newest controller venv (.venv = ansible-core 2.19: every integration test, pytest's items dealt round-robin,
XUANWU_SHARD=i/n, tests/integration/conftest.py) and one job for .venv-2.16, which runs only the tests marked
both_controllers (what can differ between ansible-core versions, tests/conftest.py); molecule is one job that builds
the test image and installs molecule, then one job per
scenario. A lane takes the next job as soon as it is free, the longest first (figures measured on a 2-core
machine, in JOB_SECONDS below), so no suite waits for the slowest job of the one before it and no core idles
while unit, lint and sanity each run on one. The suites are CPU-bound (the machine stays about 95 % busy): lanes
remove idle time, they do not shorten the work itself.

Each job writes its own log under .cache/test-logs/; a line says when each starts and ends. At the end:
the last lines of every failed job's log, each job's time, `make test: ... in Ns` and
`suites: N passed, N failed`. Every job runs even after a failure; the exit status is 1 if any failed.

The time budget: the run fails, with the jobs' times, even when every suite passed, so that a change cannot push CI
towards its limit unnoticed, when
- it took longer than TEST_BUDGET_SECONDS (default 2700: 45 minutes) at the reference speed: the seconds it took,
  divided by how much slower this machine is than the one the budget was set on. That factor is measured, not
  assumed: the same small CPU-bound Python program (an interpreter started, json and re imported, a dict built and
  serialised) is timed CALIBRATION_RUNS times before the jobs start and again after they end, and the median is
  divided by REFERENCE_CALIBRATION_SECONDS, and CPU_SHARE of the wall time (the share measured to follow it) is
  scaled by that ratio (the factor is kept between 0.25 and MAX_SLOWER); or
- it took longer than TEST_HARD_SECONDS (default 5000) on this machine, whatever its speed: CI stops at 90 minutes
  (5,400 s), and setup takes about 3 minutes of them.
0 switches either guard off (e.g. on a slower machine of your own).

Environment: TEST_LANES (default: the number of CPUs + 1: the molecule scenarios wait on containers,
networks and timers for about a third of their time, and a third lane fills it on 2 CPUs), TEST_SHARDS (integration shards
of the newest controller, default 2), MOLECULE_SCENARIOS (default: every scenario), PYTEST_ARGS (default -q),
TEST_BUDGET_SECONDS (default 2700), TEST_HARD_SECONDS (default 5000).
"""
import argparse
import os
import shlex
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITES = ('unit', 'lint', 'sanity', 'integration', 'molecule')
CONTROLLER_VENVS = ('.venv', '.venv-2.16')
LOG_DIR = os.path.join('.cache', 'test-logs')
# Seconds each job took in a fresh-clone `.ci/run` on a 2-core machine, 3 lanes (docs/development.md): only their
# order matters (the longest first). A job not named here counts as DEFAULT_SECONDS.
JOB_SECONDS = {
    'molecule-image': 10000,  # first: the scenarios wait for it
    'integration': 1250,  # per shard of two (the newest controller)
    'molecule:cluster': 680, 'molecule:firewall': 450, 'molecule:gpu_packages': 430, 'molecule:roce_qos': 340,
    'unit': 320, 'molecule:container_toolkit': 310, 'molecule:python_venv': 275, 'integration-2.16': 260,
    'molecule:monitoring': 250, 'molecule:rdma': 225, 'lint': 200, 'molecule:chrony': 180, 'sanity': 100,
}
DEFAULT_SECONDS = 200
BUDGET_SECONDS = 2700   # 45 minutes at the reference speed
HARD_SECONDS = 5000     # 83 minutes on any machine: CI stops at 90 (5,400 s), setup (about 3 minutes) included
# The calibration program: CPU-bound Python in a fresh interpreter, as the suites are (pytest, ansible-playbook and
# the modules' processes). About 0.3 s at the reference speed.
CALIBRATION = ("import json, re\n"
               "d = {}\n"
               "for i in range(300000):\n"
               "    d['k%d' % (i % 997)] = re.sub('a', 'b', 'xa%d' % i)\n"
               "json.dumps(d)\n")
CALIBRATION_RUNS = 3
# Its median on the machine the budget was set on, at its usual speed (2 cores, nothing else running): 0.25-0.27 s in
# a fresh-clone .ci/run of 76d483b there, whose make test took 1,620 s, and 0.26-0.28 s in CI's run of the same commit
# (1,706 s).
REFERENCE_CALIBRATION_SECONDS = 0.26
# How much of the suites' wall time follows the calibration. Not all of it: the molecule scenarios wait on containers
# and timers, the integration tests on subprocesses and sockets. Measured: on 2026-12-05 the same machine calibrated at
# 0.93-0.99 s (3.65 times the reference) and the same jobs took 1.9-2.1 times as long (unit 174 against 92 ms per
# test, the integration shards 2.06 and 2.11 times): 1 + 0.38 * (3.65 - 1) = 2.0. The factor the run's seconds are
# divided by is 1 + CPU_SHARE * (calibration / reference - 1).
CPU_SHARE = 0.38
MAX_SLOWER = 3.0        # a slower machine than this gets no more allowance: the hard limit is what is left
TAIL_LINES = 120


class Job(object):
    def __init__(self, name, suite, argv, env=None, needs=None, weight=None):
        self.name, self.suite, self.argv = name, suite, argv
        self.env = env or {}
        self.needs = needs  # the name of a job that must pass first
        self.weight = weight if weight is not None else JOB_SECONDS.get(name, JOB_SECONDS.get(name.split(':')[0], DEFAULT_SECONDS))
        self.log = os.path.join(LOG_DIR, name.replace(':', '-') + '.log')
        self.rc = None
        self.seconds = 0
        self.note = ''


def molecule_scenarios(root, wanted):
    found = sorted(d for d in os.listdir(os.path.join(root, 'molecule'))
                   if d != 'shared' and os.path.isfile(os.path.join(root, 'molecule', d, 'molecule.yml')))
    if not wanted:
        return found
    unknown = [s for s in wanted if s not in found]
    if unknown:
        raise SystemExit('test.py: no molecule scenario %s (there are: %s)' % (', '.join(unknown), ', '.join(found)))
    return list(wanted)


def plan(suites, shards, scenarios, pytest_args, root=ROOT):
    """The jobs of these suites, in the order the lanes take them (the longest first, dependencies before)."""
    jobs = []
    python = os.path.join('.venv', 'bin', 'python')
    for suite in suites:
        if suite == 'unit':
            jobs.append(Job('unit', suite, [python, '-m', 'pytest'] + pytest_args + ['tests/unit']))
        elif suite in ('lint', 'sanity'):
            jobs.append(Job(suite, suite, ['bash', 'scripts/%s.sh' % suite]))
        elif suite == 'integration':
            for venv in CONTROLLER_VENVS:
                # the older controller runs the both_controllers tests only: one job is enough
                count = shards if venv == CONTROLLER_VENVS[0] else 1
                for shard in range(count):
                    name = 'integration:%s:%d' % (venv.lstrip('.'), shard + 1)
                    env = {'PATH': os.path.join(root, venv, 'bin') + os.pathsep + os.environ.get('PATH', ''),
                           # each job its own fact cache: jobs at once must not read each other's facts
                           'ANSIBLE_CACHE_PLUGIN_CONNECTION': os.path.join(root, '.cache', 'facts-' + name.replace(':', '-')),
                           'XUANWU_SHARD': '%d/%d' % (shard + 1, count)}
                    weight = JOB_SECONDS['integration'] * 2 // count if venv == CONTROLLER_VENVS[0] else JOB_SECONDS['integration-2.16']
                    # the slowest 20 tests of every job in its log: where the time goes (docs/development.md)
                    jobs.append(Job(name, suite, [os.path.join(venv, 'bin', 'python'), '-m', 'pytest'] + pytest_args
                                    + ['--durations=20', 'tests/integration'], env=env, weight=weight))
        elif suite == 'molecule':
            jobs.append(Job('molecule-image', suite, ['bash', '-c', 'bash scripts/build-test-image.sh && '
                                                                    'MOLECULE_PREPARE_ONLY=1 bash scripts/molecule.sh']))
            for scenario in scenarios:
                jobs.append(Job('molecule:' + scenario, suite, ['bash', 'scripts/molecule.sh', scenario], needs='molecule-image'))
        else:
            raise SystemExit('test.py: unknown suite %r (suites: %s)' % (suite, ' '.join(SUITES)))
    # stable: equal weights keep the order above
    return sorted(jobs, key=lambda job: -job.weight)


def say(text):
    sys.stdout.write('[test] %s\n' % text)
    sys.stdout.flush()


def run_job(job, root):
    os.makedirs(os.path.join(root, LOG_DIR), exist_ok=True)
    env = dict(os.environ, **job.env)
    start = time.time()
    with open(os.path.join(root, job.log), 'w') as log:
        log.write('$ %s\n' % ' '.join(shlex.quote(a) for a in job.argv))
        log.flush()
        try:
            job.rc = subprocess.call(job.argv, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        except OSError as exc:
            log.write('cannot start: %s\n' % exc)
            job.rc = 127
    job.seconds = int(round(time.time() - start))


def run(jobs, lanes, root=ROOT, runner=run_job):
    """Run the jobs on `lanes` threads, the first ready job first; a job whose dependency failed is not run."""
    lock = threading.Condition()
    pending = list(jobs)
    done = {}

    def next_job():
        # called with the lock held; None when nothing is left, 'wait' when the rest waits for a dependency
        for job in pending:
            if job.needs is None or job.needs in done:
                pending.remove(job)
                return job
        return 'wait' if pending else None

    def lane():
        while True:
            with lock:
                job = next_job()
                while job == 'wait':
                    lock.wait()
                    job = next_job()
                if job is None:
                    return
            if job.needs is not None and done[job.needs].rc != 0:
                job.rc, job.note = 1, 'not run: %s failed' % job.needs
                say('%s: FAILED (%s)' % (job.name, job.note))
            else:
                say('%s: started' % job.name)
                runner(job, root)
                say('%s: %s in %ds (log %s)' % (job.name, 'passed' if job.rc == 0 else 'FAILED (exit %s)' % job.rc, job.seconds, job.log))
            with lock:
                done[job.name] = job
                lock.notify_all()

    threads = [threading.Thread(target=lane, name='lane-%d' % i) for i in range(max(1, lanes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return jobs


def suite_results(jobs, suites):
    results = []
    for suite in suites:
        mine = [j for j in jobs if j.suite == suite]
        failed = [j.name for j in mine if j.rc != 0]
        results.append((suite, not failed, failed))
    return results


def calibrate(runs=CALIBRATION_RUNS, python=sys.executable):
    """Seconds of each run of the calibration program (wall clock: the suites are judged by the wall clock too)."""
    took = []
    for _run in range(runs):
        start = time.time()
        subprocess.call([python, '-c', CALIBRATION], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
        took.append(time.time() - start)
    return took


def slower_factor(samples, reference=REFERENCE_CALIBRATION_SECONDS, share=CPU_SHARE):
    """How many times as long as at the reference speed the suites take on this machine: the median of the
    calibration samples against the reference, applied to the share of the wall time that follows it
    (1 + share * (median / reference - 1)), kept between 0.25 and MAX_SLOWER; 1.0 without samples."""
    if not samples or reference <= 0:
        return 1.0
    ordered = sorted(samples)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0
    return min(MAX_SLOWER, max(0.25, 1.0 + share * (median / reference - 1.0)))


def budget_verdict(seconds, budget, factor=1.0, hard=0):
    """None when the run kept to its budgets (a guard is off when its budget is 0), else the message that fails it.
    `budget` is in seconds at the reference speed (seconds / factor), `hard` in seconds on this machine."""
    advice = 'make the slowest jobs above cheaper (docs/development.md, "Keeping CI fast") before adding tests'
    if hard > 0 and seconds > hard:
        return ('the suites took %ds, over the hard limit of %ds on any machine (TEST_HARD_SECONDS): CI stops at 90 '
                'minutes; %s' % (seconds, hard, advice))
    normalised = seconds / factor
    if budget > 0 and normalised > budget:
        return ('the suites took %ds, %ds at the reference speed (this machine %.2f times as slow), over the time budget of '
                '%ds (TEST_BUDGET_SECONDS); %s' % (seconds, round(normalised), factor, budget, advice))
    return None


def tail(path, lines):
    try:
        with open(path, errors='replace') as handle:
            return handle.readlines()[-lines:]
    except OSError as exc:
        return ['(cannot read %s: %s)\n' % (path, exc)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('suites', nargs='*', metavar='SUITE', help='default: %s' % ' '.join(SUITES))
    parser.add_argument('--lanes', type=int, default=int(os.environ.get('TEST_LANES', 0)) or (os.cpu_count() or 1) + 1)
    parser.add_argument('--shards', type=int, default=int(os.environ.get('TEST_SHARDS', 2)))
    parser.add_argument('--budget', type=int, default=int(os.environ.get('TEST_BUDGET_SECONDS', BUDGET_SECONDS)),
                        help='seconds the whole run may take at the reference speed; over it the run fails (0: no limit)')
    parser.add_argument('--hard', type=int, default=int(os.environ.get('TEST_HARD_SECONDS', HARD_SECONDS)),
                        help='seconds the whole run may take on this machine; over it the run fails (0: no limit)')
    args = parser.parse_args(argv)
    suites = args.suites or list(SUITES)
    if args.lanes < 1 or args.shards < 1:
        parser.error('--lanes and --shards must be at least 1')
    scenarios = molecule_scenarios(ROOT, os.environ.get('MOLECULE_SCENARIOS', '').split()) if 'molecule' in suites else []
    jobs = plan(suites, args.shards, scenarios, shlex.split(os.environ.get('PYTEST_ARGS', '-q')), root=ROOT)
    samples = calibrate() if args.budget > 0 else []
    start = time.time()
    say('%d jobs of %s on %d lanes: %s' % (len(jobs), ' '.join(suites), args.lanes, ' '.join(j.name for j in jobs)))
    run(jobs, args.lanes, root=ROOT)
    failed = [j for j in jobs if j.rc != 0]
    for job in failed:
        sys.stdout.write('\n######## %s FAILED: the last %d lines of %s\n' % (job.name, TAIL_LINES, job.log))
        sys.stdout.writelines(tail(os.path.join(ROOT, job.log), TAIL_LINES) if not job.note else [job.note + '\n'])
    sys.stdout.write('\n')
    for job in jobs:
        last = [line.strip() for line in tail(os.path.join(ROOT, job.log), 3) if line.strip()] if job.rc == 0 else []
        sys.stdout.write('  %-28s %-7s %5ds  %s\n' % (job.name, 'passed' if job.rc == 0 else 'FAILED', job.seconds,
                                                      (last[-1] if last else job.note)[:90]))
    results = suite_results(jobs, suites)
    names = [suite for suite, ok, _failed in results if not ok]
    ending = '; failed: ' + ' '.join(names) if names else ''
    took = int(round(time.time() - start))
    samples += calibrate() if args.budget > 0 else []
    factor = slower_factor(samples)
    sys.stdout.write('\nmake test: %s in %ds on %d lanes%s\n' % (' '.join(suites), took, args.lanes, ending))
    if samples:
        timings = ' '.join('%.2f' % t for t in samples)
        sys.stdout.write('machine speed: the calibration took %s s (reference %.2f s, %d %% of the wall time follows it): '
                         '%.2f times as slow; %ds at the reference speed\n'
                         % (timings, REFERENCE_CALIBRATION_SECONDS, round(CPU_SHARE * 100), factor, round(took / factor)))
    over = budget_verdict(took, args.budget, factor, args.hard)
    if over:
        sys.stdout.write('time budget: FAILED: %s\n' % over)
    sys.stdout.write('suites: %d passed, %d failed\n' % (len(results) - len(names), len(names)))
    return 1 if names or over else 0


if __name__ == '__main__':
    sys.exit(main())

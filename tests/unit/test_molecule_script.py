"""scripts/molecule.sh runs MOLECULE_JOBS scenarios at once, each with its own log, and keeps its summary
and exit status. The script runs in a copy of the repository's layout with stand-ins for molecule, podman
and the venv (shell scripts written here): each stand-in `molecule test` records when it starts and ends,
and the scenarios wait for each other through those records, so the test needs no timing."""
import os
import shutil
import stat
import subprocess

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))

# molecule stand-in: `--version`, and `--base-config B test --scenario-name S`. Scenario "a" waits (at most
# 10 s) until "b" has started: it finishes only when both ran side by side. "c" notes whether a or b had
# ended when it started (a third slot would start it at once). "b" fails.
FAKE_MOLECULE = r'''#!/usr/bin/env bash
[ "$1" = --version ] && { echo "molecule 26.10.0 using python 3.11"; exit 0; }
s="$5"; d="$MARKS"
touch "$d/$s.started"
echo "scenario $s output"
case "$s" in
    a) for _ in $(seq 100); do [ -e "$d/b.started" ] && break; sleep 0.1; done
       [ -e "$d/b.started" ] && touch "$d/overlap" ;;
    c) { [ -e "$d/a.ended" ] || [ -e "$d/b.ended" ]; } && touch "$d/c.after_one_ended"
       [ -e "$d/a.started" ] && [ -e "$d/b.started" ] && touch "$d/c.after_both_started" ;;
esac
if [ "$s" = b ]; then
    for _ in $(seq 100); do [ -e "$d/a.started" ] && break; sleep 0.1; done
    touch "$d/$s.ended"; exit 3
fi
touch "$d/$s.ended"
'''
FAKE_PYTHON = '#!/usr/bin/env bash\nprintf "molecule 26.10.0\\nmolecule-plugins 26.10.12\\n"\n'
TRUE = '#!/usr/bin/env bash\nexit 0\n'


def _script(path, text):
    with open(path, 'w') as handle:
        handle.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


@pytest.fixture()
def tree(tmp_path):
    for sub in ('scripts', 'requirements', 'molecule/shared', '.venv/bin', 'tools', 'marks'):
        (tmp_path / sub).mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, 'scripts', 'molecule.sh'), str(tmp_path / 'scripts'))
    shutil.copy(os.path.join(ROOT, 'requirements', 'molecule.txt'), str(tmp_path / 'requirements'))
    (tmp_path / 'molecule/shared/base.yml').write_text('---\n')
    (tmp_path / '.collections/ansible_collections/xuanwu/cluster').mkdir(parents=True)
    (tmp_path / '.collections/ansible_collections/xuanwu/cluster/galaxy.yml').write_text('---\n')
    for name in ('a', 'b', 'c'):
        (tmp_path / 'molecule' / name).mkdir()
        (tmp_path / 'molecule' / name / 'molecule.yml').write_text('---\n')
    _script(str(tmp_path / '.venv/bin/molecule'), FAKE_MOLECULE)
    _script(str(tmp_path / '.venv/bin/python'), FAKE_PYTHON)
    _script(str(tmp_path / '.venv/bin/ansible-playbook'), TRUE)
    _script(str(tmp_path / 'tools/podman'), TRUE)
    return tmp_path


def _env(tree, jobs, locks=None):
    return dict(os.environ, MOLECULE_JOBS=str(jobs), MARKS=str(tree / 'marks'), TMPDIR=str(tree),
                XUANWU_MOLECULE_LOCK_DIR=str(locks or tree / 'locks'),
                PATH=str(tree / 'tools') + os.pathsep + os.environ.get('PATH', ''))


def _run(tree, jobs):
    env = _env(tree, jobs)
    env.pop('VENV', None)
    return subprocess.run(['bash', str(tree / 'scripts' / 'molecule.sh')], cwd=str(tree), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120, check=False)


def test_two_at_once_own_logs_summary_and_exit_status(tree):
    result = _run(tree, 2)
    marks = tree / 'marks'
    assert (marks / 'overlap').exists(), result.stdout                 # a and b ran side by side
    assert (marks / 'c.after_one_ended').exists(), result.stdout       # c waited for a free slot
    assert result.returncode == 1, result.stdout
    assert result.stdout.rstrip().splitlines()[-1] == 'molecule: 2 passed, 1 failed (b)'
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith('  ') and line.split()[0] in 'abc']
    assert [(r[0], r[1]) for r in rows] == [('a', 'passed'), ('b', 'FAILED'), ('c', 'passed')]
    assert '(exit 3, log .cache/molecule-logs/b.log)' in result.stdout
    assert 'the last 80 lines of .cache/molecule-logs/b.log' in result.stdout
    for name in 'abc':
        log = (tree / '.cache' / 'molecule-logs' / ('%s.log' % name)).read_text()
        assert log.strip().splitlines() == ['scenario %s output' % name]   # its own output only


def test_one_at_a_time(tree):
    result = _run(tree, 1)
    marks = tree / 'marks'
    assert not (marks / 'overlap').exists(), result.stdout
    assert (marks / 'c.after_one_ended').exists(), result.stdout
    assert result.returncode == 1
    assert result.stdout.rstrip().splitlines()[-1] == 'molecule: 2 passed, 1 failed (b)'
    assert 'scenario a output' in result.stdout                        # alone: streamed to the terminal


@pytest.mark.parametrize('jobs', ['0', 'two', '-1'])
def test_bad_jobs(tree, jobs):
    result = _run(tree, jobs)
    assert result.returncode == 2
    assert "MOLECULE_JOBS must be a positive number, got '%s'" % jobs in result.stdout


def test_the_longest_scenarios_start_first(tree):
    """With no scenario named: cluster, firewall, gpu_packages (the longest, measured) first, the others after in
    name order, so a long scenario never starts last and runs alone."""
    for name in ('zz_firewall_like', 'firewall', 'cluster', 'chrony'):
        (tree / 'molecule' / name).mkdir(exist_ok=True)
        (tree / 'molecule' / name / 'molecule.yml').write_text('---\n')
    result = _run(tree, 2)
    line = [text for text in result.stdout.splitlines() if 'scenarios:' in text][0]
    assert line.split('scenarios: ', 1)[1].split() == ['cluster', 'firewall', 'a', 'b', 'c', 'chrony', 'zz_firewall_like'], line


def test_a_scenario_running_from_another_checkout_is_waited_for(tree, tmp_path_factory):
    """The lock is the machine's, not the checkout's: container names are global to the machine."""
    import fcntl
    import time
    locks = tmp_path_factory.mktemp('machine-locks')
    os.chmod(str(locks), 0o700)
    with open(str(locks / 'c.lock'), 'w') as held:     # another checkout runs scenario c
        fcntl.flock(held, fcntl.LOCK_EX)
        env = _env(tree, 1, locks)
        proc = subprocess.Popen(['bash', str(tree / 'scripts' / 'molecule.sh'), 'c'], cwd=str(tree), env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        first = proc.stdout.readline()
        deadline = time.monotonic() + 30
        while 'in progress' not in first and first and time.monotonic() < deadline:
            first = proc.stdout.readline()
        assert 'another run of c is in progress on this machine' in first, first
        assert not (tree / 'marks' / 'c.started').exists()
    out = proc.communicate(timeout=60)[0]              # released: it runs now
    assert proc.returncode == 0 and (tree / 'marks' / 'c.ended').exists(), out


def test_a_lock_folder_that_is_a_link_is_refused(tree, tmp_path_factory):
    target = tmp_path_factory.mktemp('elsewhere')
    link = tree / 'locks-link'
    link.symlink_to(target)
    result = subprocess.run(['bash', str(tree / 'scripts' / 'molecule.sh'), 'c'], cwd=str(tree),
                            env=_env(tree, 1, link), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True, timeout=60, check=False)
    assert result.returncode == 2 and 'not a link' in result.stdout, result.stdout
    assert not (tree / 'marks' / 'c.started').exists()

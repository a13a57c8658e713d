"""bench/isolation_rounds.py reads the profile_tasks callback's output: each task's start, each round's wall time and how
long the run took before round 1 started (the controller's work ahead of the first pair)."""
import importlib
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'bench'))
bench = importlib.import_module('isolation_rounds')

OUT = """
PLAY [Preflight] ***************************************************************

TASK [Check the Ansible version] ***********************************************
Saturday 05 December 2026  13:44:10 +0000 (0:00:00.031)       0:00:00.031 *****
ok: [localhost]

TASK [Plan round 1] ************************************************************
Saturday 05 December 2026  13:44:40 +0000 (0:00:30.000)       0:00:30.031 *****

TASK [Run round 1] *************************************************************
Saturday 05 December 2026  13:44:52 +0000 (0:00:12.500)       0:00:42.531 *****

TASK [xuanwu.cluster.collectives_multinode : Launch] ***************************
Saturday 05 December 2026  13:44:53 +0000 (0:00:01.000)       0:00:43.531 *****

TASK [Run round 2] *************************************************************
Saturday 05 December 2026  13:46:27 +0000 (0:01:34.800)       0:02:18.331 *****

TASK [Write the report] ********************************************************
Saturday 05 December 2026  13:46:33 +0000 (0:00:06.230)       0:02:24.561 *****
"""


def test_task_starts_and_round_walls():
    starts = bench.task_starts(OUT)
    assert [name for name, _at in starts] == ['Check the Ansible version', 'Plan round 1', 'Run round 1',
                                              'xuanwu.cluster.collectives_multinode : Launch', 'Run round 2',
                                              'Write the report']
    walls = bench.round_walls(starts)
    # a round runs from its include to the next task of the play (the role's own tasks are inside the round)
    assert round(walls[1], 3) == round(138.331 - 42.531, 3)
    assert round(walls[2], 3) == round(144.561 - 138.331, 3)


def test_the_time_before_round_1():
    assert round(bench.before_round1(bench.task_starts(OUT)), 3) == 42.531
    assert bench.before_round1(bench.task_starts(OUT.replace('Run round 1', 'Something else'))) is None
    assert bench.before_round1([]) is None

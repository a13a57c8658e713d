"""What the replay tests of real validate.yml runs share (tests/unit/test_h200x1_real_runs.py,
tests/unit/test_h100x1_capture.py): a run folder's files as bench/gpu-host-validate.sh kept them (run<N>/), and a
workload's GPU samples (dmon and the clock event reasons) in the shape workload_run records them."""
import os

from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_clock_events import QUERY_FIELDS

EVENTS = ('nvidia-smi --query-gpu=index,clocks_event_reasons.active,clocks.sm,power.draw,power.limit,temperature.gpu '
          '--format=csv,noheader,nounits -lms 1000')


def read(runs, run, name):
    """The text of ``name`` in the folder ``runs``/run<run>."""
    with open(os.path.join(runs, 'run%d' % run, name)) as handle:
        return handle.read()


def dmon(runs, run, component):
    """The dmon entry of one workload of a run, from its dmon_<component>.txt and clock-events_<component>.csv."""
    return {'command': 'nvidia-smi dmon -s pucvmet -d 1', 'interval_s': 1,
            'stdout': read(runs, run, 'dmon_%s.txt' % component),
            'clock_events': {'command': EVENTS, 'interval_s': 1, 'exit_code': -15, 'fields': list(QUERY_FIELDS),
                             'stdout': read(runs, run, 'clock-events_%s.csv' % component)}}

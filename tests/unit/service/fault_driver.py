"""A job service stand-in for the crash-and-fault matrix (test_fault_matrix.py): one process with the real executor
and store on a test's data dir, armed by XUANWU_FAILPOINT.

    fault_driver.py TMP job SPEC_JSON            submit a job, wait until it is final
    fault_driver.py TMP cancel SPEC_JSON         submit a job, cancel it once its attempt runs, wait
    fault_driver.py TMP batch BATCH_JSON         submit a batch, wait until it is final
    fault_driver.py TMP serve                    a restarted service: take over, run everything left, then exit

Prints JOB=<id> / BATCH=<id> as soon as they exist; exit 3 when what it waited for did not end in 60 s."""
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from real_jobs import config  # noqa: E402
from xuanwu import FINAL_STATES  # noqa: E402
from xuanwu.runner import Executor  # noqa: E402
from xuanwu.spec import parse_batch, parse_job  # noqa: E402
from xuanwu.store import Store  # noqa: E402


def open_work(store) -> list:
    jobs = [j for j in store.list_jobs(limit=100000) if j['status'] not in FINAL_STATES]
    jobs += store.final_with_open_attempt()
    return jobs + store.open_batches()


def main(argv) -> int:
    tmp, mode = Path(argv[1]), argv[2]
    cfg = config(tmp)
    store = Store(cfg.data_dir / 'jobs.db')
    executor = Executor(cfg, store, 2, serve_all=True)
    deadline = time.monotonic() + 60
    try:
        if mode == 'serve':
            executor.recover()
            while open_work(store) and time.monotonic() < deadline:
                time.sleep(0.1)
            return 0 if not open_work(store) else 3
        if mode == 'batch':
            batch_id = executor.submit_batch(parse_batch(json.loads(argv[3]), cfg))
            print('BATCH=%s' % batch_id, flush=True)
            while store.get_batch(batch_id)['status'] not in FINAL_STATES and time.monotonic() < deadline:
                time.sleep(0.1)
            return 0 if store.get_batch(batch_id)['status'] in FINAL_STATES else 3
        try:
            job_id = executor.submit(parse_job(json.loads(argv[3]), cfg))
        except OSError as err:
            print('REFUSED=%s' % err, flush=True)
            return 4
        print('JOB=%s' % job_id, flush=True)
        if mode == 'cancel':
            while store.get_job(job_id, with_attempts=False)['pid'] is None and time.monotonic() < deadline:
                time.sleep(0.05)
            executor.cancel(job_id, reason='cancelled by the test')
        job = executor.wait(job_id, timeout=max(1.0, deadline - time.monotonic()))
        return 0 if executor.settled(job) else 3
    finally:
        executor.shutdown()


if __name__ == '__main__':
    sys.exit(main(sys.argv))

"""xuanwu.store: SQLite store used from many threads at once; final states are final."""
import threading

import pytest

from xuanwu.store import Store, StoreError

THREADS, PER_THREAD = 8, 25


def _hammer(store, ids, errors):
    try:
        for i in range(PER_THREAD):
            job_id = store.create_job({'i': i}, 'command', 'job-%d' % i)
            store.update_job(job_id, status='running', pid=i, info={'mode': 'local'})
            store.add_attempt(job_id, 1, artifact_dir='/a/%s' % job_id)
            store.finish_attempt(job_id, 1, 0, 'succeeded')
            assert store.finish_job(job_id, 'succeeded', rc=0)
            ids.append(job_id)
    except Exception as exc:    # reported by the test below, with the thread's exception
        errors.append(exc)


def test_threads_write_at_once_without_losing_anything(tmp_path):
    store = Store(tmp_path / 'jobs.db')
    ids, errors = [], []
    threads = [threading.Thread(target=_hammer, args=(store, ids, errors)) for thread_no in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(ids)) == THREADS * PER_THREAD
    assert store.count_jobs('succeeded') == THREADS * PER_THREAD and store.count_jobs() == THREADS * PER_THREAD
    job = store.get_job(ids[0])
    assert job['info'] == {'mode': 'local'} and [a['status'] for a in job['attempt_list']] == ['succeeded']
    assert all(i.startswith('j-') and len(i) == 14 for i in ids)


def test_only_one_of_many_threads_moves_a_job_to_a_final_state(tmp_path):
    store = Store(tmp_path / 'jobs.db')
    job_id = store.create_job({}, 'command', 'race')
    wins = []
    barrier = threading.Barrier(THREADS)

    def finish(status):
        barrier.wait()
        wins.append((status, store.finish_job(job_id, status, reason=status)))
    threads = [threading.Thread(target=finish, args=(('cancelled', 'failed')[i % 2],)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [status for status, won in wins if won]
    assert len(winners) == 1
    job = store.get_job(job_id)
    assert job['status'] == winners[0] and job['reason'] == winners[0]


def test_list_filters_and_pages(tmp_path):
    store = Store(tmp_path / 'jobs.db')
    ids = [store.create_job({}, 'playbook', 'p%d' % i) for i in range(5)]
    store.update_job(ids[0], status='running')
    assert [j['id'] for j in store.list_jobs(status='running')] == [ids[0]]
    assert len(store.list_jobs(status='queued', limit=2)) == 2
    assert len(store.list_jobs(status='queued', limit=10, offset=3)) == 1
    with pytest.raises(StoreError):
        store.list_jobs(status='lost')
    with pytest.raises(StoreError):
        store.update_job(ids[0], nonsense=1)


def test_mark_orphans_fails_running_jobs_with_the_reason(tmp_path):
    store = Store(tmp_path / 'jobs.db')
    job_id = store.create_job({}, 'playbook', 'p')
    store.update_job(job_id, status='running', pid=4242, artifact_dir='/x')
    store.add_attempt(job_id, 1)
    assert store.mark_orphans('gone (pid {pid}); artifacts {artifact_dir}') == [job_id]
    job = store.get_job(job_id)
    assert (job['status'], job['reason']) == ('failed', 'gone (pid 4242); artifacts /x')
    assert job['attempt_list'][0]['status'] == 'failed'


def test_batches(tmp_path):
    store = Store(tmp_path / 'jobs.db')
    batch_id = store.create_batch({'tasks': []}, 'b', output_dir='/o')
    store.create_job({}, 'command', 't', batch_id=batch_id, task_id='task-1')
    store.update_batch(batch_id, 'succeeded', {'counts': {}})
    batch = store.get_batch(batch_id)
    assert batch['status'] == 'succeeded' and batch['summary'] == {'counts': {}} and batch['finished']
    assert [j['task_id'] for j in batch['jobs']] == ['task-1']
    assert store.get_batch('b-000000000000') is None


def test_a_queued_job_is_claimed_once(tmp_path):
    """Two executors on one store (a service and a CLI, or a restarted service that re-queues) never both run
    a job; a cancelled job is never claimed, nor put back in the queue."""
    store = Store(tmp_path / 'jobs.db')
    job_id = store.create_job({}, 'command', 'c')
    wins = []
    barrier = threading.Barrier(THREADS)

    def claim():
        barrier.wait()
        wins.append(store.claim_job(job_id, started=1.0))
    threads = [threading.Thread(target=claim) for thread_no in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(wins) == [False] * (THREADS - 1) + [True]
    assert store.requeue_job(job_id) and store.get_job(job_id)['status'] == 'queued'
    assert store.finish_job(job_id, 'cancelled')
    assert not store.claim_job(job_id) and not store.requeue_job(job_id)
    assert store.get_job(job_id)['status'] == 'cancelled'

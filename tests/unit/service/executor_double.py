"""A stand-in for xuanwu.runner.Executor in the service's unit tests: jobs go queued -> running -> a
final state chosen by the job's name (``ok-*`` succeeded, ``fail-*`` failed, ``hang-*`` runs until
cancelled), with the store and the events as the real executor keeps them."""
import threading
import time


class ExecutorDouble:
    def __init__(self, store, run_sec=0.2):
        self.store = store
        self.run_sec = run_sec
        self.callbacks = []
        self.cancelled = {}
        self.submitted = []

    def on_event(self, callback):
        self.callbacks.append(callback)

    def _emit(self, job_id, event):
        for callback in self.callbacks:
            callback(job_id, event)

    def submit(self, spec, batch_id=None, task_id=None, max_attempts=1):
        job_id = self.store.create_job(spec.to_dict(), spec.kind, spec.name, batch_id, task_id, max_attempts)
        self.cancelled[job_id] = threading.Event()
        self.submitted.append(job_id)
        self._emit(job_id, {'type': 'state', 'job_id': job_id, 'status': 'queued'})
        threading.Thread(target=self._run, args=(job_id, spec), daemon=True).start()
        return job_id

    def _run(self, job_id, spec):
        self.store.update_job(job_id, status='running', started=time.time(), attempts=1)
        self.store.add_attempt(job_id, 1)
        self._emit(job_id, {'type': 'state', 'job_id': job_id, 'status': 'running'})
        self._emit(job_id, {'type': 'state', 'job_id': job_id, 'status': 'attempt_started', 'attempt': 1})
        self._emit(job_id, {'type': 'ansible', 'job_id': job_id, 'event': 'playbook_on_start', 'counter': 1})
        if spec.name.startswith('hang-'):
            self.cancelled[job_id].wait(60)
            status = 'cancelled'
        else:
            time.sleep(self.run_sec)
            status = 'failed' if spec.name.startswith('fail-') else 'succeeded'
        self.store.finish_attempt(job_id, 1, 0 if status == 'succeeded' else 2, status)
        self.store.finish_job(job_id, status, rc=0 if status == 'succeeded' else 2)
        self._emit(job_id, {'type': 'state', 'job_id': job_id, 'status': status})

    def submit_batch(self, batch_spec):
        """The batch and its tasks, stored as the real executor stores them; nothing runs them here."""
        jobs = [{'kind': t.job.kind, 'name': t.job.name, 'spec': t.job.to_dict(), 'task_id': t.task_id}
                for t in batch_spec.tasks]
        return self.store.create_batch(batch_spec.to_dict(), batch_spec.name, output_dir=batch_spec.output_dir,
                                       max_concurrency=batch_spec.max_concurrency, jobs=jobs)

    def cancel_batch(self, batch_id):
        return self.store.mark_batch_cancelled(batch_id)

    def cancel(self, job_id):
        event = self.cancelled.get(job_id)
        if event is None:
            return False
        event.set()
        return True

    def recover(self):
        return {}

    def shutdown(self, wait=True):
        pass

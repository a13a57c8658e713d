"""Runs jobs: playbooks through ansible-runner, commands through Slurm/SSH/local, each attempt in its own
process session so that a timeout or a cancel kills the whole tree."""
from __future__ import annotations

from typing import Callable

from .config import Config
from .spec import JobSpec
from .store import Store


class Executor:
    def __init__(self, config: Config, store: Store, max_concurrency: int | None = None):
        self.config = config
        self.store = store
        self.max_concurrency = max_concurrency or config.max_concurrency
        raise NotImplementedError

    def on_event(self, callback: Callable[[str, dict], None]) -> None:
        """``callback(job_id, event)`` for every ansible-runner event and every state change."""
        raise NotImplementedError

    def submit(self, spec: JobSpec, batch_id=None, task_id=None, max_attempts: int = 1) -> str:
        raise NotImplementedError

    def run(self, spec: JobSpec) -> dict:
        raise NotImplementedError

    def cancel(self, job_id: str) -> bool:
        raise NotImplementedError

    def wait(self, job_id: str, timeout: float | None = None) -> dict:
        raise NotImplementedError

    def recover(self) -> dict:
        raise NotImplementedError

    def shutdown(self, wait: bool = True) -> None:
        raise NotImplementedError

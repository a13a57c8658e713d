"""xuanwu: jobs and batches of xuanwu.cluster's playbooks and commands on the controller.

Runs playbooks through ansible-runner and commands through Slurm or SSH, keeps every job in a
SQLite store, and offers a command line (``xuanwu``) and an HTTP service. See docs/jobs.md and
docs/service.md.
"""

__version__ = '0.1.0'

FINAL_STATES = ('succeeded', 'failed', 'cancelled')
STATES = ('queued', 'running') + FINAL_STATES

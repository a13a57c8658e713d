# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Python's cyclic garbage collector in Ansible's worker processes.

Ansible forks a worker from its main process for each task of each host. The worker inherits the main process's heap:
the loaded plugins, the inventory, every host's variables. The collector does not know that those objects are
inherited: each full collection in the worker walks all of them, and writing their collector headers copies their
memory pages (copy-on-write). A per-host action that builds tens of thousands of objects, such as parsing a node's
answer (the XML of ``nvidia-smi -q -x`` alone is about 100 KB), sets off such collections: parsing that XML took 26 ms
in a worker of a 100-host validate.yml against 1.5 ms in a fresh process (docs/architecture.md, "Cost per host").

``freeze_inherited()`` moves every object the worker holds at that moment to the collector's permanent generation
(``gc.freeze()``, made for forking servers): the collector skips them from then on and still collects what the task
creates afterwards. The worker ends with its task, so nothing frozen outlives it. Anywhere else (a test, any other
process that runs an action plugin) nothing is done.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gc
import multiprocessing

from ansible.executor.process.worker import WorkerProcess


def freeze_inherited():
    """Freeze what this process holds now when it is an Ansible worker process; returns whether it did."""
    if not isinstance(multiprocessing.current_process(), WorkerProcess):
        return False
    gc.freeze()
    return True

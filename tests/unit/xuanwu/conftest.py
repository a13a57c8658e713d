"""Fixtures of the xuanwu package's unit tests: a configuration whose inventory root is a temporary folder."""
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture
def config(tmp_path):
    from xuanwu.config import Config
    inventories = tmp_path / 'inventories'
    (inventories / 'lab').mkdir(parents=True)
    (inventories / 'lab' / 'hosts.yml').write_text('all: {hosts: {n1: {}}}\n')
    return Config(project_root=str(tmp_path), data_dir=str(tmp_path / 'home'), inventory_roots=[str(inventories)],
                  playbooks={'tiny': os.path.join(ROOT, 'tests/integration/playbooks/jobs/succeed.yml')})

"""Make the collection importable as ``ansible_collections.xuanwu.cluster`` from any checkout."""
import hashlib
import os
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _collection_root():
    parts = ROOT.split(os.sep)
    if len(parts) >= 3 and parts[-3:-1] == ['ansible_collections', 'xuanwu'] and parts[-1] == 'cluster':
        return os.sep.join(parts[:-3])
    # One folder per checkout: two checkouts tested at once by one user must not import each other's code.
    tag = hashlib.sha256(ROOT.encode('utf-8')).hexdigest()[:12]
    base = os.path.join(tempfile.gettempdir(), 'xuanwu-cluster-pytest-%d-%s' % (os.getuid(), tag))
    ns = os.path.join(base, 'ansible_collections', 'xuanwu')
    os.makedirs(ns, exist_ok=True)
    link = os.path.join(ns, 'cluster')
    if os.path.islink(link) and os.readlink(link) != ROOT:
        os.unlink(link)
    if not os.path.lexists(link):
        try:
            os.symlink(ROOT, link)
        except FileExistsError:     # another pytest of this checkout (the other controller) made it
            pass
    return base


sys.path.insert(0, _collection_root())
# The controller-side package (src/xuanwu), importable without installing it.
sys.path.insert(0, os.path.join(ROOT, 'src'))
FIXTURES = os.path.join(ROOT, 'tests', 'fixtures')

# Hypothesis: "quick" for make unit and CI; "fuzz" (make fuzz) runs every fuzz test, so every
# parser, for at least 10,000 examples. Select with XUANWU_HYPOTHESIS_PROFILE.
FUZZ_EXAMPLES = {'quick': 150, 'fuzz': 10000}
for _name, _examples in FUZZ_EXAMPLES.items():
    settings.register_profile(_name, max_examples=_examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get('XUANWU_HYPOTHESIS_PROFILE', 'quick'))


def pytest_configure(config):
    config.addinivalue_line('markers', 'both_controllers: the test proves something that differs between ansible-core '
                                       'versions (templating, argument validation, strategies, exit codes, check mode): it '
                                       'runs with every controller venv; every other test runs with the newest (.venv) only')
    config.addinivalue_line('markers', 'one_controller: the test concerns the job runner or the service, not the '
                                       'ansible-core version (the default; kept as documentation)')


def _newest_controller():
    try:
        from ansible.release import __version__ as version
    except ImportError:
        return True      # no ansible-core in this venv: nothing controller-specific to choose
    return tuple(int(p) for p in version.split('.')[:2]) >= (2, 19)


def controller_items(items, newest):
    """(kept, dropped): with the newest controller every test; with an older one only those marked
    both_controllers, so that the older controller repeats only what can differ between versions."""
    if newest:
        return list(items), []
    kept, dropped = [], []
    for item in items:
        (kept if 'both_controllers' in item.keywords else dropped).append(item)
    return kept, dropped


@pytest.hookimpl(tryfirst=True)   # before the shards of tests/integration/conftest.py deal the items
def pytest_collection_modifyitems(config, items):
    kept, dropped = controller_items(items, _newest_controller())
    if dropped:
        # deselected, not skipped: the shards of tests/integration/conftest.py deal only what runs here
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept

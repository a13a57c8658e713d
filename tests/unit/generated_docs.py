"""The generated pages of docs/ as ``make docs`` writes them: the tests compare each committed page with what
scripts/docs.py generates, through the very functions ``make docs`` calls."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location('xuanwu_docs', os.path.join(ROOT, 'scripts', 'docs.py'))
docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(docs)


def assert_current(page):
    """``page`` (``docs/checks.md``...) is what ``make docs`` writes."""
    committed, generated = docs.generate(page)
    assert committed == generated, '%s is stale: run make docs' % page

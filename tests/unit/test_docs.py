"""make docs (scripts/docs.py): one target writes every generated page of docs/, through the functions the tests
that compare each page use (tests/unit/generated_docs.py)."""
import glob
import os
import re

from ansible_collections.xuanwu.cluster.tests.unit.generated_docs import ROOT, docs

# What a generated page says about itself.
MARKERS = ('<!-- Generated from ', 'This page is generated')


def test_every_generated_page_is_written_by_make_docs():
    generated = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'docs', '*.md'))):
        with open(path) as handle:
            text = handle.read()
            if any(marker in text for marker in MARKERS):
                generated.append(os.path.relpath(path, ROOT))
    assert sorted(page for page, _function in docs.PAGES if page.startswith('docs/')) == generated
    # and outside docs/: the parser choices of the filter's documentation (the parsers it finds)
    assert [page for page, _function in docs.PAGES if not page.startswith('docs/')] == ['plugins/filter/parse.yml']


def test_the_makefile_target():
    with open(os.path.join(ROOT, 'Makefile')) as handle:
        makefile = handle.read()
    assert re.search(r'^#   make docs ', makefile, re.M), 'make docs is not in the header of the Makefile (make help)'
    assert re.search(r'^docs: .*\n\t\$\(VENV\)/bin/python scripts/docs\.py\n', makefile, re.M)
    assert re.search(r'^\.PHONY: .*\bdocs\b', makefile, re.M)
    with open(os.path.join(ROOT, 'docs', 'development.md')) as handle:
        assert '`make docs`' in handle.read()


def test_a_stale_page_is_named_and_rewritten(tmp_path, capsys):
    for page, _function in docs.PAGES:
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / page).write_text(docs.generate(page)[1])
    assert docs.main(['--check'], root=str(tmp_path)) == 0
    (tmp_path / 'docs' / 'facts.md').write_text('# edited by hand\n')
    capsys.readouterr()
    assert docs.main(['--check'], root=str(tmp_path)) == 1
    assert capsys.readouterr().out == 'docs/facts.md: stale\n'
    assert (tmp_path / 'docs' / 'facts.md').read_text() == '# edited by hand\n'
    assert docs.main([], root=str(tmp_path)) == 0
    assert capsys.readouterr().out == 'docs/facts.md: regenerated\n'
    assert docs.main(['--check'], root=str(tmp_path)) == 0
    assert (tmp_path / 'docs' / 'facts.md').read_text() == docs.generate('docs/facts.md')[1]

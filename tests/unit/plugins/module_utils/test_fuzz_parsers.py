"""Every line of the fuzz table (fuzzing.FUZZ): the parser's corpus parses; whatever it is fed, only ParseError
escapes, and what it returns has its type, finite numbers and passes the line's check. The tests of one area
(test_fuzz_<area>.py) add what only that area needs. Examples per test: the loaded hypothesis profile
(tests/conftest.py: 150 for make unit, 10,000 for make fuzz), for each parser."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.xuanwu.cluster.plugins.filter import parse as parse_filter
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils.fuzzing import (
    FUZZ, accept, judge, mutated, numbers_injected,
)

SETTINGS = settings()


def test_every_parser_has_a_line():
    """Each parse_<name> of plugins/module_utils/_parse_*.py (what the filter xuanwu.cluster.parse finds) is fuzzed."""
    fuzzed = set(entry.parser for entry in FUZZ)
    missing = sorted(name for name, parser in parse_filter.PARSERS.items() if parser not in fuzzed)
    assert not missing, 'add a line to the fuzz table (tests/unit/plugins/module_utils/fuzzing.py) for: %s' % missing
    assert len(fuzzed) == len(FUZZ), 'a parser has two lines'


@pytest.mark.parametrize('entry', FUZZ, ids=repr)
def test_corpus_parses(entry):
    """The corpus is there (every glob of the line finds a file) and every text of it parses."""
    assert entry.texts and not entry.unmatched, '%s: no corpus, or no file for %s' % (entry.name, entry.unmatched)
    for text in entry.texts:
        judge(entry, entry.parser(text), text)


@pytest.mark.parametrize('entry', FUZZ, ids=repr)
@SETTINGS
@given(data=st.data())
def test_only_parse_error_escapes(entry, data):
    # @given on the test itself (not an inner function) so that --hypothesis-show-statistics
    # reports the examples run for each parser.
    accept(entry, data.draw(mutated(entry)))


@pytest.mark.parametrize('entry', FUZZ, ids=repr)
@SETTINGS
@given(data=st.data())
def test_huge_and_non_finite_numbers(entry, data):
    """Issue 8 item 7: numbers of a real capture replaced by 4,300+ digit runs, values past 2**64 or 65535, nan and
    inf: only ParseError escapes, every number in the result is finite and bounded."""
    accept(entry, data.draw(numbers_injected(entry.texts)))


def _outcome(parser, value):
    try:
        return 'result', parser(value)
    except ParseError:
        return 'ParseError', None


@pytest.mark.parametrize('entry', [entry for entry in FUZZ if entry.non_text], ids=repr)
@pytest.mark.parametrize('value', [None, b'CA', 42, ['x'], {'a': 1}, 2.5])
def test_what_is_not_text(entry, value):
    """Not text: a ParseError; bytes, where the parser decodes them, read as their UTF-8; log text (lenient) reads
    None as no text."""
    if isinstance(value, bytes) and entry.non_text in ('decodes', 'lenient'):
        assert _outcome(entry.parser, value) == _outcome(entry.parser, value.decode('utf-8', 'replace'))
    elif value is None and entry.non_text == 'lenient':
        assert entry.parser(value) == entry.returns()
    else:
        with pytest.raises(ParseError):
            entry.parser(value)


@pytest.mark.parametrize('entry', [entry for entry in FUZZ if entry.non_text == 'lenient'], ids=repr)
@SETTINGS
@given(data=st.binary(max_size=300))
def test_log_bytes_read_as_text(entry, data):
    assert entry.parser(data) == entry.parser(data.decode('utf-8', 'replace'))

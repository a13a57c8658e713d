"""Every line of the fuzz table (fuzzing.FUZZ): the parser's corpus parses; whatever it is fed, only ParseError
escapes, and what it returns has its type, finite numbers and passes the line's check. The tests of one area
(test_fuzz_<area>.py) add what only that area needs. Examples per test: the loaded hypothesis profile
(tests/conftest.py: 150 for make unit, 10,000 for make fuzz), for each parser."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.xuanwu.cluster.plugins.filter import parse as parse_filter
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils import case_files
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils.fuzzing import (
    FUZZ, LINES, accept, judge, mutated, numbers_injected,
)

SETTINGS = settings()


def test_every_parser_is_fuzzed_with_a_corpus():
    """Each parse_<name> of plugins/module_utils/_parse_*.py (what the filter xuanwu.cluster.parse finds) is fuzzed,
    once, from a corpus: the texts of its parser cases (cases/<area>.yaml) and of its line of fuzzing.LINES, if any."""
    fuzzed = set(entry.parser for entry in FUZZ)
    assert set(parse_filter.PARSERS.values()) <= fuzzed and len(fuzzed) == len(FUZZ)
    bare = sorted(entry.name for entry in FUZZ if not entry.texts)
    assert not bare, ('no corpus for %s: add a case of its real output (input: <file under tests/fixtures/>) to '
                      'tests/unit/plugins/module_utils/cases/<area>.yaml' % bare)


def test_a_line_only_says_what_the_cases_do_not():
    """A line of fuzzing.LINES that neither adds files or samples nor says more than the cases (type, check, values that
    are not text) is one edit too many: the cases alone register a parser."""
    seeds = case_files.fuzz_seeds()
    idle = [line.name for line in LINES if not line.unmatched and len(line.texts) == len(seeds.get(line.parser, ()))
            and line.check is None and line.non_text == 'raises' and line.declared in (None, line.inferred)]
    assert not idle, 'lines that add nothing to the cases: %s' % idle


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

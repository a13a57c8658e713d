"""Helpers shared by the fuzz tests (test_fuzz_*.py)."""
import math
import re

from hypothesis import strategies as st

# Integers in a parser's result must fit in this (counters, sizes, ids); see _errors.MAX_INT.
INT_BOUND = 2 ** 64

# What replaces a number of a real capture: digit runs past Python's 4,300-digit int limit (3.11+)
# and past 2**64, values outside a port's range, and the float spellings that are not finite.
HUGE_DIGITS = st.integers(min_value=4290, max_value=5000).map(lambda n: '9' * n)
LONG_DIGITS = st.integers(min_value=20, max_value=60).map(lambda n: '1' + '0' * (n - 1))
NUMBER_TOKENS = st.one_of(
    HUGE_DIGITS, LONG_DIGITS,
    st.sampled_from(['nan', 'NaN', '-nan', 'inf', '-inf', 'Infinity', '1e999', '-1e999', '1.0e+309', '99999', '65536',
                     '-1', '18446744073709551616', '0x' + 'f' * 40, '1' + '0' * 4400 + '.5']))
_NUMBER = re.compile(r'\d+(?:\.\d+)?')


@st.composite
def numbers_injected(draw, texts):
    """A text of ``texts`` with 1 to 4 of its numbers replaced by huge digit runs or nan/inf tokens."""
    text = draw(st.sampled_from(texts))
    spans = [m.span() for m in _NUMBER.finditer(text)]
    if not spans:
        return text + draw(NUMBER_TOKENS)
    chosen = sorted(set(draw(st.lists(st.integers(0, len(spans) - 1), min_size=1, max_size=4))), reverse=True)
    for index in chosen:
        start, end = spans[index]
        text = text[:start] + draw(NUMBER_TOKENS) + text[end:]
    return text


def assert_finite(value, where='result'):
    """Every float in a parser's result (dicts and lists, any depth) is finite (no inf, no nan) and
    every integer is within +-2**64."""
    if isinstance(value, float):
        assert math.isfinite(value), '%s is %r' % (where, value)
    elif isinstance(value, int) and not isinstance(value, bool):
        assert -INT_BOUND <= value <= INT_BOUND, '%s is an integer of %d digits' % (where, len(str(abs(value))))
    elif isinstance(value, dict):
        for key, item in value.items():
            assert_finite(item, '%s.%s' % (where, key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            assert_finite(item, '%s[%d]' % (where, index))


def edit_lines(text, data, noise, tokens):
    """``text`` with 1 to 4 line edits drawn from ``data``: a line dropped, duplicated, swapped with another,
    a line of ``noise`` inserted, or one token of a line replaced by one of ``tokens``."""
    lines = text.split('\n')
    for dummy in range(data.draw(st.integers(min_value=1, max_value=4))):
        if not lines:
            break
        op = data.draw(st.sampled_from(['drop', 'dup', 'swap', 'noise', 'tokens']))
        i = data.draw(st.integers(min_value=0, max_value=len(lines) - 1))
        if op == 'drop':
            del lines[i]
        elif op == 'dup':
            lines.insert(i, lines[i])
        elif op == 'swap':
            j = data.draw(st.integers(min_value=0, max_value=len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 'noise':
            lines.insert(i, data.draw(noise))
        else:
            words = lines[i].split()
            if words:
                k = data.draw(st.integers(min_value=0, max_value=len(words) - 1))
                words[k] = data.draw(st.sampled_from(tokens))
                lines[i] = '  '.join(words)
    return '\n'.join(lines)


def edit_bytes(text, data):
    """``text`` with 1 to 8 characters replaced (or removed) by whitespace, control and punctuation characters."""
    chars = list(text)
    for dummy in range(data.draw(st.integers(min_value=1, max_value=8))):
        if not chars:
            break
        i = data.draw(st.integers(min_value=0, max_value=len(chars) - 1))
        chars[i] = data.draw(st.sampled_from(['', ' ', '\n', '\r', '\x1b', '#', '-', '.', '9', 'a', '\x00', '\u00e9']))
    return ''.join(chars)


def assert_rejects_non_text(parser, parse_error):
    """``parser`` raises ``parse_error`` (the collection's ParseError) for values that are not text."""
    for value in (None, b'bytes', 42, ['a']):
        try:
            parser(value)
        except parse_error:
            continue
        raise AssertionError('no ParseError for %r' % (value,))

"""The case files, ``cases/<area>.yaml``: what one area's parsers and checks must do, as data. Three kinds of case:

A parser case (test_parsers.py runs it)::

    - id: h200x4 query-gpu            # unique within the file
      parser: _parse_nvidia.parse_query_gpu
      input: hardware/h200x4-nvlink/nvidia-smi_--query-gpu.csv   # under tests/fixtures/, or
      text: "inline text"                                         # the raw output inline
      args: {...}          # keyword arguments of the parser, if it takes any
      expected: {...}      # the whole return value must equal this, or
      subset: {...}        # these keys (recursively, lists by position) must match, and/or
      error: "substring"   # the parser must raise ParseError whose message contains this

Every parser case that parses (no ``error``, no ``args``) is also part of that parser's fuzz corpus
(``fuzz_seeds``): a new parser with a case of its real output is fuzzed without another line anywhere.

A check case (test_checks.py runs it; every check id needs one that finds it and one that does not)::

    - id: MemAvailable under the profile's floor
      check: host.memory_available       # the check id
      base: hgx                          # the baseline facts: hgx, h200x4 or mi300x (test_checks.py)
      set: {host.memory.available_bytes: 1073741824}   # dotted fact paths (list indexes as numbers) and values
      delete: [host.memory.swap_total_bytes]          # dotted fact paths removed
      profile: {host: {memory_available_min_gib: 16}}  # merged into the base's profile
      finds: true                        # true: the check must report; false: it must not
"""
import glob
import importlib
import os

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, 'cases')
FIXTURES = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'fixtures'))
PKG = 'ansible_collections.xuanwu.cluster.plugins.module_utils.'

_LOADED = {}


def load():
    """[(file name without .yaml, case)] of every case file, in file and case order (read once)."""
    if 'all' not in _LOADED:
        out = []
        for path in sorted(glob.glob(os.path.join(CASES, '*.yaml'))):
            with open(path) as handle:
                data = yaml.safe_load(handle) or []
            assert isinstance(data, list), '%s: a list of cases' % path
            for case in data:
                assert isinstance(case, dict) and case.get('id'), '%s: a case without an id: %r' % (path, case)
                kinds = [key for key in ('parser', 'check') if key in case]
                assert len(kinds) == 1, '%s: case %r names a parser or a check (one of them)' % (path, case['id'])
                out.append((os.path.basename(path)[:-5], case))
        _LOADED['all'] = out
    return _LOADED['all']


def parser_cases():
    return [(area, case) for area, case in load() if 'parser' in case]


def check_cases():
    return [(area, case) for area, case in load() if 'check' in case]


def resolve(dotted):
    """The parser a case names, ``_parse_<area>.parse_<name>``."""
    module, func = dotted.rsplit('.', 1)
    return getattr(importlib.import_module(PKG + module), func)


def read(case):
    """The text a parser case feeds its parser."""
    if 'text' in case:
        return case['text']
    with open(os.path.join(FIXTURES, case['input'])) as handle:
        return handle.read()


def fuzz_seeds():
    """{parser: [text, ...]}: the texts of every parser case that parses (no ``error``, no ``args``), in order, each
    once. Fixture files first named by an ``input:`` are read from tests/fixtures/."""
    seeds = {}
    for _area, case in parser_cases():
        if 'error' in case or case.get('args'):
            continue
        text = read(case)
        if not isinstance(text, str):
            continue
        texts = seeds.setdefault(resolve(case['parser']), [])
        if text not in texts:
            texts.append(text)
    return seeds

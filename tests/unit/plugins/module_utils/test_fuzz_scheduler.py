"""Fuzz the scheduler parsers (scontrol, sinfo, kubectl JSON) with truncated, mutated and random text
derived from the fixtures: whatever they are fed, only ``ParseError`` may escape, and what they return
has the documented shape."""
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.xuanwu.cluster.plugins.module_utils import _scheduler as sched
from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ParseError
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils.fuzzing import numbers_injected

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'fixtures', 'scheduler'))
SETTINGS = settings()


def _files(prefix):
    out = []
    for name in sorted(os.listdir(FIXTURES)):
        if name.startswith(prefix):
            with open(os.path.join(FIXTURES, name)) as handle:
                out.append(handle.read())
    return out


SCONTROL = _files('scontrol-') + _files('derived-scontrol-')
JSON_TEXTS = _files('derived-kubectl-')
CORPUS = {
    sched.parse_scontrol_node: SCONTROL,
    sched.parse_sinfo_nodes: _files('derived-sinfo-'),
    sched.parse_kube_node: JSON_TEXTS,
    sched.parse_kube_nodes: JSON_TEXTS,
    sched.parse_kube_pods: JSON_TEXTS,
}
CONDITIONS = (sched.AVAILABLE, sched.DRAINING, sched.DRAINED, sched.DOWN)


def _check(parser, text):
    try:
        result = parser(text)
    except ParseError:
        return
    if parser is sched.parse_scontrol_node:
        assert result['condition'] in CONDITIONS and isinstance(result['reason'], str)
    elif parser is sched.parse_sinfo_nodes:
        assert all(isinstance(r['unavailable'], bool) for r in result)
    elif parser is sched.parse_kube_pods:
        assert isinstance(result, int) and result >= 0
    else:
        for node in result if isinstance(result, list) else [result]:
            assert node['condition'] in CONDITIONS and isinstance(node['reason'], str)


@st.composite
def mutated(draw, texts):
    text = draw(st.sampled_from(texts))
    cut = draw(st.integers(0, len(text)))
    how = draw(st.sampled_from(['truncate', 'insert', 'delete']))
    if how == 'truncate':
        return text[:cut]
    if how == 'insert':
        return text[:cut] + draw(st.text(max_size=40)) + text[cut:]
    return text[:cut] + text[cut + draw(st.integers(1, 40)):]


def _json_values():
    leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10))
    return st.recursive(leaves, lambda children: st.one_of(st.lists(children, max_size=3),
                                                           st.dictionaries(st.text(max_size=8), children, max_size=3)),
                        max_leaves=10)


@st.composite
def json_replaced(draw):
    """A kubectl JSON text with one value somewhere replaced by arbitrary JSON."""
    data = json.loads(draw(st.sampled_from(JSON_TEXTS)))
    node, path = data, []
    while isinstance(node, (dict, list)) and node and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(node) if isinstance(node, dict) else list(range(len(node)))))
        path.append(key)
        node = node[key]
    value = draw(_json_values())
    if not path:
        return json.dumps(value)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(data)


@pytest.mark.parametrize('parser', sorted(CORPUS, key=lambda p: p.__name__), ids=lambda p: p.__name__)
@SETTINGS
@given(data=st.data())
def test_only_parse_error_escapes(parser, data):
    texts = CORPUS[parser]
    text = data.draw(st.one_of(mutated(texts), numbers_injected(texts), st.text(max_size=200)))
    _check(parser, text)


@pytest.mark.parametrize('parser', [sched.parse_kube_node, sched.parse_kube_nodes, sched.parse_kube_pods], ids=lambda p: p.__name__)
@SETTINGS
@given(text=json_replaced())
def test_kubectl_json_of_any_shape(parser, text):
    _check(parser, text)

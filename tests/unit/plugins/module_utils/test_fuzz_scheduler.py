"""Fuzz the kubectl parsers beyond their lines of the fuzz table (fuzzing.FUZZ, run by test_fuzz_parsers.py): a
kubectl JSON text of any of them with one value anywhere (the whole document too) replaced by arbitrary JSON."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.xuanwu.cluster.plugins.module_utils import _parse_scheduler as sched
from ansible_collections.xuanwu.cluster.tests.unit.plugins.module_utils.fuzzing import BY_PARSER, accept, corpus

SETTINGS = settings()
KUBECTL = [sched.parse_kube_node, sched.parse_kube_nodes, sched.parse_kube_pods]
JSON_TEXTS = [text for parser in KUBECTL for text in corpus(parser)]


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


@pytest.mark.parametrize('parser', KUBECTL, ids=lambda p: p.__name__)
@SETTINGS
@given(text=json_replaced())
def test_kubectl_json_of_any_shape(parser, text):
    accept(BY_PARSER[parser], text)

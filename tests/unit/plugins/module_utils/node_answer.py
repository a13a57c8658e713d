"""The facts of a probe that takes the way node_validate's does: the node collects and answers with its raw outputs
(_collect.answer, through JSON as a module's result travels) and the controller parses them (_probe.facts_from_answer)."""
import json

from ansible_collections.xuanwu.cluster.plugins.module_utils import _collect, _probe


def answer(runner, process_patterns=None, **kwargs):
    """The node's answer: what node_probe ``parse: false`` returns as ``outputs``, after a JSON round trip."""
    done = _collect.collect(runner, **kwargs)
    return json.loads(json.dumps(_collect.answer(done, process_patterns)))


def facts(runner, process_patterns=None, **kwargs):
    """The facts the controller builds from ``runner``'s answer; equal to ``_probe.probe(runner, ...)``."""
    records = answer(runner, process_patterns=process_patterns, **kwargs)
    return _probe.facts_from_answer(records, source='replay' if runner.replay else 'live', process_patterns=process_patterns,
                                    **kwargs)

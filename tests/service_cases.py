"""Hostile request bodies for the job service's API (unit tests on an executor double and integration
tests on ``xuanwu serve``): (id, raw body, expected status, text the error message must hold: the field
or the problem). ``GOOD`` is a valid playbook job of the registered playbook ``validate``."""
import json

GOOD = {'name': 'ok-1', 'playbook': 'validate', 'inventory': 'inventories/demo/hosts.yml'}

HOSTILE = [
    # (id, raw body, status, field named in the message)
    ('malformed', b'{"name": "x",', 400, 'malformed JSON'),
    ('not-utf8', b'{"name": "\xff"}', 400, 'UTF-8'),
    ('empty', b'', 400, 'empty body'),
    ('array', b'[1, 2]', 422, 'must be a JSON object'),
    ('nan', b'{"name": "n", "command": "true", "nodes": ["localhost"], "timeout_sec": NaN}', 400, 'NaN'),
    ('huge-int', b'{"name": "n", "command": "true", "nodes": ["localhost"], "timeout_sec": 1' + b'0' * 5000 + b'}',
     400, 'malformed JSON'),
    ('huge-number', b'{"name": "n", "command": "true", "nodes": ["localhost"], "timeout_sec": 1e400}', 422, 'timeout_sec'),
    ('big-timeout', b'{"name": "n", "command": "true", "nodes": ["localhost"], "timeout_sec": 99999999999999999999}',
     422, 'timeout_sec'),
    ('deep', b'{"name": "n", "extra_vars": ' + b'[' * 5000 + b']' * 5000 + b'}', 422, 'nested'),
    ('wrong-type-name', json.dumps({'name': 5, 'command': 'true', 'nodes': ['localhost']}).encode(), 422, 'name'),
    ('wrong-type-nodes', json.dumps({'name': 'n', 'command': 'true', 'nodes': 'localhost'}).encode(), 422, 'nodes'),
    ('bool-timeout', json.dumps({'name': 'n', 'command': 'true', 'nodes': ['a'], 'timeout_sec': True}).encode(),
     422, 'timeout_sec'),
    ('unknown-field', json.dumps(dict(GOOD, become_root=True)).encode(), 422, 'become_root'),
    ('unknown-playbook', json.dumps(dict(GOOD, playbook='nope')).encode(), 422, 'playbook'),
    ('playbook-path', json.dumps(dict(GOOD, playbook='../../etc/passwd')).encode(), 422, 'playbook'),
    ('dotdot-name', json.dumps(dict(GOOD, name='../evil')).encode(), 422, 'name'),
    ('inventory-outside', json.dumps(dict(GOOD, inventory='inventories/../../../etc')).encode(), 422, 'inventory'),
    ('inventory-absolute', json.dumps(dict(GOOD, inventory='/etc/hosts')).encode(), 422, 'inventory'),
    ('nul-name', json.dumps(dict(GOOD, name='ok\x00x')).encode(), 422, 'name'),
    ('nul-inventory', json.dumps(dict(GOOD, inventory='inventories/demo\x00/x')).encode(), 422, 'inventory'),
    ('nul-key', json.dumps(dict(GOOD, extra_vars={'a\x00': 1})).encode(), 422, 'extra_vars'),
    ('both-kinds', json.dumps(dict(GOOD, command='true')).encode(), 422, 'command'),
    ('neither-kind', json.dumps({'name': 'n'}).encode(), 422, 'playbook'),
    ('bad-webhook', json.dumps(dict(GOOD, webhook_url='file:///etc/passwd')).encode(), 422, 'webhook_url'),
]

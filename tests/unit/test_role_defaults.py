"""Each default in one place: a role's defaults/main.yml holds the default of every variable it reads that has
one, its meta/argument_specs.yml states the same value, a variable shared by several roles has one default,
and no task or template repeats a default inline."""
import glob
import os
import re

import pytest
import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
ROLES = sorted(os.path.basename(os.path.dirname(os.path.dirname(p)))
               for p in glob.glob(os.path.join(ROOT, 'roles', '*', 'meta', 'argument_specs.yml')))
# `VAR | default(LITERAL)`: a string, number, boolean, {} or a list of literals
INLINE = re.compile(r"\b([a-z][a-z0-9_]*) \| default\(('[^']*'|-?[0-9]+(?:\.[0-9]+)?|true|false|\{\}|\[[^\]\(\)]*\])\)")


def _load(path):
    if not os.path.exists(path):
        return {}
    with open(path) as handle:
        return yaml.safe_load(handle) or {}


def defaults_of(role):
    return _load(os.path.join(ROOT, 'roles', role, 'defaults', 'main.yml'))


def options_of(role):
    out = {}
    for entry in (_load(os.path.join(ROOT, 'roles', role, 'meta', 'argument_specs.yml')).get('argument_specs') or {}).values():
        out.update((entry or {}).get('options') or {})
    return out


def _task_files(role):
    for path in glob.glob(os.path.join(ROOT, 'roles', role, '**', '*'), recursive=True):
        rel = os.path.relpath(path, os.path.join(ROOT, 'roles', role))
        if os.path.isfile(path) and rel.split(os.sep)[0] in ('tasks', 'templates', 'handlers', 'vars'):
            yield path


def _text(path):
    with open(path) as handle:
        return handle.read()


def _normal(value):
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


@pytest.mark.parametrize('role', ROLES)
def test_argument_specs_state_the_defaults(role):
    defaults, options = defaults_of(role), options_of(role)
    for name, value in defaults.items():
        if name.startswith('__'):
            continue
        assert name in options, '%s: %s is in defaults/main.yml but not in meta/argument_specs.yml' % (role, name)
        if 'default' in options[name]:
            assert _normal(options[name]['default']) == _normal(value), \
                '%s: %s defaults to %r in defaults/main.yml, %r in argument_specs' % (role, name, value, options[name]['default'])
    read = ' '.join(_text(path) for path in _task_files(role))
    for name, spec in options.items():
        literal = 'default' in spec and not (isinstance(spec['default'], str) and '{{' in spec['default'])
        if literal and name.startswith('xuanwu_') and name not in defaults and re.search(r'\b%s\b' % name, read):
            pytest.fail('%s: %s has a default in argument_specs (%r) but none in defaults/main.yml' % (role, name, spec['default']))


def test_a_shared_variable_has_one_default():
    seen = {}
    for role in ROLES:
        for name, value in defaults_of(role).items():
            seen.setdefault(name, {})[role] = value
    for name, by_role in sorted(seen.items()):
        assert len(set(repr(_normal(v)) for v in by_role.values())) == 1, '%s has different defaults: %s' % (name, by_role)


def _canonical():
    out = {}
    for role in ROLES:
        out.update(defaults_of(role))
    return out


def _inline_defaults():
    paths = [p for role in ROLES for p in _task_files(role)] + glob.glob(os.path.join(ROOT, 'playbooks', '*.yml'))
    for path in paths:
        with open(path) as handle:
            for number, line in enumerate(handle, 1):
                for match in INLINE.finditer(line):
                    yield path, number, match.group(1), yaml.safe_load(match.group(2))


def test_no_task_repeats_its_roles_default_and_no_inline_default_disagrees():
    canonical = _canonical()
    problems = []
    for path, number, name, value in _inline_defaults():
        where = '%s:%d' % (os.path.relpath(path, ROOT), number)
        role = os.path.relpath(path, os.path.join(ROOT, 'roles')).split(os.sep)[0] if '/roles/' in path else None
        if role and name in defaults_of(role):
            problems.append('%s: %s | default(%r) repeats defaults/main.yml of %s' % (where, name, value, role))
        elif name in canonical and _normal(canonical[name]) != _normal(value):
            problems.append('%s: %s | default(%r), but its default is %r' % (where, name, value, canonical[name]))
    assert not problems, '\n'.join(problems)


def test_the_checker_sees_a_disagreeing_inline_default():
    """The scan above finds a repeated and a disagreeing default (guards the regular expression)."""
    found = list(INLINE.finditer("{{ xuanwu_collectives_min_bytes | default('8M') }} {{ x | default([1, 'a']) }}"))
    assert [(m.group(1), yaml.safe_load(m.group(2))) for m in found] == [('xuanwu_collectives_min_bytes', '8M'), ('x', [1, 'a'])]
    assert _canonical()['xuanwu_collectives_min_bytes'] != '8M'

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side helpers: where the collection lies, its version, profiles and role variables."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import glob
import json
import os

import yaml

from ansible_collections.xuanwu.cluster.plugins.module_utils._errors import ProfileError
from ansible_collections.xuanwu.cluster.plugins.module_utils import _profile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
PROFILE_DIR = os.path.join(ROOT, 'profiles')


def version():
    """The collection's version, from MANIFEST.json when installed, else galaxy.yml."""
    try:
        with open(os.path.join(ROOT, 'MANIFEST.json')) as handle:
            return json.load(handle)['collection_info']['version']
    except (IOError, OSError, ValueError, KeyError):
        pass
    try:
        with open(os.path.join(ROOT, 'galaxy.yml')) as handle:
            return str(yaml.safe_load(handle).get('version'))
    except (IOError, OSError, yaml.YAMLError, AttributeError):
        return 'unknown'


def load_yaml(path, what):
    try:
        with open(path) as handle:
            return yaml.safe_load(handle)
    except (IOError, OSError) as err:
        raise ProfileError(path, None, 'cannot read %s: %s' % (what, err.strerror or err))
    except yaml.YAMLError as err:
        mark = getattr(err, 'problem_mark', None)
        where = ' at line %d, column %d' % (mark.line + 1, mark.column + 1) if mark else ''
        raise ProfileError(path, None, '%s is not valid YAML%s: %s' % (what, where, getattr(err, 'problem', None) or err))


def available_profiles(extra_dirs=()):
    names = set()
    for directory in list(extra_dirs) + [PROFILE_DIR]:
        for path in glob.glob(os.path.join(directory, '*.yml')):
            names.add(os.path.basename(path)[:-4])
    return sorted(names)


def find_profile(ref, extra_dirs=()):
    """Return the path of profile ``ref``: a file path, or a name looked up in the profile dirs."""
    if not isinstance(ref, str) or not ref.strip():
        raise ProfileError('xuanwu_profile', None, 'must be a profile name or a path to a profile file, got %r' % (ref,))
    if os.sep in ref or ref.endswith(('.yml', '.yaml')):
        if not os.path.isfile(ref):
            raise ProfileError(ref, None, 'profile file not found')
        return ref
    for directory in list(extra_dirs) + [PROFILE_DIR]:
        path = os.path.join(directory, ref + '.yml')
        if os.path.isfile(path):
            return path
    known = available_profiles(extra_dirs)
    close = difflib.get_close_matches(ref, known, n=1)
    hint = " (did you mean '%s'?)" % close[0] if close else ''
    raise ProfileError('xuanwu_profile', None, "unknown profile '%s'%s; available: %s" % (ref, hint, ', '.join(known)))


def resolve_profile(ref, overrides=None, extra_dirs=()):
    """Load, validate and apply inventory overrides. Returns ``(profile, path)``."""
    path = find_profile(ref, extra_dirs)
    data = load_yaml(path, 'the profile')
    profile = _profile.validate_profile(data, path)
    if overrides:
        if not isinstance(overrides, dict):
            raise ProfileError('xuanwu_profile_overrides', None, 'must be a mapping, got %s' % type(overrides).__name__)
        profile = _profile.merge_profile(profile, overrides, 'xuanwu_profile_overrides')
    return profile, path


def role_variables():
    """Every variable the collection's roles declare, from their meta/argument_specs.yml.

    Returns ``{name: {'type': ..., 'choices': ..., 'role': ...}}``: the single list of inventory
    variables that the collection understands.
    """
    known = {}
    for path in sorted(glob.glob(os.path.join(ROOT, 'roles', '*', 'meta', 'argument_specs.yml'))):
        role = path.split(os.sep)[-3]
        with open(path) as handle:
            specs = (yaml.safe_load(handle) or {}).get('argument_specs', {})
        for entry in specs.values():
            for name, spec in (entry.get('options') or {}).items():
                known.setdefault(name, dict(spec, role=role))
    return known


_TYPES = {
    'str': (str,), 'path': (str,), 'int': (int,), 'float': (int, float), 'bool': (bool,),
    'list': (list,), 'dict': (dict,),
}


def check_inventory_vars(variables, known, prefix='xuanwu_'):
    """Return one message per problem with the ``xuanwu_*`` variables of a host."""
    problems = []
    for name in sorted(variables):
        if not name.startswith(prefix):
            continue
        value = variables[name]
        spec = known.get(name)
        if spec is None:
            close = difflib.get_close_matches(name, list(known), n=1)
            hint = " (did you mean '%s'?)" % close[0] if close else ''
            problems.append("unknown variable '%s'%s" % (name, hint))
            continue
        kinds = _TYPES.get(spec.get('type', 'str'))
        if value is None or kinds is None:
            continue
        if isinstance(value, bool) and spec.get('type') in ('int', 'float'):
            kinds = ()
        if not isinstance(value, kinds):
            problems.append("variable '%s' must be of type %s, got %s (%r)" % (name, spec.get('type', 'str'), type(value).__name__, value))
            continue
        choices = spec.get('choices')
        if choices:
            values = value if isinstance(value, list) else [value]
            bad = [v for v in values if v not in choices]
            if bad:
                problems.append("variable '%s' has %r; choose from %s" % (name, bad[0], ', '.join(str(c) for c in choices)))
    return problems

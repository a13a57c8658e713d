# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side helpers: where the collection lies, its version, profiles and role variables."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import difflib
import glob
import json
import math
import os
import re
import time

import yaml

from ansible.module_utils.common.validation import check_type_bool, check_type_float, check_type_int

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
    """The YAML document of a file the site wrote (a profile, overrides): any reason it cannot be read, decoded or
    parsed is a ProfileError naming the file, never a traceback."""
    try:
        with open(path, 'rb') as handle:
            raw = handle.read()
    except (IOError, OSError) as err:
        raise ProfileError(path, None, 'cannot read %s: %s' % (what, err.strerror or err))
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b'\n') + 1
        raise ProfileError(path, None, '%s is not UTF-8 text: byte 0x%02x at line %d (offset %d); save it as UTF-8'
                           % (what, raw[err.start], line, err.start))
    if '\x00' in text:
        raise ProfileError(path, None, '%s is not text: it holds a NUL byte at line %d' % (what, text[:text.index('\x00')].count('\n') + 1))
    try:
        return yaml.load(text, Loader=SPEC_LOADER)
    except yaml.YAMLError as err:
        mark = getattr(err, 'problem_mark', None)
        where = ' at line %d, column %d' % (mark.line + 1, mark.column + 1) if mark else ''
        raise ProfileError(path, None, '%s is not valid YAML%s: %s' % (what, where, getattr(err, 'problem', None) or err))


def search_dirs(extra_dirs=()):
    """The folders profiles (and the policy files they extend) are looked up in, in order: the site's first."""
    return list(extra_dirs) + [PROFILE_DIR]


def available_profiles(extra_dirs=()):
    names = set()
    for directory in search_dirs(extra_dirs):
        for path in glob.glob(os.path.join(directory, '*.yml')):
            names.add(os.path.basename(path)[:-4])
    return sorted(names)


def extendable(extra_dirs=()):
    """What a profile can extend: the profile names and the policy files one folder down (``policy/nvidia-xid``)."""
    names = set(available_profiles(extra_dirs))
    for directory in search_dirs(extra_dirs):
        for path in glob.glob(os.path.join(directory, '*', '*.yml')):
            names.add('/'.join(os.path.normpath(os.path.relpath(path, directory)).split(os.sep))[:-4])
    return sorted(names)


def shown_path(path, extra_dirs=()):
    """``path`` as a message names it: relative to the profile folder that holds it (``policy/nvidia-xid.yml``)."""
    for directory in search_dirs(extra_dirs):
        relative = os.path.relpath(os.path.abspath(path), os.path.abspath(directory))
        if not relative.startswith(os.pardir + os.sep) and relative != os.pardir and not os.path.isabs(relative):
            return '/'.join(relative.split(os.sep))
    return path


def find_profile(ref, extra_dirs=()):
    """Return the path of profile ``ref``: a file path, or a name looked up in the profile dirs."""
    if not isinstance(ref, str) or not ref.strip():
        raise ProfileError('xuanwu_profile', None, 'must be a profile name or a path to a profile file, got %s' % _profile.type_name(ref))
    if os.sep in ref or ref.endswith(('.yml', '.yaml')):
        if os.path.isabs(ref):
            if not os.path.isfile(ref):
                raise ProfileError(ref, None, 'profile file not found')
            return ref
        # a relative path: from where ansible-playbook runs, then from each of the site's profile folders
        looked = [os.getcwd()] + [os.path.abspath(str(d)) for d in extra_dirs]
        for directory in looked:
            path = os.path.join(directory, ref)
            if os.path.isfile(path):
                return path if directory != looked[0] else ref
        raise ProfileError(ref, None, 'profile file not found; a relative path is looked up in the current directory '
                           '(%s)%s: give an absolute path, or the file\'s folder in xuanwu_profile_dirs and its name'
                           % (looked[0], ' and in xuanwu_profile_dirs (%s)' % ', '.join(looked[1:]) if looked[1:] else
                              ', and xuanwu_profile_dirs is empty'))
    for directory in search_dirs(extra_dirs):
        path = os.path.join(directory, ref + '.yml')
        if os.path.isfile(path):
            return path
    known = available_profiles(extra_dirs)
    close = difflib.get_close_matches(ref, known, n=1)
    hint = " (did you mean '%s'?)" % close[0] if close else ''
    raise ProfileError('xuanwu_profile', None, "unknown profile '%s'%s; available: %s" % (ref, hint, ', '.join(known)))


def find_extended(ref, path, extra_dirs=(), chain=()):
    """The file that ``extends: ref`` of the profile file ``path`` names: ``ref`` (a profile name, or a path relative to a
    profile folder, ``.yml`` optional) in the first folder of ``search_dirs`` that has it. A file on ``chain`` (the files
    being merged, ``path`` last) is passed over: a site's ``h100-sxm-8.yml`` that extends ``h100-sxm-8`` gets the next
    one, the shipped profile. Where only such a file is found the extends form a cycle: a ProfileError, as for a file
    not found."""
    if os.path.isabs(ref):
        raise ProfileError(path, _profile.EXTENDS, "'%s' must be %s" % (ref, _profile.EXTENDS_WORDS))
    relative = ref if ref.endswith(('.yml', '.yaml')) else ref + '.yml'
    merging = [os.path.realpath(p) for p in chain]
    looped = None
    for directory in search_dirs(extra_dirs):
        candidate = os.path.join(directory, relative)
        if not os.path.isfile(candidate):
            continue
        real = os.path.realpath(candidate)
        if real not in merging:
            return candidate
        if looped is None:
            looped = [shown_path(p, extra_dirs) for p in chain[merging.index(real):]] + [shown_path(candidate, extra_dirs)]
    if looped is not None:
        raise ProfileError(path, _profile.EXTENDS, "'%s' makes a cycle: %s extends itself (%s)"
                           % (ref, looped[0], ' -> '.join(looped)))
    close = difflib.get_close_matches(ref, extendable(extra_dirs), n=1)
    hint = " (did you mean '%s'?)" % close[0] if close else ''
    raise ProfileError(path, _profile.EXTENDS, "'%s' is not a profile or a policy file of %s%s"
                       % (ref, ', '.join(search_dirs(extra_dirs)), hint))


def _extended(path, data, extra_dirs, chain, files):
    """``data`` (the document of the file ``path``) with what it extends merged under it; each file merged is appended
    to ``files``, the farthest parent first."""
    refs = _profile.extends_refs(data, path)
    own = _profile.own_document(data)
    _profile.check_override(own, path)          # its own keys, types and values, named in its own file
    merged = {}
    for ref in refs:
        parent = find_extended(ref, path, extra_dirs, chain)
        what = "'%s' (extended by %s)" % (ref, shown_path(path, extra_dirs))
        document = load_yaml(parent, what)
        if not isinstance(document, dict):
            raise ProfileError(path, _profile.EXTENDS, "'%s' (%s) must be a mapping of profile keys, got %s"
                               % (ref, parent, _profile.type_name(document)))
        merged = _profile.extend(merged, _extended(parent, document, extra_dirs, chain + (parent,), files))
    files.append({'path': path, 'extends': refs, 'document': own})
    return _profile.extend(merged, own)


def load_profile(path, extra_dirs=()):
    """The document of the profile file ``path`` with the profiles and policy files it ``extends`` merged under it
    (``_profile.extends_refs``): ``(document, files)``, ``files`` every file merged (``{'path', 'extends': its
    references, 'document': its own keys}``), the farthest parent first and ``path`` last. Each file's keys are
    checked in that file (an unknown key of a parent names the parent); a profile names itself (``name`` is never
    inherited). A profile without ``extends`` is its document as it is."""
    data = load_yaml(path, 'the profile')
    if not isinstance(data, dict) or _profile.EXTENDS not in data:
        return data, [{'path': path, 'extends': [], 'document': data}]
    files = []
    merged = _extended(path, data, extra_dirs, (path,), files)
    if data.get('name') is None:
        raise ProfileError(path, 'name', "missing required key 'name': a profile names itself, the name of what it extends "
                                         "is not inherited")
    return _profile.extended(merged), files


def shipped_profiles():
    """Every profile of the collection's profiles/, resolved (docs/profiles.md): ``[{'name', 'files', 'profile'}]``,
    ``files`` as ``load_profile`` gives them with each path relative to profiles/ (``policy/nvidia-xid.yml``)."""
    out = []
    for name in available_profiles():
        data, files = load_profile(find_profile(name))
        out.append({'name': name, 'profile': _profile.validate_profile(data, name),
                    'files': [dict(entry, path=shown_path(entry['path'])) for entry in files]})
    return out


def host_profile(resolved, variables, template=None):
    """A host's whole resolved profile for a check: ``resolved`` (its ``xuanwu_profile_resolved``) unless that is the
    brief one a host in no later stage keeps (docs/facts.md, "Brief facts"), then resolved again from the host's
    ``xuanwu_profile``, ``xuanwu_profile_overrides`` and ``xuanwu_profile_dirs`` (``template`` renders a value).
    ``ProfileError`` when it cannot be."""
    if not (isinstance(resolved, dict) and resolved.get('brief')):
        return resolved
    template = template or (lambda value: value)

    def value(name, default):
        got = template(variables[name]) if name in variables else None
        return default if got is None else got

    dirs = value('xuanwu_profile_dirs', [])
    profile, _path = resolve_profile(value('xuanwu_profile', None), value('xuanwu_profile_overrides', {}),
                                     dirs if isinstance(dirs, list) else [])
    return profile


# (profile file, extra dirs) -> (what each file merged was when it was read, the validated profile): a profile is read
# and validated once per process while its files stay the same. xuanwu.cluster.preload fills it with the shipped
# profiles in Ansible's main process, so that each host's worker, forked from it, finds them (docs/architecture.md,
# "Cost per host").
_VALIDATED = {}


def _signature(paths):
    """What each file is now (device, inode, size, modification time), None where it cannot be read."""
    out = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            return None
        out.append((path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


# A file modified less than this long before it was read is not held: a write in the same clock tick as the read (or
# one on a file system with coarse times) would leave the same signature on other contents.
SETTLED_NS = 2 * 10 ** 9


def validated_profile(path, extra_dirs=()):
    """The profile file ``path`` loaded (with what it extends) and validated: a deep copy of what an earlier call of
    this process read, when none of the files it merged has changed since (a file changed, replaced or removed is read
    again; one modified within SETTLED_NS of the read is never held)."""
    key = (path, tuple(extra_dirs))
    held = _VALIDATED.get(key)
    if held is not None and _signature(p for p, _s, _i, _z, _m in held[0]) == held[0]:
        return copy.deepcopy(held[1])
    started = time.time_ns()
    data, files = load_profile(path, extra_dirs)
    signature = _signature(entry['path'] for entry in files)
    profile = _profile.validate_profile(data, path)
    if signature is not None and all(mtime < started - SETTLED_NS for _p, _s, _i, _z, mtime in signature):
        _VALIDATED[key] = (signature, copy.deepcopy(profile))
    return profile


def warm_profiles():
    """Read and validate every shipped profile into this process's memo (validated_profile); a profile that does not
    validate is left for the host that names it to report."""
    for name in available_profiles():
        try:
            validated_profile(find_profile(name))
        except ProfileError:
            continue


def resolve_profile(ref, overrides=None, extra_dirs=()):
    """Load (with what it extends), validate and apply inventory overrides. Returns ``(profile, path)``."""
    path = find_profile(ref, extra_dirs)
    profile = validated_profile(path, extra_dirs)
    if overrides:
        if not isinstance(overrides, dict):
            raise ProfileError('xuanwu_profile_overrides', None, 'must be a mapping, got %s' % _profile.type_name(overrides))
        profile = _profile.merge_profile(profile, overrides, 'xuanwu_profile_overrides')
    return profile, path


# The argument specs are read on every host (node_profile): libyaml's loader reads them about 20 times faster
# than the pure-Python one (17 files: 7 ms against 152 ms, medians of 7) with the same result; the pure-Python
# loader where PyYAML was built without libyaml.
SPEC_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)


def role_variables():
    """Every variable the collection's roles declare, from their meta/argument_specs.yml.

    Returns ``{name: {'type': ..., 'choices': ..., 'role': ...}}``: the single list of inventory
    variables that the collection understands.
    """
    known = {}
    for path in sorted(glob.glob(os.path.join(ROOT, 'roles', '*', 'meta', 'argument_specs.yml'))):
        role = path.split(os.sep)[-3]
        with open(path) as handle:
            specs = (yaml.load(handle, Loader=SPEC_LOADER) or {}).get('argument_specs', {})
        for entry in specs.values():
            for name, spec in (entry.get('options') or {}).items():
                # A typed declaration wins over a 'raw' one (validate_inventory declares
                # xuanwu_profile 'raw' for Ansible's validation and 'str' for this one).
                if name not in known or (known[name].get('type') == 'raw' and spec.get('type', 'str') != 'raw'):
                    known[name] = dict(spec, role=role)
    return known


# What each argument-spec type accepts, in words; the conversions are Ansible's own (check_type_*),
# so `-e name=true` or `-e name=30` is accepted exactly where a role's argument spec accepts it.
_EXPECTED = {
    'bool': 'true/false, yes/no, on/off or 1/0',
    'int': 'a whole number such as 30',
    'float': 'a number such as 1.5',
    'str': 'a string',
    'path': 'a path',
    'list': "a list, given in the inventory or as JSON: -e '{\"%s\": [...]}'",
    'dict': "a mapping, given in the inventory or as JSON: -e '{\"%s\": {...}}'",
}


def _convert_bool(value):
    if isinstance(value, (bool, str)):
        return check_type_bool(value)
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise TypeError(value)


def _convert_int(value):
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(value)
    return check_type_int(value)


def _convert_float(value):
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(value)
    number = check_type_float(value)
    if math.isnan(number) or math.isinf(number):
        raise ValueError(value)
    return number


def _convert_str(value):
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise TypeError(value)


def _convert_kind(kind):
    def convert(value):
        if not isinstance(value, kind):
            raise TypeError(value)
        return value
    return convert


_CONVERT = {
    'bool': _convert_bool, 'int': _convert_int, 'float': _convert_float, 'str': _convert_str, 'path': _convert_str,
    'list': _convert_kind(list), 'dict': _convert_kind(dict),
}


def convert_variable(name, spec, value):
    """Return ``(value, problem)``: the value converted to the type of its argument spec, or a message.

    Strings as ``-e name=value`` gives them are converted where Ansible's argument specs convert
    them (``true``/``no``/``on``/``1`` for bool, ``30`` for int, ``1.5`` for float); anything else of
    the wrong type is a problem naming the variable, the value and the type expected.
    """
    kind = spec.get('type', 'str')
    convert = _CONVERT.get(kind)
    if value is None or convert is None:
        return value, None
    try:
        return convert(value), None
    except (TypeError, ValueError, OverflowError):
        expected = _EXPECTED[kind].replace('%s', name)
        return value, "variable '%s' must be of type %s (%s), got %s" % (name, kind, expected, _profile.type_name(value))


# Grammars of the values that become names, paths and command-line arguments on the nodes: a value
# outside its grammar would become extra arguments (``-x NCCL_X --mca foo``), extra hostfile fields or
# a path relative to wherever the command runs.
ENV_NAME = re.compile(r'\A[A-Za-z_][A-Za-z0-9_]*\Z')
ENV_NAME_WORDS = 'an environment variable name (^[A-Za-z_][A-Za-z0-9_]*$)'
# Linux network interface names: 1-15 bytes (IFNAMSIZ 16 with the final NUL), no '/', ':' or whitespace, not '.' or '..'
IFNAME = re.compile(r'\A(?!\.\.?\Z)[^/:\s]{1,15}\Z')
IFNAME_WORDS = "an interface name (1-15 characters, no '/', ':' or whitespace, not '.' or '..')"
# a host name or an IPv4/IPv6 address (with a %zone), as written on one hostfile line
HOST_ADDRESS = re.compile(r'\A[A-Za-z0-9._:%\[\]-]{1,253}\Z')
HOST_ADDRESS_WORDS = 'a host name or address (letters, digits and . _ : % [ ] -, no whitespace)'
# environment variables whose value is a list of interfaces: NCCL's ^ (exclude) and = (exact) prefixes allowed
IFNAME_ENV = ('NCCL_SOCKET_IFNAME', 'GLOO_SOCKET_IFNAME', 'TP_SOCKET_IFNAME', 'UCX_NET_DEVICES')
_LINE_BREAKS = re.compile('[\x00\n\r]')


def _shown(value):
    return repr(value)[:80] if not isinstance(value, str) else "'%s'" % value.replace('\n', '\\n').replace('\r', '\\r').replace('\x00', '\\0')[:80]


def _check_env(name, env):
    problems = []
    for key in sorted(env, key=str):
        value = env[key]
        if not isinstance(key, str) or not ENV_NAME.match(key):
            problems.append('variable \'%s\' has the key %s, which must be %s' % (name, _shown(key), ENV_NAME_WORDS))
            continue
        if isinstance(value, (dict, list)) or value is None:
            problems.append("variable '%s': the value of %s must be a string or a number, got %s" % (name, key, _profile.type_name(value)))
            continue
        text = str(value)
        if _LINE_BREAKS.search(text):
            problems.append("variable '%s': the value of %s must not hold a NUL or a line break" % (name, key))
        elif text and key.upper() in IFNAME_ENV:
            bad = [part for part in text.split(',') if not IFNAME.match(part.lstrip('^').lstrip('=') or '.')]
            if bad:
                problems.append("variable '%s': the value of %s has %s, which must be %s (a comma-separated list, "
                                "each optionally prefixed with ^ or =)" % (name, key, _shown(bad[0]), IFNAME_WORDS))
    return problems


def _check_each(name, values, grammar, words):
    values = values if isinstance(values, list) else [values]
    return ["variable '%s' has %s, which must be %s" % (name, _shown(v), words)
            for v in values if not isinstance(v, str) or not grammar(v)]


ABSOLUTE_WORDS = 'an absolute path (no NUL or line break)'


def _absolute(text):
    return os.path.isabs(text) and not _LINE_BREAKS.search(text)


def _absolute_list(text):
    return all(_absolute(part) for part in text.split(':') if part) and not _LINE_BREAKS.search(text)


SERIAL_PART = re.compile(r'\A(?:[1-9][0-9]{0,6}|(?:100|[1-9][0-9]?)%)\Z')
SERIAL_WORDS = ("a number of hosts (a whole number >= 1), a whole percentage of them (1% ... 100%, for example "
                "'20%'), or a non-empty list of those (batches that grow, for example [1, 5, '25%'])")


def _check_serial(name, value):
    """Ansible's ``serial``: a count, a percentage or a list of them; anything else crashes Ansible when the batch
    play starts (rc 250), after the run record is open."""
    values = value if isinstance(value, list) else [value]
    if not values:
        return ["variable '%s' is an empty list, which must be %s" % (name, SERIAL_WORDS)]
    bad = [v for v in values if isinstance(v, bool) or not (
        (isinstance(v, int) and v >= 1) or (isinstance(v, str) and SERIAL_PART.match(v)))]
    return ["variable '%s' has %s, which must be %s" % (name, _shown(v), SERIAL_WORDS) for v in bad[:1]]


GRAMMARS = {
    'xuanwu_serial': _check_serial,
    'xuanwu_nccl_env': _check_env,
    'xuanwu_torch_env': _check_env,
    'xuanwu_redact_env_keys': lambda n, v: _check_each(n, v, ENV_NAME.match, ENV_NAME_WORDS),
    'xuanwu_probe_interfaces': lambda n, v: _check_each(n, v, IFNAME.match, IFNAME_WORDS + ' or a glob of one'),
    'xuanwu_nccl_tests_bin_dir': lambda n, v: _check_each(n, v, _absolute, ABSOLUTE_WORDS),
    'xuanwu_workload_dir': lambda n, v: _check_each(n, v, _absolute, ABSOLUTE_WORDS),
    'xuanwu_disk_paths': lambda n, v: _check_each(n, v, _absolute, ABSOLUTE_WORDS),
    'xuanwu_nccl_tests_ld_library_path': lambda n, v: _check_each(n, v, _absolute_list, 'absolute paths separated by : (no NUL or line break)'),
}


def check_host_address(name, address):
    """Problems with a host's address as a hostfile line names it (``ansible_host``, else the inventory name)."""
    return _check_each(name, address, HOST_ADDRESS.match, HOST_ADDRESS_WORDS)


def check_inventory_vars(variables, known, prefix='xuanwu_'):
    """Return one message per problem with the ``xuanwu_*`` variables of a host."""
    problems = []
    for name in sorted(variables):
        if not name.startswith(prefix):
            continue
        spec = known.get(name)
        if spec is None:
            close = difflib.get_close_matches(name, list(known), n=1)
            hint = " (did you mean '%s'?)" % close[0] if close else ''
            problems.append("unknown variable '%s'%s" % (name, hint))
            continue
        value, problem = convert_variable(name, spec, variables[name])
        if problem:
            problems.append(problem)
            continue
        choices = spec.get('choices')
        if choices and value is not None:
            values = value if isinstance(value, list) else [value]
            bad = [v for v in values if v not in choices]
            if bad:
                problems.append("variable '%s' has %s, which is not one of: %s" % (name, _profile.type_name(bad[0]), ', '.join(str(c) for c in choices)))
                continue
        if name in GRAMMARS and (value or name == 'xuanwu_serial'):
            problems.extend(GRAMMARS[name](name, value))
    return problems

"""The registration lists are derived, never kept in step by hand: ``_catalogue.AREAS`` is the one list of the check
areas (the catalogue and ``_catalogue.PROFILE_KEYS`` come from it), ``_probe.PARSER_MODULES`` comes from the parser
modules _probe imports. A module that declares catalogue entries or profile keys that do not reach the catalogue or the
profile schema, or a parser module the probe table names and _probe does not import (or one it imports and no probe
names), fails here."""
import ast
import glob
import importlib
import os
import types

from ansible_collections.xuanwu.cluster.plugins.module_utils import _catalogue, _probe, _profile

MODULE_UTILS = os.path.dirname(os.path.abspath(_catalogue.__file__))
PACKAGE = 'ansible_collections.xuanwu.cluster.plugins.module_utils'


def top_level_names(path):
    """The names a module file assigns at its top level."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    return set(target.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets
               if isinstance(target, ast.Name))


def declaring(suffix):
    """``{module name: [names]}``: the modules of module_utils that assign a top-level name ending in ``suffix``."""
    out = {}
    for path in sorted(glob.glob(os.path.join(MODULE_UTILS, '_*.py'))):
        names = sorted(name for name in top_level_names(path) if name.endswith(suffix))
        if names:
            out[os.path.basename(path)[:-3]] = names
    return out


def is_catalogue(value):
    """Catalogue entries: ``{check id: entry}``, each entry a mapping with a default severity (``_findings.entry``)."""
    return isinstance(value, dict) and bool(value) and all(
        isinstance(entry, dict) and 'default_severity' in entry for entry in value.values())


def entries_not_in(modules, catalogue):
    """``module.NAME: ids`` of the catalogue entries of ``modules`` (``{name: module}``) whose ids ``catalogue`` lacks."""
    out = []
    for name, module in sorted(modules.items()):
        for attribute in sorted(vars(module)):
            value = getattr(module, attribute)
            if attribute.endswith('CHECKS') and is_catalogue(value):
                missing = sorted(set(value) - set(catalogue))
                if missing:
                    out.append('%s.%s: %s' % (name, attribute, ', '.join(missing)))
    return out


def _import(name):
    return importlib.import_module('%s.%s' % (PACKAGE, name))


def test_every_catalogue_entry_of_every_module_is_in_the_catalogue():
    modules = dict((name, _import(name)) for name in declaring('CHECKS'))
    assert len(modules) >= 12
    assert entries_not_in(modules, _catalogue.CATALOGUE) == [], 'add the module to _catalogue._AREAS'


def test_an_area_left_out_of_the_catalogue_is_found():
    area = types.ModuleType('_checks_new')
    area.CHECKS = {'new.check': {'title': 'New', 'default_severity': 'warn'}}
    area.NEW_CHECKS = ('new.check',)           # a tuple of ids, not entries: not a catalogue
    assert entries_not_in({'_checks_new': area}, _catalogue.CATALOGUE) == ['_checks_new.CHECKS: new.check']


def test_the_areas_are_the_modules_of_the_catalogue():
    assert [name for _title, _where, module, name in _catalogue._AREAS if module is _catalogue.AREA_MODULES[0]] == [
        'PROBE_CHECKS', 'CONSISTENCY_CHECKS']
    assert len(set(_catalogue.AREA_MODULES)) == len(_catalogue.AREA_MODULES)
    assert [checks for _title, _where, checks in _catalogue.AREAS] == [
        getattr(module, name) for _title, _where, module, name in _catalogue._AREAS]


def test_every_module_that_declares_profile_keys_gives_them_to_the_schema():
    """_catalogue.PROFILE_KEYS is derived from the area modules; a module outside them that declares profile keys would
    declare them for nothing."""
    declared = dict(item for item in declaring('PROFILE_KEYS').items() if item[0] != '_catalogue')
    assert sorted(owner for owner, _keys in _catalogue.PROFILE_KEYS) == sorted(declared)
    for owner, sections in _catalogue.PROFILE_KEYS:
        assert getattr(_import(owner), 'PROFILE_KEYS') is sections
        for section, keys in sections.items():
            for key, spec in keys.items():
                assert _profile.SCHEMA['keys'][section]['keys'][key] is spec, '%s.%s of %s' % (section, key, owner)


def parser_names():
    """Every parser the probe table names (each probe's alternatives, the derived parsers)."""
    names = set(alt.parser for probe in _probe.all_probes() for alt in probe.alternatives)
    names.update(parser for derived in _probe.DERIVED_PARSERS.values() for _key, parser, _lands in derived)
    return names


def test_the_parser_modules_are_the_ones_the_probe_table_names():
    names = parser_names()
    assert set(name.split('.', 1)[0] for name in names) == set(_probe.PARSER_MODULES)
    for area, module in _probe.PARSER_MODULES.items():
        assert module.__name__ == '%s._parse_%s' % (PACKAGE, area)
    for name in sorted(names):
        assert callable(_probe.parser(name)), name

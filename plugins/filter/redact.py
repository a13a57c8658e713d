# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``xuanwu.cluster.redact_env``, ``xuanwu.cluster.secret_values`` and ``xuanwu.cluster.redact``: secrets
of an environment masked before it is written or shown (see docs/security.md)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.xuanwu.cluster.plugins.module_utils import _redact


def _mapping(env, what):
    if env is None:
        return {}
    if not isinstance(env, dict):
        raise AnsibleFilterError('%s needs a mapping of environment variables, got %s' % (what, type(env).__name__))
    return env


def _names(extra_keys, what):
    if extra_keys is None:
        return []
    if isinstance(extra_keys, str) or not isinstance(extra_keys, (list, tuple)):
        raise AnsibleFilterError('%s: the extra secret names must be a list, got %s' % (what, type(extra_keys).__name__))
    return extra_keys


def redact_env(env, extra_keys=None):
    return _redact.redact_env(_mapping(env, 'redact_env'), _names(extra_keys, 'redact_env'))


def secret_values(env, extra_keys=None):
    return _redact.secret_values(_mapping(env, 'secret_values'), _names(extra_keys, 'secret_values'))


def redact(data, secrets=None):
    return _redact.redact(data, _names(secrets, 'redact'))


class FilterModule(object):
    def filters(self):
        return {'redact_env': redact_env, 'secret_values': secret_values, 'redact': redact}

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Redaction of secrets in environments and in the text written about them (pure functions).

A value is secret when its variable name matches ``SECRET_KEY_PATTERN`` (case-insensitive) or is one
of the extra names given (``xuanwu_redact_env_keys``, compared case-insensitively); the password of a
URL (``scheme://user:password@host``) is secret in any value and any text.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

SECRET_KEY_PATTERN = re.compile('PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|PRIVATE_KEY|API_KEY|AUTH', re.IGNORECASE)
MASK = '***'
# scheme://user:password@ : the password is everything after the first ':' of the userinfo
_URL_USERINFO = re.compile(r'([A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*):([^/?#@\s]*)@')


def is_secret_key(key, extra_keys=()):
    """Whether the variable ``key`` holds a secret."""
    key = str(key)
    return bool(SECRET_KEY_PATTERN.search(key)) or key.upper() in set(str(k).upper() for k in extra_keys or ())


def redact_text(text, secrets=()):
    """``text`` with the password of every URL and every (non-empty) value of ``secrets``, longest
    first, replaced by ``MASK``."""
    text = _URL_USERINFO.sub(lambda m: '%s:%s@' % (m.group(1), MASK), text)
    for secret in sorted(set(str(s) for s in secrets or () if s), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def secret_values(env, extra_keys=()):
    """The values of ``env`` that must not be shown: those of secret keys, and the passwords of URLs."""
    found = []
    for key, value in (env or {}).items():
        value = '' if value is None else str(value)
        if is_secret_key(key, extra_keys) and value:
            found.append(value)
        found.extend(m.group(2) for m in _URL_USERINFO.finditer(value) if m.group(2))
    return found


def redact_env(env, extra_keys=()):
    """A copy of ``env`` that can be shown: the value of a secret key is ``MASK``, URL passwords are masked."""
    shown = {}
    for key, value in (env or {}).items():
        value = '' if value is None else str(value)
        shown[key] = MASK if value and is_secret_key(key, extra_keys) else redact_text(value)
    return shown


def redact(data, secrets=()):
    """A copy of ``data`` (strings, mappings, lists) with ``redact_text`` applied to every string, keys too."""
    if isinstance(data, str):
        return redact_text(data, secrets)
    if isinstance(data, dict):
        return dict((redact(k, secrets), redact(v, secrets)) for k, v in data.items())
    if isinstance(data, (list, tuple)):
        return [redact(v, secrets) for v in data]
    return data

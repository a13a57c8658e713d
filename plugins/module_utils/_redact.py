# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Redaction of secrets in environments and in the text written about them (pure functions).

A value is secret when its variable name matches ``SECRET_NAME`` (case-insensitive; PWD and OLDPWD excepted) or
is one of the extra names given (``xuanwu_redact_env_keys``, compared case-insensitively); the password of a
URL (``scheme://user:password@host``), the credential of an ``Authorization:`` header or a ``Bearer`` token
and the password of ``sshpass -p`` are secret in any value and any text, and every secret value found is then
masked wherever else it appears.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Names of secrets as sites spell them: passwords (password, passwd, passphrase, pwd, db_pwd, vault_pw, ldap_bind_pw,
# *_pass), secrets and tokens (secret, token, jwt, bearer, cookie, credential, auth), keys (private_key, api_key,
# apiKey, munge_key, ssh_key, WANDB_KEY: a name that ends in KEY) -- a word inside the name, any case.
SECRET_NAME = re.compile(
    r'PASSWORD|PASSWD|PASSPHRASE|PWD|(?:^|[_.-])PW(?:$|[_.-])|(?:^|[_.-])PASS$|SECRET|TOKEN|JWT|BEARER|COOKIE|CREDENTIAL|AUTH(?!ORIZED|ORS?(?:$|[_.-]))'
    r'|PRIVATE_?KEY|API_?KEY|(?:^|[_.-]|[a-z])KEY$|MUNGE', re.IGNORECASE)
# Environment names that look like secrets and are not: the working directories a shell exports.
NOT_SECRET_NAMES = frozenset(('PWD', 'OLDPWD'))
SECRET_KEY_PATTERN = SECRET_NAME
MASK = '***'
# scheme://user:password@ : the password is everything after the first ':' of the userinfo
_URL_USERINFO = re.compile(r'([A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*):([^/?#@\s]*)@')
# Secrets that text itself announces, whatever variable carries it: a credential after an HTTP authorisation scheme
# ("Authorization: Bearer ...", "Basic ...", "token ..."), and sshpass's password option (-p PASSWORD, -pPASSWORD).
_ANNOUNCED = (
    re.compile(r'((?:Authorization|Proxy-Authorization)\s*:\s*(?:Bearer|Basic|Token|Digest|Negotiate)\s+)([^\s"\',;]+)', re.IGNORECASE),
    re.compile(r'(\bBearer\s+)([A-Za-z0-9._~+/=-]{8,})', re.IGNORECASE),
    re.compile(r'(\bsshpass\s+(?:-[A-Za-oq-z]\S*\s+)*-p\s*)("[^"]*"|\'[^\']*\'|\S+)'),
)


def is_secret_key(key, extra_keys=()):
    """Whether the variable ``key`` holds a secret."""
    key = str(key)
    if key.upper() in set(str(k).upper() for k in extra_keys or ()):
        return True
    return key.upper() not in NOT_SECRET_NAMES and bool(SECRET_NAME.search(key))


def announced_secrets(text):
    """The secret values ``text`` announces itself (an Authorization header's credential, sshpass -p's password)."""
    found = []
    for pattern in _ANNOUNCED:
        found.extend(m.group(2).strip('"\'') for m in pattern.finditer(text or '') if m.group(2).strip('"\''))
    return found


def redact_text(text, secrets=()):
    """``text`` with the password of every URL, every secret it announces (``announced_secrets``) and every
    (non-empty) value of ``secrets``, longest first, replaced by ``MASK``."""
    text = _URL_USERINFO.sub(lambda m: '%s:%s@' % (m.group(1), MASK), text)
    secrets = list(secrets or ()) + announced_secrets(text)
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
        found.extend(announced_secrets(value))
    return found


def redact_env(env, extra_keys=()):
    """A copy of ``env`` that can be shown: the value of a secret key is ``MASK``, URL passwords are masked."""
    shown = {}
    for key, value in (env or {}).items():
        value = '' if value is None else str(value)
        shown[key] = MASK if value and is_secret_key(key, extra_keys) else redact_text(value)
    return shown


def redact(data, secrets=()):
    """A copy of ``data`` (strings, mappings, lists) with ``redact_text`` applied to every string, keys too.

    Each distinct string is redacted once: a fleet's report repeats its check names and reasons on every host."""
    secrets = list(secrets or ())
    done = {}

    def walk(value):
        if isinstance(value, str):
            shown = done.get(value)
            if shown is None:
                shown = done[value] = redact_text(value, secrets)
            return shown
        if isinstance(value, dict):
            return dict((walk(k), walk(v)) for k, v in value.items())
        if isinstance(value, (list, tuple)):
            return [walk(v) for v in value]
        return value
    return walk(data)

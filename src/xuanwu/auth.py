"""The service's API token: where it is read from, how it is checked.

The token is a shared secret. It is read once at start-up from a file of the service's user that only
this user may read (mode 0600 or stricter) or from ``XUANWU_API_TOKEN``; it is compared in constant time
and never logged, echoed or put into an error message.
"""
from __future__ import annotations

import hmac
import os
import stat

TOKEN_ENV = 'XUANWU_API_TOKEN'
MIN_TOKEN_LENGTH = 16
# Query parameters that would carry a credential in the URL (and so into access logs and proxies).
QUERY_CREDENTIALS = frozenset(('token', 'access_token', 'api_key', 'apikey', 'key', 'auth', 'authorization', 'bearer'))


class TokenError(Exception):
    """The token cannot be used; the message says why and how to fix it (it never holds the token)."""


def read_token_file(path: str) -> str:
    """The token in ``path``; refused when the file is another user's, or group or others may read or write it."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0))
    except FileNotFoundError:
        raise TokenError('token file %s does not exist; create one with: xuanwu token --output %s' % (path, path)) from None
    except OSError as exc:
        raise TokenError('cannot open the token file %s: %s' % (path, exc.strerror)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TokenError('token file %s is not a regular file' % path)
        if info.st_uid != os.geteuid():
            raise TokenError('token file %s is owned by uid %d, not by this user (uid %d): another user chose its '
                             'content; fix: make a new one with xuanwu token --output FILE'
                             % (path, info.st_uid, os.geteuid()))
        if info.st_mode & 0o077:
            raise TokenError('token file %s has mode %04o: group and others must have no access to it; fix: chmod 600 %s'
                             % (path, stat.S_IMODE(info.st_mode), path))
        with os.fdopen(os.dup(fd), 'rb') as handle:
            raw = handle.read(4097)
    finally:
        os.close(fd)
    if len(raw) > 4096:
        raise TokenError('token file %s is larger than 4 KiB; it must hold the token only' % path)
    try:
        token = raw.decode('ascii').strip()
    except UnicodeDecodeError:
        raise TokenError('token file %s holds bytes that are not ASCII' % path) from None
    return check_token(token, 'token file %s' % path)


def check_token(token: str, source: str) -> str:
    """``token`` if it is usable as a Bearer credential, else TokenError naming ``source``."""
    if not token:
        raise TokenError('%s is empty' % source)
    if len(token) < MIN_TOKEN_LENGTH:
        raise TokenError('%s holds a token of %d characters; use at least %d (xuanwu token makes one)'
                         % (source, len(token), MIN_TOKEN_LENGTH))
    if any(ch.isspace() or not ch.isprintable() for ch in token):
        raise TokenError('%s holds whitespace or control characters inside the token' % source)
    return token


def load_token(token_file: str | None, environ=None) -> str | None:
    """The token from ``token_file`` or, when no file is named, from XUANWU_API_TOKEN; None when neither is set."""
    environ = os.environ if environ is None else environ
    if token_file:
        return read_token_file(token_file)
    value = environ.get(TOKEN_ENV)
    if value is None:
        return None
    return check_token(value.strip(), 'the environment variable %s' % TOKEN_ENV)


def bearer_matches(header: str | None, token: str) -> bool:
    """True when an Authorization header value is ``Bearer <token>`` (constant-time comparison)."""
    if not header:
        return False
    scheme, dummy, value = header.partition(' ')
    if scheme.lower() != 'bearer':
        return False
    return hmac.compare_digest(value.strip().encode('utf-8', 'surrogateescape'), token.encode('ascii'))


def credential_in_query(query_keys) -> bool:
    """True when a query string carries something that looks like a credential."""
    return any(key.lower() in QUERY_CREDENTIALS for key in query_keys)

"""The options of ``xuanwu serve`` and their checks (token, binding, TLS), without the web framework, so
that ``xuanwu --help`` and the other commands start quickly."""
from __future__ import annotations

import ipaddress
import os

from .auth import TokenError, load_token, read_token_file
from .secure import check_private_file

DEFAULT_BODY_LIMIT = 64 * 1024
DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_MAX_CONNECTIONS = 256


def add_serve_arguments(parser) -> None:
    """The options of ``xuanwu serve``."""
    parser.add_argument('--bind', default='127.0.0.1',
                        help='address to listen on (default 127.0.0.1); any other than loopback needs a token')
    parser.add_argument('--port', type=int, default=8080, help='TCP port (default 8080)')
    parser.add_argument('--token-file', help='file holding the API token, mode 0600 or stricter '
                                             '(default: the environment variable XUANWU_API_TOKEN)')
    parser.add_argument('--insecure-no-token', action='store_true',
                        help='serve without authentication (refused unless --bind is a loopback address)')
    parser.add_argument('--tls-cert', help='PEM certificate: serve HTTPS (with --tls-key)')
    parser.add_argument('--tls-key', help='PEM private key of --tls-cert')
    parser.add_argument('--max-body-bytes', type=int, default=DEFAULT_BODY_LIMIT,
                        help='largest request body accepted (default %d); larger ones get 413' % DEFAULT_BODY_LIMIT)
    parser.add_argument('--webhook-secret-file', help='file (mode 0600) with the key that signs webhook bodies '
                                                      '(default: the configuration\'s webhook_secret)')
    parser.add_argument('--insecure-plaintext', action='store_true',
                        help='allow plain HTTP on an address other than loopback (the token then crosses the '
                             'network readable); without it such a --bind needs --tls-cert/--tls-key')
    parser.add_argument('--header-timeout', type=float, default=DEFAULT_HEADER_TIMEOUT,
                        help='close a connection that sends no complete request head within this many seconds '
                             '(default %g)' % DEFAULT_HEADER_TIMEOUT)
    parser.add_argument('--max-connections', type=int, default=DEFAULT_MAX_CONNECTIONS,
                        help='open connections at most (default %d; fewer when the descriptor limit is lower); '
                             'a new one closes the oldest idle one' % DEFAULT_MAX_CONNECTIONS)


class ServeError(Exception):
    """``xuanwu serve`` cannot start; the message says why and what to do."""


def is_loopback(host: str) -> bool:
    if host == 'localhost':
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_settings(args, environ=None, config=None) -> dict:
    """Check the options of ``xuanwu serve`` (and the secrets of ``config``); the token, the webhook secret and
    whether plain HTTP leaves the host, or ServeError."""
    try:
        token = load_token(args.token_file, environ)
    except TokenError as exc:
        raise ServeError(str(exc)) from None
    if token is None and not args.insecure_no_token:
        raise ServeError('no API token: pass --token-file FILE (make one with: xuanwu token --output FILE) '
                         'or set XUANWU_API_TOKEN')
    if token is None and not is_loopback(args.bind):
        raise ServeError('refusing to serve on %s without a token: anyone who reaches that address could run '
                         'jobs; pass --token-file, or bind 127.0.0.1' % args.bind)
    if token is not None and args.insecure_no_token:
        raise ServeError('--insecure-no-token contradicts the token that was given; drop one of them')
    if bool(args.tls_cert) != bool(args.tls_key):
        raise ServeError('--tls-cert and --tls-key go together')
    for path in (args.tls_cert, args.tls_key):
        if path and not os.path.isfile(path):
            raise ServeError('TLS file %s does not exist' % path)
    if args.tls_key:
        try:
            check_private_file(args.tls_key, 'TLS key')
        except ValueError as exc:
            raise ServeError(str(exc)) from None
    plaintext_remote = not args.tls_cert and not is_loopback(args.bind)
    if plaintext_remote and not getattr(args, 'insecure_plaintext', False):
        raise ServeError('refusing plain HTTP on %s: the token would cross the network readable; pass --tls-cert '
                         'and --tls-key, bind 127.0.0.1, or say --insecure-plaintext' % args.bind)
    if getattr(args, 'header_timeout', DEFAULT_HEADER_TIMEOUT) <= 0:
        raise ServeError('--header-timeout must be more than 0 seconds')
    if getattr(args, 'max_connections', DEFAULT_MAX_CONNECTIONS) < 4:
        raise ServeError('--max-connections must be at least 4')
    if not 0 < args.port < 65536:
        raise ServeError('--port must be between 1 and 65535, got %d' % args.port)
    if args.max_body_bytes < 1024:
        raise ServeError('--max-body-bytes must be at least 1024')
    secret = None
    if args.webhook_secret_file:
        try:
            secret = read_token_file(args.webhook_secret_file)
        except TokenError as exc:
            raise ServeError('webhook secret: %s' % exc) from None
    elif config is not None and getattr(config, 'webhook_secret', None):
        source = getattr(config, 'source_path', None)
        if not source:
            raise ServeError('webhook_secret: only from a configuration file (owned by the service\'s user, '
                             'mode 0600) or --webhook-secret-file')
        try:
            check_private_file(source, 'the configuration file (it holds webhook_secret)')
        except ValueError as exc:
            raise ServeError(str(exc)) from None
        secret = str(config.webhook_secret)
    return {'token': token, 'webhook_secret': secret, 'plaintext_remote': plaintext_remote}

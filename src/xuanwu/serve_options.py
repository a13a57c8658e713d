"""The options of ``xuanwu serve`` and their checks (token, binding, TLS), without the web framework, so
that ``xuanwu --help`` and the other commands start quickly."""
from __future__ import annotations

import ipaddress
import os

from .auth import TokenError, load_token, read_token_file

DEFAULT_BODY_LIMIT = 64 * 1024


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


class ServeError(Exception):
    """``xuanwu serve`` cannot start; the message says why and what to do."""


def is_loopback(host: str) -> bool:
    if host == 'localhost':
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_settings(args, environ=None) -> dict:
    """Check the options of ``xuanwu serve``; the token and TLS settings, or ServeError."""
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
    return {'token': token, 'webhook_secret': secret}

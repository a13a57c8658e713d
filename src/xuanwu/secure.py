"""What keeps the service's secrets in: the environment a job gets, private folders and files, and the
collection's redaction (plugins/module_utils/_redact.py) for what is stored, logged or sent.

A job's environment is built from an allow-list of the service's own (``PATH``, ``HOME``, ``LANG``,
``LC_*``, ``TZ``, ...) plus the job's own variables; a variable whose name looks secret
(``_redact.is_secret_key``: TOKEN, SECRET, PASSWORD, ...) never passes, whatever list it is on, and
neither does any ``XUANWU_*`` variable of the service (``XUANWU_API_TOKEN`` among them).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from .collection import import_module

# The service's variables a job may see. Everything else of the service's environment stays out.
ALLOWED_ENV = ('PATH', 'HOME', 'LANG', 'LANGUAGE', 'TZ', 'USER', 'LOGNAME', 'SHELL', 'TERM', 'TMPDIR',
               'SSH_AUTH_SOCK')
ALLOWED_PREFIXES = ('LC_',)
PRIVATE_DIR, PRIVATE_FILE = 0o700, 0o600
MASK = '***'


# the collection's redaction, plugins/module_utils/_redact.py (xuanwu.collection)
redact_helpers = import_module('plugins.module_utils._redact')
is_secret_key = redact_helpers.is_secret_key


def job_environment(job_env: dict | None = None, extra: dict | None = None, environ=None) -> dict:
    """The environment of a job: the allowed variables of ``environ`` (default the process's), then
    ``extra`` (what the executor sets: PYTHONPATH, ANSIBLE_CONFIG, the job's marker), then the job's own
    ``job_env``. Secret-looking names are dropped from all three."""
    environ = os.environ if environ is None else environ
    out = {}
    for key, value in environ.items():
        if key in ALLOWED_ENV or key.startswith(ALLOWED_PREFIXES):
            out[key] = value
    for source in (extra or {}, job_env or {}):
        out.update({str(k): str(v) for k, v in source.items()})
    return {k: v for k, v in out.items() if not is_secret_key(k)}


def secret_vars(variables: dict) -> dict:
    """The entries of ``variables`` (extra_vars) whose names look secret."""
    return {k: v for k, v in (variables or {}).items() if is_secret_key(k)}


def redact_vars(variables: dict) -> dict:
    """``variables`` with the values of secret-looking names masked, URL passwords masked anywhere."""
    return {k: (MASK if is_secret_key(k) else redact_helpers.redact(v)) for k, v in (variables or {}).items()}


def redact_spec(spec: dict | None) -> dict | None:
    """A job spec as it may be shown (API answers, job.json records, logs): extra_vars and env redacted."""
    if not spec:
        return spec
    out = dict(spec)
    # a batch template's secret-named parameter (db_password) is in the env (XUANWU_PARAM_DB_PASSWORD) and, filled
    # in, in the command line and argv: its value is masked wherever it appears
    hidden = redact_helpers.secret_values(out.get('env') or {}) + redact_helpers.secret_values(out.get('params') or {})
    if out.get('extra_vars'):
        out['extra_vars'] = redact_vars(out['extra_vars'])
    if out.get('env'):
        out['env'] = redact_helpers.redact_env(out['env'])
    if out.get('command'):
        out['command'] = redact_helpers.redact_text(out['command'], hidden)
    if isinstance(out.get('argv'), list):
        out['argv'] = [redact_helpers.redact_text(a, hidden) if isinstance(a, str) else a for a in out['argv']]
    if out.get('params'):
        out['params'] = redact_vars(out['params'])
    return out


def redact_text(text: str | None, secrets=()) -> str | None:
    return text if text is None else redact_helpers.redact_text(text, secrets)


def private_dir(path, parents: bool = True) -> Path:
    """``path`` as a folder only its owner may enter (0700), created if need be."""
    path = Path(path)
    path.mkdir(mode=PRIVATE_DIR, parents=parents, exist_ok=True)
    os.chmod(path, PRIVATE_DIR)
    return path


def private_tree(top) -> None:
    """Take the group's and others' access from ``top`` and every folder and regular file under it, never through
    a link: what was made with an explicit mode in an attempt's folder despite its umask 077 (ansible-core's fact
    cache writes 0644 whatever the umask; a role's ``mode:``; a job's own chmod). Called once the attempt's process
    tree is gone; what cannot be read (a file gone meanwhile, one without the owner's read access) is left."""
    if not os.path.isdir(top) or os.path.islink(top):
        return
    for _path, _dirs, files, dirfd in os.fwalk(str(top), follow_symlinks=False):
        _owner_only(dirfd)
        for name in files:
            try:
                if not stat.S_ISREG(os.stat(name, dir_fd=dirfd, follow_symlinks=False).st_mode):
                    continue    # a link, a FIFO, a socket: nothing to open
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=dirfd)
            except OSError:
                continue
            try:
                _owner_only(fd)
            finally:
                os.close(fd)


def _owner_only(fd: int) -> None:
    try:
        mode = os.fstat(fd).st_mode
        if mode & 0o077 and (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            os.fchmod(fd, stat.S_IMODE(mode) & ~0o077)
    except OSError:
        pass


def touch_private(path) -> None:
    """Create ``path`` with mode 0600 when it does not exist; make it 0600 when it does."""
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, 'O_NOFOLLOW', 0), PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)
    finally:
        os.close(fd)


def write_private(path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a temporary file renamed), mode 0600."""
    path = Path(path)
    tmp = path.with_name(path.name + '.tmp')
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), PRIVATE_FILE)
    with os.fdopen(fd, 'w', encoding='utf-8') as handle:
        handle.write(text)
    os.replace(tmp, path)


def check_private_file(path: str, what: str, fd: int | None = None) -> os.stat_result:
    """The stat of ``path`` (or of ``fd``), or ValueError: it must be a regular file owned by this process's
    user with no access for group and others."""
    info = os.fstat(fd) if fd is not None else os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise ValueError('%s %s is not a regular file' % (what, path))
    if info.st_uid != os.geteuid():
        raise ValueError('%s %s is owned by uid %d, not by the service\'s user (uid %d); fix: chown the file '
                         'to the service\'s user' % (what, path, info.st_uid, os.geteuid()))
    if info.st_mode & 0o077:
        raise ValueError('%s %s has mode %04o: group and others must have no access to it; fix: chmod 600 %s'
                         % (what, path, stat.S_IMODE(info.st_mode), path))
    return info

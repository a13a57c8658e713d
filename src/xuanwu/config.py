"""The controller's configuration of xuanwu: where jobs live, which playbooks may run, limits."""
from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path
from typing import Any

import yaml

from .collection import find_root

SCHEDULERS = ('slurm', 'local', 'auto')
DEFAULT_PLAYBOOKS = {
    'validate': 'playbooks/validate.yml',
    'site': 'site.yml',
    'provision': 'playbooks/provision.yml',
    'capture': 'playbooks/capture.yml',
}


class ConfigError(ValueError):
    """A configuration file or value that cannot be used; the message says which key and why."""


def _project_root() -> Path:
    """``$XUANWU_PROJECT_ROOT``, else the collection that ``xuanwu.collection`` finds (the checkout that holds this
    package, the current folder or a parent, an installed collection), else the current folder."""
    env = os.environ.get('XUANWU_PROJECT_ROOT')
    if env:
        return Path(env).resolve()
    return find_root() or Path.cwd().resolve()


def _data_dir() -> Path:
    env = os.environ.get('XUANWU_HOME')
    if env:
        return Path(env).expanduser().resolve()
    return Path('~/.local/state/xuanwu').expanduser()


def _runner_bin() -> str:
    found = shutil.which('ansible-runner')
    if found:
        return found
    import sys
    return str(Path(sys.executable).parent / 'ansible-runner')


@dataclasses.dataclass
class Config:
    project_root: Path = dataclasses.field(default_factory=_project_root)
    data_dir: Path = dataclasses.field(default_factory=_data_dir)
    inventory_roots: list = dataclasses.field(default_factory=list)
    playbooks: dict = dataclasses.field(default_factory=dict)
    scheduler: str = 'auto'
    max_concurrency: int = 4
    default_timeout_sec: int = 3600
    ansible_runner_bin: str = dataclasses.field(default_factory=_runner_bin)
    cancel_grace_sec: float = 10.0
    retry_backoff_sec: float = 5.0
    ssh_config_file: str | None = None
    webhook_url: str | None = None
    webhook_secret: str | None = None

    def __post_init__(self):
        self.project_root = Path(self.project_root).expanduser().resolve()
        self.data_dir = Path(self.data_dir).expanduser()
        if not self.data_dir.is_absolute():
            self.data_dir = (Path.cwd() / self.data_dir)
        if not self.inventory_roots:
            self.inventory_roots = [self.project_root / 'inventories']
        self.inventory_roots = [self._under_root(p) for p in self.inventory_roots]
        merged = dict(DEFAULT_PLAYBOOKS)
        merged.update(self.playbooks or {})
        self.playbooks = merged
        self.validate()

    def _under_root(self, path) -> Path:
        path = Path(path).expanduser()
        if not path.is_absolute():
            path = self.project_root / path
        return Path(os.path.realpath(path))

    def playbook_path(self, name: str) -> Path:
        """The file of the registered playbook ``name`` (KeyError when it is not registered)."""
        return self._under_root(self.playbooks[name])

    def validate(self) -> None:
        if self.scheduler not in SCHEDULERS:
            raise ConfigError('scheduler: %r is not one of %s' % (self.scheduler, ', '.join(SCHEDULERS)))
        for key in ('max_concurrency', 'default_timeout_sec'):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError('%s: must be an integer >= 1, got %r' % (key, value))
        if isinstance(self.cancel_grace_sec, bool) or not isinstance(self.cancel_grace_sec, (int, float)) \
                or self.cancel_grace_sec < 0:
            raise ConfigError('cancel_grace_sec: must be a number >= 0, got %r' % (self.cancel_grace_sec,))
        if isinstance(self.retry_backoff_sec, bool) or not isinstance(self.retry_backoff_sec, (int, float)) \
                or self.retry_backoff_sec < 0:
            raise ConfigError('retry_backoff_sec: must be a number >= 0, got %r' % (self.retry_backoff_sec,))
        if self.ssh_config_file is not None and not os.path.isfile(str(self.ssh_config_file)):
            raise ConfigError('ssh_config_file: %s is not a file' % (self.ssh_config_file,))
        if self.webhook_url is not None:
            from .webhooks import check_url
            try:
                check_url(str(self.webhook_url))
            except ValueError as exc:
                raise ConfigError('webhook_url: %s' % exc) from None
        for name, path in self.playbooks.items():
            if not isinstance(name, str) or not isinstance(path, str) or not name:
                raise ConfigError('playbooks: each entry maps a name to a playbook file, got %r: %r' % (name, path))

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out['project_root'] = str(self.project_root)
        out['data_dir'] = str(self.data_dir)
        out['inventory_roots'] = [str(p) for p in self.inventory_roots]
        return out

    @classmethod
    def load(cls, path=None, **overrides: Any) -> 'Config':
        """The configuration from the YAML file ``path`` (None: ``$XUANWU_CONFIG`` if set, else defaults)."""
        if path is None:
            path = os.environ.get('XUANWU_CONFIG') or None
        data = {}
        if path is not None:
            try:
                with open(path, encoding='utf-8') as handle:
                    data = yaml.safe_load(handle)
            except OSError as exc:
                raise ConfigError('%s: cannot read the configuration: %s' % (path, exc.strerror or exc)) from None
            except yaml.YAMLError as exc:
                raise ConfigError('%s: not valid YAML: %s' % (path, str(exc).splitlines()[0])) from None
            if data is None:
                data = {}
            if not isinstance(data, dict):
                raise ConfigError('%s: the configuration must be a mapping, got %s' % (path, type(data).__name__))
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ConfigError('%s: unknown key(s) %s; known: %s' % (path, ', '.join(map(str, unknown)),
                                                                    ', '.join(sorted(fields))))
        data.update({k: v for k, v in overrides.items() if v is not None})
        if 'inventory_roots' in data and not isinstance(data['inventory_roots'], list):
            raise ConfigError('inventory_roots: must be a list of folders')
        if 'playbooks' in data and not isinstance(data['playbooks'], dict):
            raise ConfigError('playbooks: must be a mapping of name to playbook file')
        try:
            config = cls(**data)
        except TypeError as exc:
            raise ConfigError('%s: %s' % (path, exc)) from None
        config.source_path = path   # xuanwu serve checks the file's owner and mode when it holds a secret
        return config

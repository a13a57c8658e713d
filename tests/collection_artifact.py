"""The collection as a site gets it: the tarball of this checkout, the other collections its code calls (galaxy.yml's
``dependencies``) and tarballs of them made from the copies installed here, for an install without Galaxy.

Shared by tests/unit/test_galaxy_build.py (what the tarball holds, what galaxy.yml declares) and
tests/integration/test_collection_install.py (an offline install of the tarballs, then plays by FQCN).
"""
import hashlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What Ansible loads from the collection: where a call of another collection's plugin can be.
RUNTIME = ('roles', 'playbooks', 'plugins', 'site.yml', 'validate.yml')
OWN = ('xuanwu.cluster', 'ansible.builtin', 'ansible.legacy')
# The example a site installs from (README.md, "Install as a collection"), and the execution environment made of it.
INSTALL_DIR = os.path.join(ROOT, 'docs', 'install')
_NAME = r'[a-z][a-z0-9_]*'
_FQCN = r'(%s\.%s\.%s)' % (_NAME, _NAME, _NAME)
# A call by FQCN in YAML or a template: a task's module key, a filter, a test, a lookup, a role, a playbook; the kind
# is the plugin type that ansible-doc takes (None: not a plugin).
_YAML_CALLS = ((re.compile(r'^\s*(?:-\s+)?%s:(?:\s|$)' % _FQCN), 'module'),
               (re.compile(r'\|\s*%s\b' % _FQCN), 'filter'),
               (re.compile(r'\bis\s+(?:not\s+)?%s\b' % _FQCN), 'test'),
               (re.compile(r'\b(?:lookup|query|q)\(\s*[\'"]%s[\'"]' % _FQCN), 'lookup'),
               (re.compile(r'^\s*(?:-\s+)?(?:role|import_playbook):\s*[\'"]?%s[\'"]?\s*$' % _FQCN), None),
               (re.compile(r'^\s*(?:-\s+)?strategy:\s*[\'"]?%s[\'"]?\s*$' % _FQCN), 'strategy'))
# ... and in Python: an import of another collection's code (the collection alone), a module an action plugin runs.
_PY_CALLS = ((re.compile(r'\bansible_collections\.(%s\.%s)\.' % (_NAME, _NAME)), None),
             (re.compile(r'\bmodule_name\s*=\s*[\'"]%s[\'"]' % _FQCN), 'module'))


def galaxy_yml():
    with open(os.path.join(ROOT, 'galaxy.yml')) as handle:
        return yaml.safe_load(handle)


def _files(root):
    for top in RUNTIME:
        path = os.path.join(root, top)
        if os.path.isfile(path):
            yield path
        for folder, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d != '__pycache__')
            for name in sorted(names):
                if name.endswith(('.yml', '.yaml', '.j2', '.py')):
                    yield os.path.join(folder, name)


def calls(root=ROOT):
    """{name: {'kind': plugin type or None, 'files': [file, ...]}} of every call that roles, playbooks and plugins make
    of another collection (not ansible.builtin, not this collection): FQCNs, and 'ns.name' for a Python import."""
    found = {}
    for path in _files(root):
        with open(path, encoding='utf-8') as handle:
            text = handle.read()
        if path.endswith('.py'):
            pieces, patterns = [text], _PY_CALLS
        else:
            pieces, patterns = [re.sub(r'(^|\s)#.*$', '', line) for line in text.splitlines()], _YAML_CALLS
        for piece in pieces:
            for pattern, kind in patterns:
                for match in pattern.finditer(piece):
                    name = match.group(1)
                    if '.'.join(name.split('.')[:2]) not in OWN:
                        entry = found.setdefault(name, {'kind': kind, 'files': []})
                        entry['files'].append(os.path.relpath(path, root))
    return found


def collections_called(root=ROOT):
    """{collection: [name called, ...]} of calls()."""
    out = {}
    for name in sorted(calls(root)):
        out.setdefault('.'.join(name.split('.')[:2]), []).append(name)
    return out


def special_files(root=ROOT):
    """Paths (relative) of FIFOs, sockets and devices in the tree that the build reads (build_ignore's top-level
    entries and .git left out): ``ansible-galaxy collection build`` would wait forever on a FIFO."""
    ignored = set(p for p in galaxy_yml().get('build_ignore') or () if '/' not in p and '*' not in p) | set(['.git'])
    found = []
    for folder, dirs, names in os.walk(root):
        if folder == root:
            dirs[:] = [d for d in dirs if d not in ignored and not d.startswith('.venv')]
            names = [n for n in names if n not in ignored]
        for name in names + dirs:
            mode = os.lstat(os.path.join(folder, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                found.append(os.path.relpath(os.path.join(folder, name), root))
    return sorted(found)


def tool(name):
    """A command of the venv that runs the tests (its bin/), else the one on PATH, else None."""
    here = os.path.join(os.path.dirname(sys.executable), name)
    return here if os.access(here, os.X_OK) else shutil.which(name)


def build(out_dir, galaxy):
    """``ansible-galaxy collection build`` of the checkout into ``out_dir``: the tarball's path."""
    odd = special_files()
    assert not odd, 'not files, the build would wait on them (remove them from the checkout): %s' % odd
    proc = subprocess.run([galaxy, 'collection', 'build', '--output-path', str(out_dir), ROOT], capture_output=True,
                          text=True, check=False, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = galaxy_yml()
    path = os.path.join(str(out_dir), '%s-%s-%s.tar.gz' % (meta['namespace'], meta['name'], meta['version']))
    assert os.path.isfile(path), os.listdir(str(out_dir))
    return path


def installed(collection):
    """The folder of an installed copy of ``collection`` ('ns.name') that the tests use: the checkout's
    .collections (ansible.cfg's collections_path: the community bundle of .venv), else this Python's sys.path; None."""
    ns, name = collection.split('.')
    roots = [os.path.join(ROOT, '.collections'), os.path.join(ROOT, '.collections', 'bundle')] + sys.path
    for base in roots:
        path = os.path.join(base or '.', 'ansible_collections', ns, name)
        if os.path.isfile(os.path.join(path, 'MANIFEST.json')):
            return path
    return None


def manifest(path):
    with open(os.path.join(path, 'MANIFEST.json')) as handle:
        return json.load(handle)['collection_info']


def tarball(source, out_dir):
    """A collection tarball, as Galaxy serves it, of the installed collection at ``source``: its MANIFEST.json,
    FILES.json and the files FILES.json lists. A copy installed from PyPI's ``ansible`` lacks some files that
    FILES.json lists (tests, CI): FILES.json keeps those present, and MANIFEST.json its checksum. The path."""
    with open(os.path.join(source, 'MANIFEST.json')) as handle:
        meta = json.load(handle)
    with open(os.path.join(source, 'FILES.json')) as handle:
        files = json.load(handle)
    files['files'] = [f for f in files['files'] if f['name'] == '.' or os.path.lexists(os.path.join(source, f['name']))]
    files_data = json.dumps(files, indent=4).encode('utf-8')
    meta['file_manifest_file']['chksum_sha256'] = hashlib.sha256(files_data).hexdigest()
    meta_data = json.dumps(meta, indent=4).encode('utf-8')
    info = meta['collection_info']
    path = os.path.join(str(out_dir), '%s-%s-%s.tar.gz' % (info['namespace'], info['name'], info['version']))
    with tarfile.open(path, 'w:gz') as tar:
        for name, data in (('MANIFEST.json', meta_data), ('FILES.json', files_data)):
            member = tarfile.TarInfo(name)
            member.size, member.mode = len(data), 0o644
            tar.addfile(member, io.BytesIO(data))
        for entry in files['files']:
            if entry['name'] != '.':
                tar.add(os.path.join(source, entry['name']), arcname=entry['name'], recursive=False)
    return path

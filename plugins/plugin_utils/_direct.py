# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe's direct answer: node_validate's one round trip without Ansible's module framework.

A module reaches a node as an AnsiballZ payload: its interpreter imports Ansible's module framework
(``ansible.module_utils.basic`` and what it imports, about 120 ms of CPU compiling from the zip each time) before the
module's first line runs; the probe itself, on a node answering from a capture bundle, takes less than that. So
``node_validate`` sends the node's Python a short program on its command line and, on standard input, the probe's own
module_utils (``_probe_node`` and what it imports: ``SOURCES``, read once per controller process) with the options;
the node answers with the same raw answer the ``node_probe`` module gives (``parse: false``), from the same code.

The interpreter is the one Ansible would run the module with (``ansible_python_interpreter``, the configuration,
discovery: ActionBase._configure_module), the task's ``environment`` applies, and the command goes through the
connection with become as any module's. Where Ansible would not pipe a module's payload to a become method (become
without pipelining: a sudo with ``requiretty`` could not take it), or the probe's module_utils cannot be sent as they
are, ``usable`` says no and the module runs as a module (node_validate refuses async, as any action that does not
declare it: Ansible stops such a task before it runs). Nothing secret travels on the command line: the options go on
standard input.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import shlex

PACKAGE = 'ansible_collections.xuanwu.cluster.plugins.module_utils'
ENTRY = '_probe_node'
UTILS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'module_utils')
_IMPORT = re.compile(r'^\s*from ansible_collections\.xuanwu\.cluster\.plugins\.module_utils(?:\.(\w+))? import ([\w, ()]+)', re.M)
_FOREIGN = re.compile(r'^\s*(?:from|import) ansible(?:\.|_collections\.(?!xuanwu\.cluster\.plugins\.module_utils))', re.M)

# Run by the node's Python in isolated mode (-I: the working folder, the user's site-packages and PYTHON* variables
# play no part; any Python 3 reads these lines, the probe needs 3.8): the module_utils from standard input are imported
# from memory under the collection's package names, then _probe_node.direct answers with JSON.
BOOTSTRAP = '''import json, sys
if sys.version_info < (3, 8):
    sys.stdout.write(json.dumps({"failed": True, "msg": "the probe needs Python 3.8 or newer on the node; %s is %s"
                                 % (sys.executable, sys.version.split()[0])}))
    sys.exit(0)
import importlib.abc, importlib.util
D = json.loads(sys.stdin.buffer.read().decode("utf-8"))
P = "PACKAGE"
S = D["sources"]
PK = set(".".join(P.split(".")[:i]) for i in range(1, P.count(".") + 2))
class F(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name in PK:
            return importlib.util.spec_from_loader(name, self, is_package=True)
        if name.startswith(P + ".") and name[len(P) + 1:] in S:
            return importlib.util.spec_from_loader(name, self)
        return None
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        if module.__name__ in PK:
            module.__path__ = []
            return
        short = module.__name__[len(P) + 1:]
        exec(compile(S[short], "<xuanwu.cluster>/plugins/module_utils/%s.py" % short, "exec"), module.__dict__)
sys.meta_path.insert(0, F())
from ansible_collections.xuanwu.cluster.plugins.module_utils import ENTRY as entry
sys.stdout.write(json.dumps(entry.direct(D["args"])))
'''.replace('PACKAGE', PACKAGE).replace('ENTRY', ENTRY)


class DirectError(Exception):
    """The collection's module_utils cannot be sent as they are (a missing file, an import of Ansible)."""


def closure(entry=ENTRY, read=None):
    """``{name: source}`` of ``entry`` and every module_utils of this collection it imports, at any depth.

    Refuses (DirectError) a file that imports Ansible or another collection: the node has neither."""
    def _read(name):
        path = os.path.join(UTILS, name + '.py')
        try:
            with open(path, 'rb') as handle:
                return handle.read().decode('utf-8')
        except (IOError, OSError, UnicodeError) as err:
            raise DirectError('cannot read module_utils %s: %s' % (name, err))
    read = read or _read
    found, todo = {}, [entry]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        source = read(name)
        if _FOREIGN.search(source):
            raise DirectError('module_utils %s imports Ansible or another collection: it cannot answer directly' % name)
        found[name] = source
        for module, names in _IMPORT.findall(source):
            if module:
                todo.append(module)
            else:
                todo.extend(n for n in re.split(r'[\s,()]+', names) if n)
    return found


_SOURCES = []


def sources_json():
    """The JSON of closure() (computed once per process: the per-host workers are forked from the one that loaded it)."""
    if not _SOURCES:
        _SOURCES.append(json.dumps(closure(), sort_keys=True))
    return _SOURCES[0]


def usable(action):
    """``(True, '')`` where the direct answer can go through ``action``'s connection, else ``(False, why)``."""
    connection = action._connection
    if not getattr(connection, 'has_pipelining', False):
        return False, 'the connection cannot pass data on standard input'
    if getattr(connection._shell, 'SHELL_FAMILY', 'sh') == 'powershell':
        return False, 'the node runs PowerShell'
    # ActionBase._is_pipelining_enabled: Ansible's own answer, 2.16 to 2.19 (the connection's own method is 2.17+)
    if getattr(connection, 'become', None) and not action._is_pipelining_enabled('new'):
        return False, 'become without pipelining (a become method may need a terminal)'
    try:
        sources_json()
    except DirectError as err:
        return False, str(err)
    return True, ''


def _interpreter(action, module_name, module_args, task_vars):
    """The interpreter's command line Ansible would run ``module_name`` with (None where it has no shebang) and the
    discovered interpreter fact to hand back, if discovery ran."""
    built = action._configure_module(module_name=module_name, module_args=module_args, task_vars=task_vars)
    # ansible-core 2.19: (_BuiltModule, path); 2.16 - 2.18: (style, shebang, data, path)
    shebang = getattr(built[0], 'shebang', None) if len(built) == 2 else built[1]
    facts = {}
    key = getattr(action, '_discovered_interpreter_key', None)
    if key:
        facts[key] = getattr(action, '_discovered_interpreter', None)
    if not shebang or not shebang.startswith('#!'):
        return None, facts
    return shebang[2:].strip(), facts


def run(action, module_name, module_args, task_vars):
    """The direct answer of ``module_name``'s node code to ``module_args``, shaped as ``_execute_module``'s result:
    the answer's keys, or ``{failed, msg}`` (with ``module_stderr``, ``rc``); ``ansible_facts`` holds a discovered
    interpreter. Connection failures raise as they do for a module."""
    interpreter, facts = _interpreter(action, module_name, module_args, task_vars)
    if not interpreter:
        return {'failed': True, 'msg': 'no Python interpreter for %s on the node' % module_name}
    env = action._compute_environment_string()
    # -I: isolated, nothing from the working folder (a json.py planted there), the user's site or PYTHON* variables
    command = '%s%s -I -c %s' % (env + ' ' if env else '', interpreter, shlex.quote(BOOTSTRAP))
    payload = '{"sources": %s, "args": %s}' % (sources_json(), json.dumps(module_args, sort_keys=True))
    res = action._low_level_execute_command(command, sudoable=True, in_data=payload.encode('utf-8'))
    out = res.get('stdout') or ''
    try:
        answer = json.loads(out[out.index('{'):]) if '{' in out else None
    except ValueError:
        answer = None
    if res.get('rc') != 0 or not isinstance(answer, dict):
        err = (res.get('stderr') or '').strip().splitlines()
        return {'failed': True, 'rc': res.get('rc'), 'module_stderr': res.get('stderr') or '',
                'msg': "the node's Python (%s) gave no answer (rc %s)%s" % (interpreter, res.get('rc'),
                                                                            ': %s' % err[-1][:500] if err else '')}
    # the probe's answer holds no facts: none the node writes is taken, only the interpreter Ansible discovered
    answer.pop('ansible_facts', None)
    if facts:
        answer['ansible_facts'] = facts
    return answer

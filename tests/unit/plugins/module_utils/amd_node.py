"""A fake AMD node for the probe engine: ``LiveRunner`` callbacks that answer the amd-smi / rocm-smi commands
with the fixtures of tests/fixtures/amd/ (command not found for every other tool), and the facts of it."""
import os

from ansible_collections.xuanwu.cluster.plugins.module_utils import _probe

HERE = os.path.dirname(os.path.abspath(__file__))
AMD = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'fixtures', 'amd'))

# command line (without the tool's directory) -> fixture of the healthy 8x MI300X node
HEALTHY = {
    'amd-smi static --json': 'amd-smi_static_--json_mi300x8-derived.json',
    'amd-smi metric --json': 'amd-smi_metric_--json_mi300x8-derived.json',
    'amd-smi bad-pages --json': 'amd-smi_bad-pages_--json_mi300x8-derived.json',
    'amd-smi topology --json': 'amd-smi_topology_--json_mi300x8-derived.json',
    'amd-smi xgmi --json': 'amd-smi_xgmi_--json_mi300x8-derived.json',
    'amd-smi version': 'amd-smi_version.txt',
    'rocm-smi --showallinfo --json': 'rocm-smi_--showallinfo_--json_mi300x8-derived.json',
    'rocm-smi --showtopo --json': 'rocm-smi_--showtopo_--json_mi300x8-derived.json',
}


def fixture(name):
    with open(os.path.join(AMD, name)) as handle:
        return handle.read()


def runner(tools=('amd-smi', 'rocm-smi'), replace=None, ran=None):
    """A LiveRunner on a node that has ``tools``; ``replace`` maps a command line to another fixture file;
    ``ran`` (a list) collects every argv run."""
    files = dict(HEALTHY, **(replace or {}))

    def which(name):
        return '/usr/bin/%s' % name if name in tools else None

    def run(argv):
        if ran is not None:
            ran.append(list(argv))
        line = ' '.join([os.path.basename(argv[0])] + list(argv[1:]))
        if line in files and argv[0].split('/')[-1] in tools:
            return 0, fixture(files[line]), ''
        return 127, '', '%s: command not found' % argv[0]

    return _probe.LiveRunner(run, which, timeout=0)


def facts(tools=('amd-smi', 'rocm-smi'), replace=None, groups=_probe.GROUPS):
    return _probe.probe(runner(tools, replace), groups=groups)

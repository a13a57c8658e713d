# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet benchmark: a playbook (validate.yml) over N replayed hosts against `ansible -m ping` on the same inventory.

    python3 bench/run.py [--hosts 50,200,1000] [--rounds 3] [--forks 25] [--connection local|ssh]
                         [--playbook playbooks/validate.yml] [-e VARS ...] [--json out.json]

For each host count, each round runs ping and the playbook back to back (the order alternates
between rounds so that neither always runs on a warmer machine). Per command it measures:

- wall time (start of the process to its exit);
- controller CPU: user + system time of the ansible process and all its descendants, as the
  delta of getrusage(RUSAGE_CHILDREN) of this script around the command. This script is a child
  subreaper (prctl PR_SET_CHILD_SUBREAPER), so processes that detach from ansible (the ssh
  ControlPersist masters) are reparented to it; they are stopped and reaped after each command,
  so their CPU is counted too and every command starts without open masters;
- peak RSS, two figures: "max process" is ru_maxrss from wait4() of the ansible process (the
  largest RSS of any single process of its tree, not a sum), "tree sum" is the peak of the summed
  RSS of every process of the controller tree, sampled from /proc at about 10 Hz (shared pages of
  forked workers are counted once per process, so the sum is an upper bound).

The hosts replay the healthy demo bundle (`xuanwu_replay_dir`). With `--connection local` the
network is taken out: the figure is the collection's own cost per host. With `--connection ssh`
the script starts its own sshd on 127.0.0.1 (a free port, its own host and client keys in a
temporary directory) and both commands reach every host through it; see bench/README.md.
Medians over the rounds are printed with their ratios, one `XUANWU_BENCH {json}` line per host
count, and the ratio's flatness (ratio at the largest host count / ratio at the smallest).
Linux only (/proc, prctl).
"""
from __future__ import print_function

import argparse
import ctypes
import glob
import datetime
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUNDLE = os.path.join(ROOT, 'inventories', 'demo-bundles', 'gpu-node01')
# a failing host of --failing-share: the demo's NVLink fault (gpu.topology, gpu.nvlink_down; inventories/demo/README.md)
FAULT_BUNDLE = os.path.join(ROOT, 'inventories', 'demo-bundles', 'gpu-node02')
PR_SET_CHILD_SUBREAPER = 36
PAGE = os.sysconf('SC_PAGE_SIZE')
MIB = 1024.0 * 1024.0


class Interrupted(Exception):
    """SIGTERM or SIGINT: clean up and stop."""


def on_signal(signum, _frame):
    raise Interrupted('signal %d' % signum)


def counts(text):
    """'50,200,1000' -> [50, 200, 1000]; positive integers only."""
    items = [item.strip() for item in text.split(',')]
    if not all(item.isdigit() and int(item) > 0 for item in items):
        raise argparse.ArgumentTypeError('want positive integers separated by commas, e.g. 50,200,1000: %r' % text)
    return [int(item) for item in items]


def proc_table():
    """{pid: (ppid, rss bytes, state)} of every process that can be read now."""
    table = {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name, 'rb') as handle:
                stat = handle.read()
        except (IOError, OSError):
            continue
        fields = stat[stat.rfind(b')') + 2:].split()
        table[int(name)] = (int(fields[1]), int(fields[21]) * PAGE, fields[0])
    return table


def descendants(table, root, exclude=()):
    """Pids below root (not root itself), leaving out the subtrees of the pids in exclude."""
    children = {}
    for pid, (ppid, _rss, _state) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid in exclude:
            continue
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


class TreeRss(threading.Thread):
    """Peak of the summed RSS of this script's descendants (the sshd subtree left out), ~10 Hz."""

    def __init__(self, exclude):
        super(TreeRss, self).__init__()
        self.daemon = True
        self.exclude = exclude
        self.peak = 0
        self.samples = 0
        self.done = threading.Event()

    def run(self):
        me = os.getpid()
        while not self.done.is_set():
            table = proc_table()
            total = sum(table[pid][1] for pid in descendants(table, me, self.exclude) if pid in table)
            self.peak = max(self.peak, total)
            self.samples += 1
            self.done.wait(0.1)


def reap_detached(keep):
    """Stop and reap the processes reparented to this script; return how many were still running
    (the ssh ControlPersist masters not yet idle for ControlPersist; the others are exited forks)."""
    table = proc_table()
    me = os.getpid()
    pids = [pid for pid, (ppid, _rss, _state) in table.items() if ppid == me and pid not in keep]
    running = sum(1 for pid in pids if table[pid][2] != b'Z')
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + 10
    for pid in pids:
        while True:
            try:
                done, _status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                break
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                deadline += 5
            time.sleep(0.02)
    return running


def reaped_children_cpu(pid):
    """CPU seconds of the children that pid has reaped (cutime + cstime of /proc/pid/stat)."""
    with open('/proc/%d/stat' % pid, 'rb') as handle:
        stat = handle.read()
    fields = stat[stat.rfind(b')') + 2:].split()
    return (int(fields[13]) + int(fields[14])) / float(os.sysconf('SC_CLK_TCK'))


def node_side_cpu(sshd_pid, before):
    """CPU of the sshd sessions (the "node" side over ssh: sshd, shells, modules) since before,
    once the sessions of the command have ended (at most 10 s after the masters stopped)."""
    deadline = time.monotonic() + 10
    while descendants(proc_table(), sshd_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return reaped_children_cpu(sshd_pid) - before


class Runner(object):
    """Runs one command at a time and measures it; knows the pids it must not touch (sshd)."""

    def __init__(self, work, env):
        self.work = work
        self.env = env
        self.keep = set()
        self.sshd_pid = None
        self.current = None
        self.count = 0

    def measure(self, cmd, expect=(0,)):
        self.count += 1
        log = os.path.join(self.work, 'command-%d.log' % self.count)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        node_before = reaped_children_cpu(self.sshd_pid) if self.sshd_pid else None
        sampler = TreeRss(self.keep)
        sampler.start()
        start = time.perf_counter()
        with open(log, 'w') as out:
            self.current = subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        _pid, status, usage = os.wait4(self.current.pid, 0)
        elapsed = time.perf_counter() - start
        self.current.returncode = 0  # reaped by wait4 above: keep Popen from waiting again
        self.current = None
        detached = reap_detached(self.keep)
        node_cpu = node_side_cpu(self.sshd_pid, node_before) if self.sshd_pid else None
        sampler.done.set()
        sampler.join()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
        if code not in expect:
            sys.stderr.write(read(log)[-3000:])
            raise SystemExit('%s exited %d (output above)' % (os.path.basename(cmd[0]), code))
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return {'wall_s': elapsed, 'cpu_s': cpu, 'max_process_rss_mib': usage.ru_maxrss / 1024.0,
                'tree_rss_peak_mib': sampler.peak / MIB, 'rss_samples': sampler.samples, 'detached_reaped': detached,
                'node_cpu_s': node_cpu}

    def stop(self):
        if self.current is not None and self.current.returncode is None:
            try:
                os.killpg(self.current.pid, signal.SIGTERM)
                self.current.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(self.current.pid, signal.SIGKILL)
                self.current.wait()
        reap_detached(self.keep)


def read(path):
    with open(path) as handle:
        return handle.read()


def free_port():
    """A TCP port free on 127.0.0.1 now (sshd binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class Sshd(object):
    """A loopback sshd for the running user: own host key, own client key, own known_hosts."""

    def __init__(self, work, sshd_path):
        self.dir = os.path.join(work, 'ssh')
        os.mkdir(self.dir, 0o700)
        self.sshd = sshd_path
        self.key = os.path.join(self.dir, 'client_key')
        self.known_hosts = os.path.join(self.dir, 'known_hosts')
        self.config = os.path.join(self.dir, 'sshd_config')
        self.log = os.path.join(self.dir, 'sshd.log')
        self.port = None
        self.proc = None
        self.user = None

    def _config(self, extra):
        options = [
            'ListenAddress 127.0.0.1',
            'HostKey %s' % os.path.join(self.dir, 'host_key'),
            'AuthorizedKeysFile %s' % os.path.join(self.dir, 'authorized_keys'),
            'PidFile none',
            'PubkeyAuthentication yes',
            'PasswordAuthentication no',
            'KbdInteractiveAuthentication no',
            'UsePAM no',
            'StrictModes no',
            'PermitRootLogin prohibit-password',
            # one ControlPersist master per host, 25 forks opening them at once: no refusals
            'MaxStartups 1000',
            'MaxSessions 100',
            'Subsystem sftp internal-sftp',
            'LogLevel ERROR',
        ] + extra
        with open(self.config, 'w') as handle:
            handle.write('\n'.join(options) + '\n')

    def _check_config(self):
        return subprocess.run([self.sshd, '-t', '-f', self.config], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, check=False)

    def start(self, runner):
        import pwd  # pylint: disable=import-outside-toplevel
        self.user = pwd.getpwuid(os.getuid()).pw_name
        for name in ('host_key', 'client_key'):
            subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'xuanwu-bench', '-f', os.path.join(self.dir, name)],
                           check=True, stdout=subprocess.DEVNULL)
        shutil.copy(self.key + '.pub', os.path.join(self.dir, 'authorized_keys'))
        # OpenSSH 9.8+ penalises sources that disconnect early; the bench is its only source
        self._config(['PerSourcePenalties no'])
        check = self._check_config()
        if check.returncode != 0 and 'PerSourcePenalties' in check.stdout:
            self._config([])
            check = self._check_config()
        marker = 'Missing privilege separation directory: '
        if check.returncode != 0 and marker in check.stdout and os.geteuid() == 0:
            # sshd started as root needs its privilege separation directory (the distribution's
            # service creates it at boot; a container may not have it)
            privsep = check.stdout.split(marker, 1)[1].split()[0]
            os.makedirs(privsep, 0o755)
            sys.stderr.write('bench: created %s (sshd privilege separation directory)\n' % privsep)
            check = self._check_config()
        if check.returncode != 0:
            raise SystemExit('bench: sshd rejects its configuration:\n%s' % check.stdout)
        self.port = free_port()
        with open(self.log, 'w') as log:
            self.proc = subprocess.Popen([self.sshd, '-D', '-e', '-f', self.config, '-p', str(self.port)],
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        runner.keep.add(self.proc.pid)
        runner.sshd_pid = self.proc.pid
        # the host key is this run's own: known before the first contact, as a site's known_hosts would have it
        with open(os.path.join(self.dir, 'host_key.pub')) as handle:
            host_key = ' '.join(handle.read().split()[:2])
        with open(self.known_hosts, 'w') as handle:
            handle.write('[127.0.0.1]:%d %s\n' % (self.port, host_key))
        deadline = time.monotonic() + 15
        while True:
            if self.proc.poll() is not None:
                raise SystemExit('bench: sshd exited %d:\n%s' % (self.proc.returncode, read(self.log)))
            probe = subprocess.run(['ssh', '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=3'] + self.options()
                                   + ['-i', self.key, '-p', str(self.port), '-l', self.user, '127.0.0.1', 'true'],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
            if probe.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise SystemExit('bench: cannot log in to the bench sshd on 127.0.0.1:%d:\n%s\n%s'
                                 % (self.port, probe.stdout, read(self.log)))
            time.sleep(0.2)

    def options(self):
        # the host key this run generated, verified from the first contact
        return ['-o', 'UserKnownHostsFile=%s' % self.known_hosts, '-o', 'StrictHostKeyChecking=yes']

    def host_vars(self):
        return {'ansible_connection': 'ssh', 'ansible_host': '127.0.0.1', 'ansible_port': self.port,
                'ansible_user': self.user, 'ansible_ssh_private_key_file': self.key,
                'ansible_ssh_common_args': ' '.join(self.options())}

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def failing_hosts(hosts, share):
    """The names of the hosts that replay the fault bundle: every round(1/share)-th host (none when share is 0)."""
    if not share:
        return []
    step = max(1, int(round(1.0 / share)))
    return ['bench%04d' % i for i in range(hosts) if i % step == step - 1]


def inventory(path, hosts, connection_vars, control_dir, failing=()):
    """Inventory of `hosts` replayed hosts (those of `failing` replay the fault bundle). Over ssh each host gets its own
    ControlPath directory: ansible's ControlPath is a hash of host, port and user, the same for every host on 127.0.0.1,
    and a real fleet opens one master per host."""
    group = {'ansible_python_interpreter': sys.executable, 'xuanwu_profile': 'h200x4-nvlink', 'xuanwu_replay_dir': BUNDLE}
    group.update(connection_vars)
    lines = ['all:', '  vars:'] + ['    %s: %s' % (key, json.dumps(value)) for key, value in sorted(group.items())]
    lines.append('  hosts:')
    failing = set(failing)
    for i in range(hosts):
        own = {}
        if control_dir:
            own['ansible_control_path_dir'] = os.path.join(control_dir, str(i))
        if 'bench%04d' % i in failing:
            own['xuanwu_replay_dir'] = FAULT_BUNDLE
        lines.append('    bench%04d: %s' % (i, json.dumps(own, sort_keys=True)))
    with open(path, 'w') as handle:
        handle.write('\n'.join(lines) + '\n')


def median(runs, key):
    return statistics.median(run[key] for run in runs)


def summarise(hosts, rounds, args, runs, version):
    ping, play = runs['ping'], runs['validate']
    med = dict((name + '_' + key, median(runs[name], key)) for name in runs for key in ('wall_s', 'cpu_s'))
    result = {
        'hosts': hosts, 'rounds': rounds, 'forks': args.forks, 'ansible': version, 'cpus': os.cpu_count(),
        'connection': args.connection, 'playbook': os.path.relpath(args.playbook, ROOT), 'extra_vars': args.extra_vars,
        'fact_cache': args.fact_cache,
        'validate_s': [round(r['wall_s'], 2) for r in play], 'ping_s': [round(r['wall_s'], 2) for r in ping],
        'validate_cpu_s': [round(r['cpu_s'], 2) for r in play], 'ping_cpu_s': [round(r['cpu_s'], 2) for r in ping],
        'validate_median_s': round(med['validate_wall_s'], 2), 'ping_median_s': round(med['ping_wall_s'], 2),
        'validate_cpu_median_s': round(med['validate_cpu_s'], 2), 'ping_cpu_median_s': round(med['ping_cpu_s'], 2),
        'ratio_validate_to_ping': round(med['validate_wall_s'] / med['ping_wall_s'], 2),
        'cpu_ratio_validate_to_ping': round(med['validate_cpu_s'] / med['ping_cpu_s'], 2),
        'validate_per_host_ms': round(1000 * med['validate_wall_s'] / hosts, 1),
        'validate_cpu_per_host_ms': round(1000 * med['validate_cpu_s'] / hosts, 1),
        'ping_per_host_ms': round(1000 * med['ping_wall_s'] / hosts, 1),
        # peaks: the largest over the rounds
        'validate_tree_rss_peak_mib': round(max(r['tree_rss_peak_mib'] for r in play), 1),
        'ping_tree_rss_peak_mib': round(max(r['tree_rss_peak_mib'] for r in ping), 1),
        'validate_max_process_rss_mib': round(max(r['max_process_rss_mib'] for r in play), 1),
        'ping_max_process_rss_mib': round(max(r['max_process_rss_mib'] for r in ping), 1),
        'ssh_masters_per_command': [r['detached_reaped'] for r in ping + play] if args.connection == 'ssh' else None,
    }
    if args.connection == 'ssh':
        # over loopback ssh the "nodes" share the controller's cores: their CPU, for reading the wall times
        result['ping_node_cpu_median_s'] = round(median(ping, 'node_cpu_s'), 2)
        result['validate_node_cpu_median_s'] = round(median(play, 'node_cpu_s'), 2)
    return result


COLUMNS = (('hosts', 'hosts', '%d'), ('failing', 'failing_hosts', '%d'), ('conn', 'connection', '%s'), ('ping s', 'ping_median_s', '%.2f'),
           ('play s', 'validate_median_s', '%.2f'),
           ('ratio', 'ratio_validate_to_ping', '%.2f'), ('ping CPU s', 'ping_cpu_median_s', '%.2f'),
           ('play CPU s', 'validate_cpu_median_s', '%.2f'), ('CPU ratio', 'cpu_ratio_validate_to_ping', '%.2f'),
           ('play ms/host', 'validate_per_host_ms', '%.1f'), ('play CPU ms/host', 'validate_cpu_per_host_ms', '%.1f'),
           ('tree RSS MiB ping', 'ping_tree_rss_peak_mib', '%.0f'), ('tree RSS MiB play', 'validate_tree_rss_peak_mib', '%.0f'),
           ('max proc RSS MiB play', 'validate_max_process_rss_mib', '%.0f'))


def table(results):
    rows = [[title for title, _key, _fmt in COLUMNS]] + [[fmt % result.get(key, 0) for _title, key, fmt in COLUMNS] for result in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return '\n'.join('  '.join(cell.rjust(width) for cell, width in zip(row, widths)) for row in rows)


def flatness(results):
    """Ratio at the largest host count / ratio at the smallest, None with fewer than two host counts."""
    ordered = sorted(results, key=lambda result: result['hosts'])
    if len(ordered) < 2 or ordered[0]['hosts'] == ordered[-1]['hosts']:
        return None
    return round(ordered[-1]['ratio_validate_to_ping'] / ordered[0]['ratio_validate_to_ping'], 2)


def write_json(path, document, results):
    if path:
        document.update(load_average_end=os.getloadavg(), flatness=flatness(results))
        with open(path, 'w') as handle:
            json.dump(document, handle, indent=1, sort_keys=True)


def report(results):
    """The table of the medians, the flatness of the ratio and, over ssh, the node side."""
    print('\n"play" is the playbook measured; medians over the rounds; RSS peaks are the largest over the rounds: "tree" is'
          ' the summed RSS of the controller process tree sampled at ~10 Hz, "max proc" the largest single process (wait4 ru_maxrss)')
    print(table(results))
    for result in results:
        print('%d hosts: %s over %s, %d round(s), forks %d, fact cache %s, %s'
              % (result['hosts'], result['playbook'], result['connection'], result['rounds'], result['forks'],
                 result.get('fact_cache', 'memory'), result['ansible']))
        if result.get('validate_node_cpu_median_s') is not None:
            print('  node-side CPU (sshd sessions and modules, same machine) ping %.2f s, play %.2f s; ssh masters still open at exit, per command %s'
                  % (result['ping_node_cpu_median_s'], result['validate_node_cpu_median_s'], result['ssh_masters_per_command']))
    groups = {}
    for result in results:
        groups.setdefault((result['connection'], result['playbook']), []).append(result)
    for (connection, playbook), group in sorted(groups.items()):
        flat = flatness(group)
        if flat is not None:
            ordered = sorted(group, key=lambda result: result['hosts'])
            print('ratio flatness, %s over %s (ratio at %d hosts / ratio at %d hosts): %.2f'
                  % (playbook, connection, ordered[-1]['hosts'], ordered[0]['hosts'], flat))


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--hosts', type=counts, default=[50], help='host counts separated by commas (default 50)')
    parser.add_argument('--rounds', type=counts, default=[3],
                        help='rounds per host count (default 3); one value for all, or one per host count, e.g. 3,3,1')
    parser.add_argument('--forks', type=int, default=25, help='ANSIBLE_FORKS (default 25)')
    parser.add_argument('--fact-cache', choices=('memory', 'jsonfile'), default='memory',
                        help="ANSIBLE_CACHE_PLUGIN (default memory; jsonfile is the repository's ansible.cfg, in a folder of "
                             "the bench's own, emptied before each command)")
    parser.add_argument('--connection', choices=('local', 'ssh'), default='local')
    parser.add_argument('--playbook', default=os.path.join(ROOT, 'playbooks', 'validate.yml'),
                        help='the playbook measured against ping (default playbooks/validate.yml)')
    parser.add_argument('-e', '--extra-vars', action='append', default=[], metavar='VARS',
                        help='passed as -e to both commands (repeatable)')
    parser.add_argument('--failing-share', type=float, default=0.0, metavar='F',
                        help='share of the hosts that replay the demo\'s NVLink-fault bundle (0.1: every 10th); the playbook '
                             'must then exit 2 and its report fail exactly those hosts')
    parser.add_argument('--json', metavar='FILE', help='write every run and the summaries to FILE')
    parser.add_argument('--from-json', nargs='+', metavar='FILE',
                        help='measure nothing: print the table and the flatness of the results in these --json files')
    parser.add_argument('--sshd', default=shutil.which('sshd') or '/usr/sbin/sshd', help='the sshd binary (--connection ssh)')
    args = parser.parse_args(argv)
    args.playbook = os.path.abspath(args.playbook)
    if args.forks < 1:
        parser.error('--forks must be at least 1')
    if not 0 <= args.failing_share <= 1:
        parser.error('--failing-share must be between 0 and 1')
    if len(args.rounds) == 1:
        args.rounds = args.rounds * len(args.hosts)
    if len(args.rounds) != len(args.hosts):
        parser.error('--rounds wants one value or one per host count (%d)' % len(args.hosts))
    if not os.path.isfile(args.playbook):
        parser.error('no playbook at %s' % args.playbook)
    if not os.path.isdir(BUNDLE):
        parser.error('no replay bundle at %s: run `make demo-bundles` first' % BUNDLE)
    if args.connection == 'ssh' and not os.access(args.sshd, os.X_OK):
        parser.error('no sshd at %s: install openssh-server (Debian: apt-get install -y openssh-server) or pass --sshd' % args.sshd)
    return args


def check_report(reports_dir, failing):
    """The newest report under ``reports_dir`` fails exactly ``failing`` and passes every other host; else SystemExit."""
    paths = sorted(glob.glob(os.path.join(reports_dir, '*', 'report.json')), key=os.path.getmtime)
    if not paths:
        raise SystemExit('bench: the playbook wrote no report under %s' % reports_dir)
    with open(paths[-1]) as handle:
        summary = json.load(handle)['summary']
    if sorted(summary.get('failed_hosts') or []) != sorted(failing):
        raise SystemExit('bench: the report failed %s, expected %s' % (summary.get('failed_hosts'), sorted(failing)))


def fact_cache_dir(runner):
    """The jsonfile fact cache's folder of the bench's commands (none with the memory cache)."""
    return runner.env.get('ANSIBLE_CACHE_PLUGIN_CONNECTION') or os.path.join(runner.work, 'facts')


def run_host_count(hosts, rounds, args, runner, commands, version, failing=(), reports_dir=None):
    runs = {'ping': [], 'validate': []}
    for rnd in range(rounds):
        order = ['ping', 'validate'] if rnd % 2 == 0 else ['validate', 'ping']
        for name in order:
            shutil.rmtree(fact_cache_dir(runner), ignore_errors=True)      # every command starts with no cached fact
            load = os.getloadavg()[0]
            run = runner.measure(commands[name], expect=(2,) if failing and name == 'validate' else (0,))
            if name == 'validate' and reports_dir:
                check_report(reports_dir, failing)
            run['load_1m_at_start'] = load
            runs[name].append(run)
            sys.stderr.write('bench: %d hosts round %d %-8s %7.2f s wall %7.2f s CPU %6.0f MiB tree RSS\n'
                             % (hosts, rnd + 1, name, run['wall_s'], run['cpu_s'], run['tree_rss_peak_mib']))
            sys.stderr.flush()
    result = summarise(hosts, rounds, args, runs, version)
    result['failing_hosts'] = len(failing)
    return runs, result


def main(argv=None):
    args = parse_args(argv)
    if args.from_json:
        results = []
        for path in args.from_json:
            with open(path) as handle:
                results += json.load(handle)['results']
        report(results)
        return 0
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit('bench: prctl(PR_SET_CHILD_SUBREAPER) failed: CPU of detached processes could not be counted')
    bindir = os.path.dirname(os.path.abspath(sys.executable))
    work = tempfile.mkdtemp(prefix='xuanwu-bench-')
    # own temporary directories: another ansible run of the same user cleaning ~/.ansible/tmp
    # must not take the module files of this one away
    env = dict(os.environ, ANSIBLE_FORKS=str(args.forks), ANSIBLE_CACHE_PLUGIN=args.fact_cache,
               ANSIBLE_LOCAL_TEMP=os.path.join(work, 'tmp-local'), ANSIBLE_REMOTE_TMP=os.path.join(work, 'tmp-remote'),
               PATH=bindir + os.pathsep + os.environ.get('PATH', ''))
    if args.fact_cache == 'jsonfile':
        # the repository's setting, in a folder of the bench's own that each command starts without (fact_cache_dir)
        env['ANSIBLE_CACHE_PLUGIN_CONNECTION'] = os.path.join(work, 'facts')
    runner = Runner(work, env)
    sshd = None
    started = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    load_start = os.getloadavg()
    extra = []
    for value in args.extra_vars:
        extra += ['-e', value]
    try:
        connection_vars, control_dir = {'ansible_connection': 'local'}, None
        if args.connection == 'ssh':
            sshd = Sshd(work, args.sshd)
            sshd.start(runner)
            connection_vars, control_dir = sshd.host_vars(), os.path.join(work, 'c')
        version = subprocess.run([os.path.join(bindir, 'ansible'), '--version'], stdout=subprocess.PIPE,
                                 universal_newlines=True, check=False).stdout.split('\n')[0]
        print('bench: %s, %s cpus, load average at start %.2f %.2f %.2f, %s, connection %s, forks %d, rounds %s, playbook %s, '
              'fact cache %s' % (started, os.cpu_count(), load_start[0], load_start[1], load_start[2], version, args.connection,
                                 args.forks, ','.join(str(r) for r in args.rounds), os.path.relpath(args.playbook, ROOT),
                                 args.fact_cache))
        sys.stdout.flush()
        results = []
        document = {'started': started, 'cpus': os.cpu_count(), 'load_average_start': load_start, 'ansible': version,
                    'argv': sys.argv, 'results': results, 'runs': {}}
        for hosts, rounds in zip(args.hosts, args.rounds):
            inv = os.path.join(work, 'hosts-%d.yml' % hosts)
            failing = failing_hosts(hosts, args.failing_share)
            inventory(inv, hosts, connection_vars, control_dir, failing)
            reports_dir = os.path.join(work, 'reports-%d' % hosts)
            commands = {
                'validate': [os.path.join(bindir, 'ansible-playbook'), '-i', inv, args.playbook,
                             '-e', 'xuanwu_reports_dir=%s' % reports_dir] + extra,
                'ping': [os.path.join(bindir, 'ansible'), '-i', inv, 'all', '-m', 'ansible.builtin.ping'] + extra,
            }
            checked = reports_dir if os.path.basename(args.playbook) == 'validate.yml' else None
            runs, result = run_host_count(hosts, rounds, args, runner, commands, version, failing, checked)
            results.append(result)
            document['runs'][str(hosts)] = runs
            print('XUANWU_BENCH ' + json.dumps(result, sort_keys=True))
            sys.stdout.flush()
            write_json(args.json, document, results)  # after each host count: a stopped run keeps what it measured
        write_json(args.json, document, results)
        report(results)
        print('load average at end %.2f %.2f %.2f' % os.getloadavg())
    except Interrupted as exc:
        sys.stderr.write('bench: stopped (%s); cleaning up\n' % exc)
        return 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        runner.stop()
        if sshd is not None:
            sshd.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())

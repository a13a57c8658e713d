"""Test double of Slurm's ``scontrol``, ``sinfo``, ``srun`` and ``scancel`` (the name it is called by decides
which), for the scheduler role's and the job runner's tests. Not Slurm: ``install(folder)`` writes the
wrappers into ``folder``; the double keeps the nodes (and the jobs srun started) in
``slurm-double-state.json`` there and logs every call to ``slurm-double-calls.jsonl``.

``srun --nodelist=A,B --nodes=2 --ntasks-per-node=1 --job-name=NAME CMD...`` allocates a job id, records
``{"jobs": {ID: {"name", "nodes", "state": "RUNNING", "pid"}}}`` and runs CMD once per node, here, with
``SLURM_JOB_ID``, ``SLURMD_NODENAME``, ``SLURM_NODEID`` and ``SLURM_PROCID`` set; the job ends COMPLETED or
FAILED. A node that is unknown, DOWN or drained fails the allocation as Slurm does. ``scancel --name=NAME`` or
``scancel ID`` marks the running jobs CANCELLED and sends SIGTERM to their srun.

State: ``{"nodes": {NAME: {"state": "IDLE", "reason": "", "partitions": ["gpu"], "jobs_for_reads": N}}}``.
A node with ``jobs_for_reads`` N keeps running jobs (MIXED) while N more reads of a drained node happen;
-1 means the jobs never end. Output shapes follow Slurm 22.05 (``scontrol --oneliner show node``,
``sinfo -h -N -o %N|%P|%T``); only what the role uses is implemented.

What a node says of itself: ``nodes/NAME/systemctl`` (``systemctl is-active slurmd``: the node's ``"slurmd"``,
``active`` when not given; exit 3 unless active) and ``nodes/NAME/slurmd`` (``slurmd -C``: the node's
``"hardware"`` ``{"cpus", "real_memory", "gres"}``, by default what ``scontrol show node`` configures, 16 CPUs and
64000 MB), one pair per node, as each node has its own.

A file ``hold-drain`` in the folder holds every drain (``scontrol update ... state=DRAIN``) until it is removed.
"""
import fcntl
import json
import os
import signal
import subprocess
import sys

STATE = 'slurm-double-state.json'
CALLS = 'slurm-double-calls.jsonl'
WRAPPER = "#!/bin/sh\nexec '%s' '%s' '%s' %s \"$@\"\n"


def _wrapper(path, folder, tool):
    with open(path, 'w') as handle:
        handle.write(WRAPPER % (sys.executable, os.path.abspath(__file__), folder, tool))
    os.chmod(path, 0o700)


def install(folder, nodes):
    """Write ``scontrol`` and ``sinfo`` into ``folder`` (a str), each node's ``nodes/NAME/systemctl`` and
    ``nodes/NAME/slurmd``, and the state of ``nodes``; returns the folder."""
    for tool in ('scontrol', 'sinfo', 'srun', 'scancel'):
        _wrapper(os.path.join(folder, tool), folder, tool)
    for name in nodes:
        os.makedirs(os.path.join(folder, 'nodes', name), exist_ok=True)
        for tool in ('systemctl', 'slurmd'):
            _wrapper(os.path.join(folder, 'nodes', name, tool), folder, '%s@%s' % (tool, name))
    with open(os.path.join(folder, STATE), 'w') as handle:
        json.dump({'nodes': nodes}, handle)
    return folder


def load():
    with open(STATE) as handle:
        return json.load(handle)


def save(state):
    """Whole or not at all: a reader never sees a half-written state, and a double killed mid-write leaves the old
    one (the rollout tests kill processes while a drain is under way and read the state at once)."""
    part = '%s.%d.part' % (STATE, os.getpid())
    with open(part, 'w') as handle:
        json.dump(state, handle, indent=2)
    os.replace(part, STATE)


def flags(node):
    return node['state'].split('+')


def show(state, name):
    node = state['nodes'].get(name)
    if node is None:
        sys.stderr.write('Node %s not found\n' % name)
        return 1
    if 'DRAIN' in flags(node) and node.get('jobs_for_reads', 0) > 0:
        node['jobs_for_reads'] -= 1
        if node['jobs_for_reads'] == 0:
            node['state'] = '+'.join(['IDLE'] + flags(node)[1:])
    save(state)
    reason = ' Reason=%s [root@2026-12-01T01:00:00]' % node['reason'] if node.get('reason') else ''
    cpus = 0 if flags(node)[0] == 'IDLE' else 8
    sys.stdout.write('NodeName=%s Arch=x86_64 CoresPerSocket=8 CPUAlloc=%d CPUEfctv=16 CPUTot=16 CPULoad=0.00 '
                     'NodeAddr=%s NodeHostName=%s Version=22.05.8 RealMemory=64000 AllocMem=0 FreeMem=60000 Sockets=2 '
                     'Boards=1 State=%s ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=%s '
                     'BootTime=2026-12-01T00:00:00 SlurmdStartTime=2026-12-01T00:00:10 LastBusyTime=2026-12-01T00:30:00 '
                     'CfgTRES=cpu=16,mem=64000M,billing=16 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 '
                     'ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s%s\n'
                     % (name, cpus, name, name, node['state'], ','.join(node['partitions']), reason))
    return 0


def update(state, args):
    opts = dict(a.split('=', 1) for a in args)
    opts = dict((k.lower(), v) for k, v in opts.items())
    node = state['nodes'].get(opts.get('nodename'))
    if node is None:
        sys.stderr.write('Invalid node name specified\n')
        return 1
    wanted = opts.get('state', '').lower()
    if wanted == 'drain':
        if not opts.get('reason'):
            sys.stderr.write('You must specify a reason when DOWNING or DRAINING a node. Request denied\n')
            return 1
        if 'DRAIN' not in flags(node):
            node['state'] += '+DRAIN'
        node['reason'] = opts['reason']
    elif wanted == 'resume':
        if 'DRAIN' not in flags(node) and flags(node)[0] != 'DOWN':
            sys.stderr.write('Invalid node state specified\n')
            return 1
        node['state'] = flags(node)[0].replace('DOWN', 'IDLE')
        node['reason'] = ''
    else:
        sys.stderr.write('unsupported update %r\n' % args)
        return 1
    save(state)
    return 0


def sinfo(state):
    for name, node in sorted(state['nodes'].items()):
        words = flags(node)
        if 'DRAIN' in words:
            long_state = 'drained' if words[0] == 'IDLE' else 'draining'
        else:
            long_state = {'DOWN': 'down*'}.get(words[0], words[0].lower())
        for partition in node['partitions']:
            sys.stdout.write('%s|%s|%s\n' % (name, partition, long_state))
    return 0


def locked(func, *args):
    """``func(*args)`` with the state locked: one call at a time (the role runs on several hosts at once)."""
    with open(CALLS, 'a') as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        return func(*args)


def log_call(argv):
    with open(CALLS, 'a') as handle:
        handle.write(json.dumps(argv) + '\n')


def hold_drain(argv):
    """While the file ``hold-drain`` is there, a drain waits (at most 2 min) after writing ``drain-held``: a test kills
    the caller meanwhile, then lets the drain end, as an orphaned worker of a killed ansible-playbook does."""
    import time
    if argv[:2] != ['scontrol', 'update'] or 'state=drain' not in [a.lower() for a in argv] or \
            not os.path.exists('hold-drain'):
        return
    open('drain-held', 'a').close()
    deadline = time.monotonic() + 120
    while os.path.exists('hold-drain') and time.monotonic() < deadline:
        time.sleep(0.05)


def main(argv):
    os.chdir(argv[1])
    argv = argv[2:]
    locked(log_call, argv)
    if argv[0] == 'srun':
        return srun(argv[1:])
    hold_drain(argv)
    return locked(run, argv)


def allocate(opts, name):
    """Record a job of srun's options; (job id, nodes) or (None, error)."""
    state = load()
    nodes = opts.get('--nodelist', '').split(',')
    for node in nodes:
        entry = state['nodes'].get(node)
        if entry is None or 'DRAIN' in flags(entry) or flags(entry)[0] == 'DOWN':
            return None, 'srun: error: Unable to allocate resources: Requested node configuration is not available'
    if opts.get('--nodes') not in (None, str(len(nodes))):
        return None, 'srun: error: --nodes=%s does not match the %d nodes of --nodelist' % (opts['--nodes'], len(nodes))
    job_id = str(state.get('next_job_id', 1000))
    state['next_job_id'] = int(job_id) + 1
    state.setdefault('jobs', {})[job_id] = {'name': name, 'nodes': nodes, 'state': 'RUNNING', 'pid': os.getpid()}
    save(state)
    return job_id, nodes


def end_job(job_id, rc):
    state = load()
    job = state['jobs'][job_id]
    if job['state'] == 'RUNNING':
        job['state'] = 'COMPLETED' if rc == 0 else 'FAILED'
    job['exit_code'] = rc
    save(state)


def srun(args):
    opts = {}
    while args and args[0].startswith('--'):
        key, value = (args.pop(0).split('=', 1) + [''])[:2]
        opts[key] = value
    if not args or '--nodelist' not in opts:
        sys.stderr.write('srun: the double needs --nodelist=... and a command\n')
        return 2
    job_id, nodes = locked(allocate, opts, opts.get('--job-name', args[0]))
    if job_id is None:
        sys.stderr.write(nodes + '\n')
        return 1
    children = []
    for index, node in enumerate(nodes):
        env = dict(os.environ, SLURM_JOB_ID=job_id, SLURM_JOBID=job_id, SLURMD_NODENAME=node,
                   SLURM_NODEID=str(index), SLURM_PROCID=str(index), SLURM_JOB_NODELIST=','.join(nodes))
        children.append(subprocess.Popen(args, env=env))

    def stop(signum, _frame):
        for child in children:
            child.send_signal(signum)
    signal.signal(signal.SIGTERM, stop)
    rcs = [child.wait() for child in children]
    rc = next((r for r in rcs if r != 0), 0)
    locked(end_job, job_id, rc)
    return rc if rc >= 0 else 128 - rc


def scancel(state, args):
    names = [a.split('=', 1)[1] for a in args if a.startswith('--name=')]
    ids = [a for a in args if not a.startswith('-')]
    for job_id, job in sorted(state.get('jobs', {}).items()):
        if job['state'] == 'RUNNING' and (job_id in ids or job['name'] in names):
            job['state'] = 'CANCELLED'
            try:
                os.kill(job['pid'], signal.SIGTERM)
            except ProcessLookupError:
                pass
    save(state)
    return 0


def on_node(state, tool, args):
    """``systemctl is-active UNIT`` and ``slurmd -C`` of one node (``tool`` is ``systemctl@NAME`` or ``slurmd@NAME``)."""
    program, name = tool.split('@', 1)
    node = state['nodes'][name]
    if program == 'systemctl' and args[:1] == ['is-active'] and len(args) == 2:
        unit = node.get('slurmd', 'active') if args[1] in ('slurmd', 'slurmd.service') else 'inactive'
        sys.stdout.write(unit + '\n')
        return 0 if unit == 'active' else 3
    if program == 'slurmd' and args == ['-C']:
        hardware = dict({'cpus': 16, 'real_memory': 64000, 'gres': None}, **node.get('hardware', {}))
        sys.stdout.write('NodeName=%s CPUs=%d Boards=1 SocketsPerBoard=2 CoresPerSocket=%d ThreadsPerCore=1 RealMemory=%d%s\n'
                         'UpTime=0-01:00:00\n' % (name, hardware['cpus'], hardware['cpus'] // 2, hardware['real_memory'],
                                                  ' Gres=%s' % hardware['gres'] if hardware['gres'] else ''))
        return 0
    sys.stderr.write('%s: unsupported arguments %r\n' % (program, args))
    return 2


def run(argv):
    tool = argv[0]
    state = load()
    if '@' in tool:
        return on_node(state, tool, argv[1:])
    args = [a for a in argv[1:] if a not in ('--oneliner', '-o')] if tool == 'scontrol' else argv[1:]
    if tool == 'sinfo' and args[:4] == ['-h', '-N', '-o', '%N|%P|%T']:
        return sinfo(state)
    if tool == 'scontrol' and args[:2] == ['show', 'node'] and len(args) == 3:
        return show(state, args[2])
    if tool == 'scontrol' and args[:1] == ['update']:
        return update(state, args[1:])
    if tool == 'scancel':
        return scancel(state, args)
    sys.stderr.write('%s: unsupported arguments %r\n' % (tool, argv[1:]))
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))

"""Test double of Slurm's ``scontrol`` and ``sinfo`` (the name it is called by decides which), for the
scheduler role's tests. Not Slurm: ``install(folder)`` writes ``scontrol`` and ``sinfo`` wrappers into
``folder``; the double keeps the nodes in ``slurm-double-state.json`` there and logs every call to
``slurm-double-calls.jsonl``.

State: ``{"nodes": {NAME: {"state": "IDLE", "reason": "", "partitions": ["gpu"], "jobs_for_reads": N}}}``.
A node with ``jobs_for_reads`` N keeps running jobs (MIXED) while N more reads of a drained node happen;
-1 means the jobs never end. Output shapes follow Slurm 22.05 (``scontrol --oneliner show node``,
``sinfo -h -N -o %N|%P|%T``); only what the role uses is implemented.
"""
import fcntl
import json
import os
import sys

STATE = 'slurm-double-state.json'
CALLS = 'slurm-double-calls.jsonl'
WRAPPER = "#!/bin/sh\nexec '%s' '%s' '%s' %s \"$@\"\n"


def install(folder, nodes):
    """Write ``scontrol`` and ``sinfo`` into ``folder`` (a str) and the state of ``nodes``; returns the folder."""
    for tool in ('scontrol', 'sinfo'):
        path = os.path.join(folder, tool)
        with open(path, 'w') as handle:
            handle.write(WRAPPER % (sys.executable, os.path.abspath(__file__), folder, tool))
        os.chmod(path, 0o700)
    with open(os.path.join(folder, STATE), 'w') as handle:
        json.dump({'nodes': nodes}, handle)
    return folder


def load():
    with open(STATE) as handle:
        return json.load(handle)


def save(state):
    with open(STATE, 'w') as handle:
        json.dump(state, handle, indent=2)


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


def main(argv):
    os.chdir(argv[1])
    argv = argv[2:]
    # one call at a time: the role runs on several hosts at once, and each call may write the state
    with open(CALLS, 'a') as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.write(json.dumps(argv) + '\n')
        handle.flush()
        return run(argv)


def run(argv):
    tool = argv[0]
    state = load()
    args = [a for a in argv[1:] if a not in ('--oneliner', '-o')] if tool == 'scontrol' else argv[1:]
    if tool == 'sinfo' and args[:4] == ['-h', '-N', '-o', '%N|%P|%T']:
        return sinfo(state)
    if tool == 'scontrol' and args[:2] == ['show', 'node'] and len(args) == 3:
        return show(state, args[2])
    if tool == 'scontrol' and args[:1] == ['update']:
        return update(state, args[1:])
    sys.stderr.write('%s: unsupported arguments %r\n' % (tool, argv[1:]))
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))

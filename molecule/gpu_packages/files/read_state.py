# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Reads, in one round trip, what the gpu_packages scenario verifies on the container and prints it
# as JSON: the named packages' versions and dpkg status, apt-mark's holds, what a login shell gets
# from /etc/profile.d/cuda.sh, the state of the driver services, the apt sources and pins, and the
# fingerprints of the keys in /etc/apt/keyrings.
"""Print the state of the package roles' work as JSON (arguments: package names)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import json
import os
import subprocess
import sys


def run(argv, shell=False):
    """Run a command; return (exit status, stdout stripped)."""
    proc = subprocess.run(argv, shell=shell, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    return proc.returncode, proc.stdout.strip()


def fingerprints(path):
    """Primary key fingerprints of an OpenPGP key file."""
    out = run(['gpg', '--homedir', '/usr/share/keyrings', '--no-keyring', '--trust-model', 'always', '--batch',
               '--with-colons', '--import-options', 'show-only', '--import', path])[1]
    lines = out.splitlines()
    return [nxt.split(':')[9] for line, nxt in zip(lines, lines[1:]) if line.startswith('pub:') and nxt.startswith('fpr:')]


def main():
    state = {'packages': {}, 'units': {}}
    rows = run(['dpkg-query', '-W', '-f', '${Package} ${Version} ${db:Status-Abbrev}\n'] + sys.argv[1:])[1]
    for row in rows.splitlines():
        fields = row.split()
        if len(fields) == 3:
            state['packages'][fields[0]] = {'version': fields[1], 'status': fields[2]}
    state['holds'] = run(['apt-mark', 'showhold'])[1].split()
    rc, out = run('. /etc/profile.d/cuda.sh && command -v nvcc && nvcc --version | tail -n 1 && echo "$CUDA_HOME" && echo "$LD_LIBRARY_PATH"',
                  shell=True)
    state['profile'] = {'rc': rc, 'lines': out.splitlines()}
    for unit in ('nvidia-persistenced', 'nvidia-fabricmanager'):
        state['units'][unit] = {'enabled': run(['systemctl', 'is-enabled', unit])[1], 'active': run(['systemctl', 'is-active', unit])[1]}
    state['files'] = {}
    for path in sorted(glob.glob('/etc/apt/sources.list.d/*') + glob.glob('/etc/apt/preferences.d/*')):
        with open(path, encoding='utf-8') as handle:
            state['files'][path] = handle.read()
    state['keyrings'] = dict((path, fingerprints(path)) for path in sorted(glob.glob('/etc/apt/keyrings/*')))
    state['policy'] = run(['apt-cache', 'policy'] + [name for name in sys.argv[1:] if name.startswith(('nvidia-driver', 'rccl'))])[1]
    state['home_gnupg'] = os.path.isdir(os.path.expanduser('~/.gnupg'))
    print(json.dumps(state))


if __name__ == '__main__':
    main()

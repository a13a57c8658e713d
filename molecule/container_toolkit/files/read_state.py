# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Reads, in one round trip, what the container_toolkit scenario verifies on the container and prints
# it as JSON: the toolkit packages' versions and dpkg status, apt-mark's holds, the engines'
# configuration files (JSON and TOML parsed), the CDI specification, the apt sources, the stand-in
# containerd's main PID and the commands the stand-in nvidia-ctk ran.
"""Print the state of the nvidia_container_toolkit role's work as JSON."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import json
import subprocess
import tomllib

PACKAGES = ['nvidia-container-toolkit', 'nvidia-container-toolkit-base', 'libnvidia-container-tools', 'libnvidia-container1']
FILES = ['/etc/docker/daemon.json', '/etc/containerd/config.toml', '/etc/containerd/conf.d/99-nvidia.toml',
         '/etc/crio/crio.conf.d/99-nvidia.toml', '/etc/cdi/nvidia.yaml']


def output(argv):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True, check=False).stdout


def parsed(path, text):
    if path.endswith('.json'):
        return json.loads(text)
    if path.endswith('.toml'):
        return tomllib.loads(text)
    return None


def main():
    state = {'packages': {}, 'files': {}, 'parsed': {}, 'sources': {}}
    for row in output(['dpkg-query', '-W', '-f', '${Package} ${Version} ${db:Status-Abbrev}\n'] + PACKAGES).splitlines():
        fields = row.split()
        if len(fields) == 3:
            state['packages'][fields[0]] = {'version': fields[1], 'status': fields[2]}
    state['holds'] = output(['apt-mark', 'showhold']).split()
    for path in FILES:
        try:
            with open(path, encoding='utf-8') as handle:
                state['files'][path] = handle.read()
        except FileNotFoundError:
            continue
        state['parsed'][path] = parsed(path, state['files'][path])
    for path in sorted(glob.glob('/etc/apt/sources.list.d/*') + glob.glob('/etc/apt/preferences.d/*')):
        with open(path, encoding='utf-8') as handle:
            state['sources'][path] = handle.read()
    state['containerd_pid'] = output(['systemctl', 'show', '-p', 'MainPID', '--value', 'containerd']).strip()
    try:
        with open('/var/lib/xuanwu-standin/nvidia-ctk.log', encoding='utf-8') as handle:
            state['ctk_log'] = handle.read().splitlines()
    except FileNotFoundError:
        state['ctk_log'] = []
    print(json.dumps(state))


if __name__ == '__main__':
    main()

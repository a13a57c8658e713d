# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Molecule test plumbing: reach the scenario's containers over SSH (pipelining, one multiplexed connection)
instead of `podman exec`, once molecule/shared/prepare.yml has given them a key.

A task through the podman connection costs about four `podman exec` calls; measured on 2 cores, 20 `command`
tasks took 31 s of CPU that way and 9 s over SSH with pipelining. prepare.yml writes
$MOLECULE_EPHEMERAL_DIRECTORY/ssh/hosts.json ({instance: address}); for the instances named there this plugin
gives the connection variables (host_vars precedence, above molecule's inline `ansible_connection`). Without
that file (create, the first play of prepare, a scenario that opts out) nothing changes. A host with
``xuanwu_molecule_ssh_jump`` (another instance's name) is reached through that instance (ProxyCommand)."""
from __future__ import annotations

import json
import os

from ansible.inventory.host import Host
from ansible.plugins.vars import BaseVarsPlugin

DOCUMENTATION = '''
    name: xuanwu_molecule_ssh
    short_description: SSH connection variables for molecule's containers (test plumbing)
    description:
      - For the instances that molecule/shared/prepare.yml listed in $MOLECULE_EPHEMERAL_DIRECTORY/ssh/hosts.json,
        connect over SSH with the scenario's key and pipelining instead of podman exec.
    options: {}
'''


class VarsModule(BaseVarsPlugin):
    REQUIRES_ENABLED = True

    def get_vars(self, loader, path, entities, cache=True):
        super(VarsModule, self).get_vars(loader, path, entities)
        ephemeral = os.environ.get('MOLECULE_EPHEMERAL_DIRECTORY')
        if not ephemeral:
            return {}
        folder = os.path.join(ephemeral, 'ssh')
        try:
            with open(os.path.join(folder, 'hosts.json')) as handle:
                listed = json.load(handle)
            hosts, control_dir = listed['hosts'], listed['control_dir']
        except (OSError, ValueError, KeyError, TypeError):
            return {}
        if not isinstance(entities, list):
            entities = [entities]
        jumps = listed.get('jumps') or {}
        key = os.path.join(folder, 'id_ed25519')
        # the containers' host keys, read through podman by prepare.yml: verified from the first contact
        options = '-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o LogLevel=ERROR' % os.path.join(folder, 'known_hosts')
        for entity in entities:
            if isinstance(entity, Host) and entity.name in hosts:
                # through another container (xuanwu_molecule_ssh_jump): the node sees that container's address, as a
                # node behind a firewall that admits only its controller sees the controller's
                jump = ' -o ProxyCommand="ssh -i %s %s -W %%h:%%p root@%s"' % (key, options, jumps[entity.name]) \
                    if entity.name in jumps else ''
                return {
                    'ansible_connection': 'ansible.builtin.ssh',
                    'ansible_host': hosts[entity.name],
                    'ansible_user': 'root',
                    'ansible_port': 22,
                    'ansible_ssh_private_key_file': key,
                    # the run's own master connections, in a short folder of this run (a socket path has at most
                    # 107 bytes): a master left by an earlier run, to a container now gone, is never reused
                    'ansible_ssh_common_args': '%s -o ControlPath=%s/%%C%s' % (options, control_dir, jump),
                    'ansible_pipelining': True,
                }
        return {}

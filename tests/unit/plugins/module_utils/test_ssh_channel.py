"""Host keys from the first contact: ssh_trust trusts a node's host keys only if they were read over a channel that
verified the node (_mesh.channel_problem); every way an SSH channel skips the check is named."""
import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils._mesh import channel_problem


@pytest.mark.parametrize('connection', ['local', 'ansible.builtin.local', 'containers.podman.podman', 'community.docker.docker'])
def test_local_and_container_channels_need_no_host_key(connection):
    assert channel_problem(connection, False, '-o StrictHostKeyChecking=no') is None


@pytest.mark.parametrize('connection', ['ssh', 'ansible.builtin.ssh', 'smart', None])
def test_ssh_with_checking_on_and_no_option_against_it_is_verified(connection):
    assert channel_problem(connection, True, '-C -o ControlMaster=auto -o ControlPersist=60s') is None
    assert channel_problem(connection, 'True', '-o StrictHostKeyChecking=yes -o UserKnownHostsFile=/etc/xuanwu/known_hosts') is None


@pytest.mark.parametrize('checking', [False, 'False', 'no', '0', 'off'])
def test_checking_off_is_unverified(checking):
    assert 'host key checking is off' in channel_problem('ssh', checking, '')


@pytest.mark.parametrize('args, said', [
    ('-o StrictHostKeyChecking=no', 'StrictHostKeyChecking=no'),
    ('-C -o StrictHostKeyChecking=accept-new', 'StrictHostKeyChecking=accept-new'),
    ('-oStrictHostKeyChecking=off', 'StrictHostKeyChecking=off'),
    ('-o "StrictHostKeyChecking no"', 'StrictHostKeyChecking=no'),
    ('-o stricthostkeychecking=NO', 'stricthostkeychecking=NO'),
    ('-o UserKnownHostsFile=/dev/null', 'UserKnownHostsFile=/dev/null'),
])
def test_every_option_that_skips_the_check_is_named(args, said):
    assert said in channel_problem('ssh', True, '-C ' + args + ' -o ControlPersist=60s')


def test_paramiko_adding_unknown_keys_is_unverified_and_other_plugins_are_not_known_to_verify():
    assert channel_problem('paramiko', True, '', False) is None
    assert 'host_key_auto_add' in channel_problem('paramiko_ssh', True, '', True)
    assert 'not known to verify' in channel_problem('community.general.saltstack', True, '')

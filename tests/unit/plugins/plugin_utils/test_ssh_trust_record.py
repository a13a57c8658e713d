"""The record of an ssh_trust first enrolment (docs/ssh-mesh.md): a new 0600 file in private folders of the running
user, the fingerprints of the keys trusted, and a folder that others could tamper with is refused."""
import base64
import hashlib
import json
import os
import stat

import pytest

from ansible_collections.xuanwu.cluster.plugins.action import ssh_trust_keys
from ansible_collections.xuanwu.cluster.plugins.module_utils import _workdir

KEY = base64.b64encode(b'\x00\x00\x00\x0bssh-ed25519' + b'k' * 32).decode()


def record():
    reads = {'node2': {'host_keys': ['ssh-ed25519 %s' % KEY, 'garbage'], 'ansible_host': '10.0.0.2'}}
    return ssh_trust_keys.enrolment_record({'node2': 'its SSH options say StrictHostKeyChecking=no'}, reads)


def test_the_record_names_the_host_why_and_the_fingerprint_in_private_files(tmp_path):
    path = ssh_trust_keys.write_enrolment(str(tmp_path / 'runs'), record())
    again = ssh_trust_keys.write_enrolment(str(tmp_path / 'runs'), record())     # same second: a new file, none overwritten
    assert path != again and os.path.dirname(path) == str(tmp_path / 'runs' / 'ssh-trust')
    for made in (tmp_path / 'runs', tmp_path / 'runs' / 'ssh-trust'):
        assert stat.S_IMODE(os.stat(str(made)).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as handle:
        written = json.load(handle)
    digest = base64.b64encode(hashlib.sha256(base64.b64decode(KEY)).digest()).decode().rstrip('=')
    assert written['hosts'] == {'node2': {'channel': 'its SSH options say StrictHostKeyChecking=no',
                                          'ansible_host': '10.0.0.2', 'host_keys': ['ssh-ed25519 SHA256:' + digest]}}


def test_a_folder_others_may_write_or_a_link_is_refused(tmp_path):
    runs = tmp_path / 'runs'
    (runs / 'ssh-trust').mkdir(parents=True)
    os.chmod(str(runs / 'ssh-trust'), 0o777)
    with pytest.raises(_workdir.WorkDirError, match='writable by its group or by others'):
        ssh_trust_keys.write_enrolment(str(runs), record())
    other = tmp_path / 'elsewhere'
    other.mkdir()
    os.symlink(str(other), str(tmp_path / 'linked'))
    with pytest.raises(_workdir.WorkDirError, match='symlink'):
        ssh_trust_keys.write_enrolment(str(tmp_path / 'linked'), record())
    assert os.listdir(str(other)) == []
    with pytest.raises(ValueError):
        ssh_trust_keys.write_enrolment('', record())

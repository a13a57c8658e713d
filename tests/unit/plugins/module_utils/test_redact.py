"""The one redaction function of the collection: which values are secret, and how they are masked."""
import pytest

from ansible_collections.xuanwu.cluster.plugins.module_utils import _redact

ENV = {'https_proxy': 'http://u:s3cr3t@p:3128', 'NCCL_SOCKET_IFNAME': 'eth0', 'MY_PASSWORD': 'hunter2'}


@pytest.mark.parametrize('key, extra, secret', [
    ('MY_PASSWORD', (), True),
    ('db_passwd', (), True),
    ('AWS_SECRET_ACCESS_KEY', (), True),
    ('HF_TOKEN', (), True),
    ('GOOGLE_APPLICATION_CREDENTIALS', (), True),
    ('SSH_PRIVATE_KEY', (), True),
    ('openai_api_key', (), True),
    ('PROXY_AUTH', (), True),
    ('Authorization', (), True),
    ('NCCL_SOCKET_IFNAME', (), False),
    ('https_proxy', (), False),
    ('NCCL_IB_HCA', (), False),
    ('WANDB_KEY', (), True),                # a name that ends in KEY
    ('WANDB_KEY', ('wandb_key',), True),
    ('NCCL_IB_HCA', ('OTHER',), False),
    # as sites spell them (none of these was masked before)
    ('db_pwd', (), True), ('vault_pw', (), True), ('ldap_bind_pw', (), True), ('slurm_jwt', (), True),
    ('munge_key', (), True), ('ssh_key', (), True), ('apiKey', (), True), ('ipmi_pwd', (), True),
    # and what only looks like one
    ('PWD', (), False), ('OLDPWD', (), False), ('ssh_trust_authorized_keys_file', (), False), ('author', (), False),
    ('keyboard_layout', (), False), ('NCCL_IB_GID_INDEX', (), False), ('ansible_ssh_common_args', (), False),
])
def test_secret_keys(key, extra, secret):
    assert _redact.is_secret_key(key, extra) is secret


@pytest.mark.parametrize('env, extra, shown', [
    (ENV, (), {'https_proxy': 'http://u:***@p:3128', 'NCCL_SOCKET_IFNAME': 'eth0', 'MY_PASSWORD': '***'}),
    ({'HTTP_PROXY': 'socks5h://alice:p%40ss@10.0.0.9:1080/'}, (), {'HTTP_PROXY': 'socks5h://alice:***@10.0.0.9:1080/'}),
    ({'no_proxy': 'localhost,.corp', 'PIP_INDEX_URL': 'https://user@mirror/simple'}, (),
     {'no_proxy': 'localhost,.corp', 'PIP_INDEX_URL': 'https://user@mirror/simple'}),
    ({'WANDB_KEY': 'abcd', 'NCCL_DEBUG': 'INFO'}, ['wandb_key'], {'WANDB_KEY': '***', 'NCCL_DEBUG': 'INFO'}),
    ({'MY_TOKEN': '', 'N': 1, 'NONE': None}, (), {'MY_TOKEN': '', 'N': '1', 'NONE': ''}),
])
def test_redact_env(env, extra, shown):
    assert _redact.redact_env(env, extra) == shown


def test_a_secret_a_value_announces_is_masked_wherever_else_it_appears():
    found = _redact.secret_values({'ansible_ssh_common_args': '-o ProxyCommand="sshpass -p s3cr3t! ssh -W %h:%p jump"'})
    assert found == ['s3cr3t!']
    assert _redact.redact({'log': 'login with s3cr3t! failed'}, found) == {'log': 'login with *** failed'}


def test_secret_values_are_the_masked_values_and_url_passwords():
    assert sorted(_redact.secret_values(ENV)) == ['hunter2', 's3cr3t']
    assert _redact.secret_values({'WANDB_KEY': 'abcd'}, ['WANDB_KEY']) == ['abcd']
    assert _redact.secret_values({'NCCL_DEBUG': 'INFO'}) == []


@pytest.mark.parametrize('text, secrets, want', [
    ('proxy http://u:s3cr3t@p:3128 password hunter2', ['hunter2'], 'proxy http://u:***@p:3128 password ***'),
    ('https_proxy=https://a:b@h and ftp://c:d@e', [], 'https_proxy=https://a:***@h and ftp://c:***@e'),
    ('mail user@example.com, path a:b@c', [], 'mail user@example.com, path a:b@c'),
    ('hunter22 hunter2', ['hunter2', 'hunter22'], '*** ***'),
    ('nothing secret', ['', None], 'nothing secret'),
    # announced by the text itself, whatever variable carries it
    ('-o ProxyCommand="sshpass -p s3cr3t! ssh -W %h:%p jump"', [], '-o ProxyCommand="sshpass -p *** ssh -W %h:%p jump"'),
    ('sshpass -pHunter2 ssh n1; sshpass -e ssh n2; sshpass -f /run/pw ssh n3', [],
     'sshpass -p*** ssh n1; sshpass -e ssh n2; sshpass -f /run/pw ssh n3'),
    ('curl -H "Authorization: Bearer eyJhbGciOi.eyJzdWIi.sig" https://x', [], 'curl -H "Authorization: Bearer ***" https://x'),
    ('Authorization: Basic dXNlcjpwYXNz', [], 'Authorization: Basic ***'),
    ('token was Bearer abcdefgh12345678 then Bearer abcdefgh12345678', [], 'token was Bearer *** then Bearer ***'),
    ('a Bearer of bad news', [], 'a Bearer of bad news'),
])
def test_redact_text(text, secrets, want):
    assert _redact.redact_text(text, secrets) == want


def test_redact_walks_mappings_and_lists_and_keeps_other_values():
    data = {'cmd': ['a', 'http://u:pw@h'], 'n': 3.5, 'hunter2 key': {'x': 'hunter2'}, 'ok': True}
    assert _redact.redact(data, ['hunter2']) == {'cmd': ['a', 'http://u:***@h'], 'n': 3.5, '*** key': {'x': '***'}, 'ok': True}

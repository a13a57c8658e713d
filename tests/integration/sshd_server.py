"""A real sshd on 127.0.0.1 for the SSH mesh tests: a free port, its own host keys, authorized_keys and log in
a temporary folder (the way bench/run.py starts one). Started as the running user; as root it needs sshd's
privilege separation directory, which it creates when missing."""
import os
import shutil
import socket
import subprocess
import time

SSHD = shutil.which('sshd') or ('/usr/sbin/sshd' if os.path.exists('/usr/sbin/sshd') else None)


def free_port():
    """A TCP port free on 127.0.0.1 now (nothing listens on it until something binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def keygen(path, kind='ed25519'):
    subprocess.run(['ssh-keygen', '-q', '-t', kind, '-N', '', '-C', 'xuanwu-test', '-f', str(path)],
                   check=True, stdout=subprocess.DEVNULL)
    with open(str(path) + '.pub') as handle:
        return ' '.join(handle.read().split()[:2])


class Sshd(object):
    """sshd -D on address:port (127.0.0.1, a free port) with ``host_keys`` (paths) and ``authorized_keys`` (a path)."""

    def __init__(self, folder, host_keys, authorized_keys, address='127.0.0.1', port=None):
        self.folder = str(folder)
        self.address = address
        self.host_keys = [str(k) for k in host_keys]
        self.authorized_keys = str(authorized_keys)
        self.config = os.path.join(self.folder, 'sshd_config')
        self.log = os.path.join(self.folder, 'sshd.log')
        self.port = port
        self.proc = None

    def _write(self, extra):
        options = ['ListenAddress %s' % self.address] + ['HostKey %s' % k for k in self.host_keys] + [
            'AuthorizedKeysFile %s' % self.authorized_keys, 'PidFile none', 'PubkeyAuthentication yes',
            'PasswordAuthentication no', 'KbdInteractiveAuthentication no', 'UsePAM no', 'StrictModes no',
            'PermitRootLogin prohibit-password', 'MaxStartups 100', 'LogLevel VERBOSE'] + extra
        with open(self.config, 'w') as handle:
            handle.write('\n'.join(options) + '\n')
        return subprocess.run([SSHD, '-t', '-f', self.config], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, check=False)

    def start(self):
        extra = ['PerSourcePenalties no']     # OpenSSH 9.8+ penalises sources that disconnect early
        check = self._write(extra)
        if check.returncode != 0 and 'PerSourcePenalties' in check.stdout:
            extra = []
            check = self._write(extra)
        marker = 'Missing privilege separation directory: '
        if check.returncode != 0 and marker in check.stdout and os.geteuid() == 0:
            os.makedirs(check.stdout.split(marker, 1)[1].split()[0], 0o755)
            check = self._write(extra)
        if check.returncode != 0:
            raise RuntimeError('sshd rejects its configuration:\n%s' % check.stdout)
        self.port = self.port or free_port()
        with open(self.log, 'w') as log:
            self.proc = subprocess.Popen([SSHD, '-D', '-e', '-f', self.config, '-p', str(self.port)],
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 15
        while True:
            if self.proc.poll() is not None:
                with open(self.log) as handle:
                    raise RuntimeError('sshd exited %d:\n%s' % (self.proc.returncode, handle.read()))
            try:
                socket.create_connection((self.address, self.port), timeout=1).close()
                return self
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

"""A real Redis server for the tests of the shared lease backend: Debian's redis-server, started on a free port of
127.0.0.1 with a password and no persistence, stopped and removed afterwards.  `make deps` installs redis-server; a test
that needs one fails (never skips) when it is missing."""
import os
import shutil
import socket
import subprocess
import time

PASSWORD = 'netval-test'


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class RedisServer(object):
    """``with RedisServer(folder) as server:`` a redis-server on ``server.port``; ``server.url`` reaches it (db 3)."""

    def __init__(self, folder):
        self.folder = str(folder)
        self.port = free_port()
        self.url = 'redis://:%s@127.0.0.1:%d/3' % (PASSWORD, self.port)
        self.process = None

    def __enter__(self):
        binary = shutil.which('redis-server') or '/usr/bin/redis-server'
        if not os.path.exists(binary):
            raise AssertionError('redis-server is missing: the shared lease backend cannot be tested (make deps installs it)')
        os.makedirs(self.folder, exist_ok=True)
        self.process = subprocess.Popen(  # pylint: disable=consider-using-with
            [binary, '--port', str(self.port), '--bind', '127.0.0.1', '--requirepass', PASSWORD, '--save', '', '--appendonly', 'no',
             '--dir', self.folder, '--logfile', os.path.join(self.folder, 'redis.log')],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with socket.create_connection(('127.0.0.1', self.port), timeout=1):
                    return self
            except OSError:
                if self.process.poll() is not None:
                    break
                time.sleep(0.05)
        self.__exit__(None, None, None)
        raise AssertionError('redis-server did not listen on port %d' % self.port)

    def __exit__(self, *exc):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return False

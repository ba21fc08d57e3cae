# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The peer leases in a shared Redis, for controllers and AWX jobs that share known-good peers.

``backend`` ``redis://[[user]:password@]host[:port][/db]`` (``rediss://`` for TLS, checked against the system's CA
store): one key per peer, ``netval:lease:<peer>``, its value the lease (JSON: peer, node, run, acquired, ttl), set
only when absent and expiring ``ttl`` seconds after the last renewal, on the server's clock, so two controllers never
need the same time.  Taking a lapsed lease is taking an absent key; renewing and giving back compare the holder and
act in one server-side script, so a holder never renews or removes a lease another run took after its own lapsed.

The client speaks RESP (the Redis protocol) over one socket with the standard library alone, so the controller and an
execution environment need nothing installed for it.  No Ansible import.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import socket
import ssl
import time

from urllib.parse import unquote, urlsplit

from ansible_collections.gpufleet.netval.plugins.module_utils.lease import LeaseError, check_name, new_lease

KEY_PREFIX = 'netval:lease:'
DEFAULT_PORT = 6379
# The replies a lease operation can need: a lease is a few hundred bytes, a SCAN page a few thousand names.
_MAX_REPLY = 1 << 20

# KEYS[1] the peer's key; ARGV: the new lease (JSON), its ttl in ms, the holder's run and node.  Takes the key when it
# is absent; renews it, unchanged, when it is already this holder's.  Returns the lease that stands now, or nil.
_TAKE = """
local current = redis.call('GET', KEYS[1])
if not current then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return ARGV[1]
end
local ok, lease = pcall(cjson.decode, current)
if ok and type(lease) == 'table' and lease['run'] == ARGV[3] and lease['node'] == ARGV[4] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return current
end
return false
"""
# KEYS[1] the peer's key; ARGV: the holder's run and node, then the ttl in ms (renew) or nothing (give back).
_RENEW_OR_GIVE_BACK = """
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local ok, lease = pcall(cjson.decode, current)
if not ok or type(lease) ~= 'table' or lease['run'] ~= ARGV[1] or lease['node'] ~= ARGV[2] then return 0 end
if ARGV[3] then return redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return redis.call('DEL', KEYS[1])
"""


class RedisError(Exception):
    """A reply the server sent as an error (``-ERR ...``)."""


def url_settings(url):
    """{host, port, db, username, password, tls} of a redis:// or rediss:// URL, or LeaseError naming what is wrong."""
    try:
        parts = urlsplit(url)
        port = parts.port or DEFAULT_PORT
    except ValueError as exc:
        raise LeaseError('the lease backend %r is not a redis:// URL: %s' % (redacted(url), exc))
    if parts.scheme not in ('redis', 'rediss') or not parts.hostname:
        raise LeaseError('the lease backend %r is not redis://[[user]:password@]host[:port][/db] or rediss://...' % redacted(url))
    db = parts.path.strip('/') or '0'
    if not db.isdigit():
        raise LeaseError('the lease backend %r names database %r: a number is expected' % (redacted(url), db))
    return {'host': parts.hostname, 'port': port, 'db': int(db), 'tls': parts.scheme == 'rediss',
            'username': unquote(parts.username) if parts.username else None,
            'password': unquote(parts.password) if parts.password is not None else None}


def redacted(url):
    """``url`` without its password, for messages and records."""
    try:
        parts = urlsplit(str(url))
        if parts.password is None:
            return str(url)
        user = '%s:' % parts.username if parts.username else ':'
        return parts._replace(netloc='%s***@%s' % (user, parts.netloc.rsplit('@', 1)[1])).geturl()
    except ValueError:
        return '<an unreadable URL>'


class RedisClient(object):
    """One connection to a Redis server, opened on first use and again after a failure; ``call(*args)`` -> the reply."""

    def __init__(self, url, timeout=10.0):
        self.url = redacted(url)
        self.settings = url_settings(url)
        self.timeout = timeout
        self._socket = None
        self._reader = None
        self._command = None

    def _connect(self):
        settings = self.settings
        sock = socket.create_connection((settings['host'], settings['port']), timeout=self.timeout)
        if settings['tls']:
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=settings['host'])
        self._socket, self._reader = sock, sock.makefile('rb')
        if settings['password'] is not None:
            self._send(['AUTH'] + ([settings['username']] if settings['username'] else []) + [settings['password']])
        if settings['db']:
            self._send(['SELECT', str(settings['db'])])

    def close(self):
        for thing in (self._reader, self._socket):
            if thing is not None:
                try:
                    thing.close()
                except (OSError, ssl.SSLError):
                    pass
        self._socket = self._reader = None

    def _send(self, args):
        self._command = str(args[0])
        encoded = [arg if isinstance(arg, bytes) else str(arg).encode('utf-8') for arg in args]
        message = b'*%d\r\n' % len(encoded) + b''.join(b'$%d\r\n%s\r\n' % (len(arg), arg) for arg in encoded)
        self._socket.sendall(message)
        return self._reply()

    def _line(self):
        line = self._reader.readline(_MAX_REPLY)
        if not line.endswith(b'\r\n'):
            raise OSError('the connection closed or sent a line without its end')
        return line[:-2]

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b'+':
            return rest.decode('utf-8', 'replace')
        if kind == b'-':
            raise RedisError(rest.decode('utf-8', 'replace'))
        if kind == b':':
            return int(rest)
        if kind == b'$':
            size = int(rest)
            if size < 0:
                return None
            if size > _MAX_REPLY:
                raise OSError('a reply of %d bytes, more than a lease needs' % size)
            data = self._reader.read(size + 2)
            if len(data) != size + 2:
                raise OSError('the connection closed in the middle of a reply')
            return data[:-2].decode('utf-8', 'replace')
        if kind == b'*':
            count = int(rest)
            return None if count < 0 else [self._reply() for _item in range(count)]
        raise OSError('a reply that is not RESP: %r' % line[:40])

    def call(self, *args):
        """Send one command, return its reply; LeaseError (naming the server, never its password) when it cannot."""
        for attempt in (1, 2):
            try:
                if self._socket is None:
                    self._connect()
                return self._send(args)
            except RedisError as exc:
                self.close()
                raise LeaseError('the lease backend %s refused %s: %s' % (self.url, self._command or args[0], exc))
            except (OSError, ssl.SSLError, ValueError) as exc:
                self.close()
                if attempt == 2:
                    raise LeaseError('cannot reach the lease backend %s (%s): %s' % (self.url, args[0], exc))
        raise LeaseError('cannot reach the lease backend %s' % self.url)


class RedisLeases(object):
    """FolderLeases' interface (read, take, renew, give_back, held_by) on a shared Redis."""

    kind = 'redis'

    def __init__(self, url, client=None):
        self.client = client or RedisClient(url)

    def describe(self):
        return 'the lease backend %s' % self.client.url

    @staticmethod
    def _key(peer):
        return KEY_PREFIX + check_name('peer name', peer)

    @staticmethod
    def _ms(ttl):
        return str(max(1, int(float(ttl) * 1000)))

    def _lease(self, text, deadline_ms):
        try:
            lease = json.loads(text)
        except ValueError:
            lease = None
        if not isinstance(lease, dict):
            lease = {'holder': None}
        if deadline_ms is not None and deadline_ms >= 0:
            lease['deadline'] = time.time() + deadline_ms / 1000.0
        return lease

    def read(self, peer, now=None):
        key = self._key(peer)
        text = self.client.call('GET', key)
        return None if text is None else self._lease(text, self.client.call('PTTL', key))

    def take(self, peer, holder, ttl, now=None):
        now = time.time() if now is None else now
        lease = new_lease(peer, holder, ttl, now)
        record = dict((k, lease[k]) for k in ('peer', 'node', 'run', 'acquired', 'ttl'))
        text = self.client.call('EVAL', _TAKE, '1', self._key(peer), json.dumps(record, sort_keys=True), self._ms(ttl),
                                holder.get('run'), holder.get('node'))
        if text is None:
            return None
        return dict(self._lease(text, None), renewed=now, deadline=now + float(ttl))

    def renew(self, peer, holder, ttl, now=None):
        return bool(self.client.call('EVAL', _RENEW_OR_GIVE_BACK, '1', self._key(peer), holder.get('run'), holder.get('node'),
                                     self._ms(ttl)))

    def give_back(self, peer, holder):
        return bool(self.client.call('EVAL', _RENEW_OR_GIVE_BACK, '1', self._key(peer), holder.get('run'), holder.get('node')))

    def held_by(self, run):
        found, cursor = [], '0'
        while True:
            cursor, keys = self.client.call('SCAN', cursor, 'MATCH', KEY_PREFIX + '*', 'COUNT', '1000')
            for key in keys:
                lease = self.read(key[len(KEY_PREFIX):]) if check_key(key) else None
                if lease and lease.get('run') == run:
                    found.append(lease)
            if cursor == '0':
                return found

    def close(self):
        self.client.close()


def check_key(key):
    """Whether ``key`` (a SCAN result) is a lease key whose peer name this module would write."""
    try:
        check_name('peer name', key[len(KEY_PREFIX):])
    except LeaseError:
        return False
    return key.startswith(KEY_PREFIX)

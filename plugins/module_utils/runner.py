# -*- coding: utf-8 -*-
# Copyright: gpufleet.netval contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One small command runner shared by every module of the collection.

In the spirit of community.general's cmd_runner, but smaller: the binary is
found with ``get_bin_path``, commands are argument lists (never a shell),
the locale is pinned to C so parsers see the format they were written for,
a hard timeout is enforced through coreutils ``timeout``, and every failure
carries the host, the command line, rc, stdout and stderr, and its class
(failures.py).  ``capture`` runs the command and reads every byte of its
output (not AnsibleModule.run_command: see there).  ``run_with_deadline`` runs a command without coreutils: its
whole session is stopped at the deadline (the evidence bundle uses it).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import shlex
import signal
import socket
import subprocess

from ansible_collections.gpufleet.netval.plugins.module_utils.failures import failure

# tool -> (Debian/Ubuntu package, RHEL package); named in "not found" errors.
TOOL_PACKAGES = {
    'ibstat': ('infiniband-diags', 'infiniband-diags'),
    'ibstatus': ('infiniband-diags', 'infiniband-diags'),
    'ibv_devinfo': ('ibverbs-utils', 'libibverbs-utils'),
    'show_gids': ('MLNX_OFED (mlnx-ofed-kernel-utils)', 'MLNX_OFED (mlnx-ofa_kernel)'),
    'lspci': ('pciutils', 'pciutils'),
    'ethtool': ('ethtool', 'ethtool'),
    'mlxconfig': ('mft (NVIDIA Firmware Tools)', 'mft (NVIDIA Firmware Tools)'),
    'flint': ('mft (NVIDIA Firmware Tools)', 'mft (NVIDIA Firmware Tools)'),
    'mlxlink': ('mft (NVIDIA Firmware Tools)', 'mft (NVIDIA Firmware Tools)'),
    'mstconfig': ('mstflint', 'mstflint'),
    'mstflint': ('mstflint', 'mstflint'),
    'mstlink': ('mstflint', 'mstflint'),
    'nvidia-smi': ('nvidia-utils-<driver version>', 'nvidia-driver-cuda'),
    'dcgmi': ('datacenter-gpu-manager', 'datacenter-gpu-manager'),
    'ib_send_bw': ('perftest', 'perftest'),
    'ib_write_bw': ('perftest', 'perftest'),
    'ib_read_bw': ('perftest', 'perftest'),
    'ib_send_lat': ('perftest', 'perftest'),
    'ib_write_lat': ('perftest', 'perftest'),
    'ib_read_lat': ('perftest', 'perftest'),
    'iperf3': ('iperf3', 'iperf3'),
    'ping': ('iputils-ping', 'iputils'),
    'mpirun': ('openmpi-bin', 'openmpi'),
    'journalctl': ('systemd', 'systemd'),
    'dmesg': ('util-linux', 'util-linux'),
    'lsmod': ('kmod', 'kmod'),
    'timeout': ('coreutils', 'coreutils'),
    'ip': ('iproute2', 'iproute'),
    'ssh': ('openssh-client', 'openssh-clients'),
}

# Environment for every command: parsers expect untranslated output.
C_LOCALE = {'LC_ALL': 'C', 'LANG': 'C', 'LANGUAGE': 'C'}

# rc that coreutils `timeout` returns when it had to stop the command.
TIMEOUT_RCS = (124, 137)


def hostname():
    """The short host name, used to say where a failure happened."""
    return socket.gethostname()


def render_cmd(argv):
    """Render an argument list as a copy-pasteable command line (for messages only)."""
    return ' '.join(shlex.quote(str(a)) for a in argv)


def package_hint(tool):
    """'install <deb> (Debian/Ubuntu) or <rpm> (RHEL)' for a known tool, else a generic hint."""
    deb, rpm = TOOL_PACKAGES.get(tool, (None, None))
    if deb is None:
        return 'install the package that provides it'
    if deb == rpm:
        return 'install package %s (Debian/Ubuntu and RHEL)' % deb
    return 'install package %s (Debian/Ubuntu) or %s (RHEL)' % (deb, rpm)


class CommandResult(object):
    """What one command did: argv, rc, stdout, stderr and whether it timed out."""

    def __init__(self, argv, rc, stdout, stderr, timed_out=False):
        self.argv = argv
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out

    @property
    def cmd(self):
        return render_cmd(self.argv)

    def as_dict(self):
        return {'cmd': self.cmd, 'argv': list(self.argv), 'rc': self.rc,
                'stdout': self.stdout, 'stderr': self.stderr, 'timed_out': self.timed_out}


# rc for a command that could not be started at all (the shell's "not found / not executable").
NOT_STARTED_RC = 127


def child_environment(environ_update=None):
    """The environment a command runs in: this process's, with ``environ_update`` over it and the module payload's own
    entries taken out of PYTHONPATH (as AnsibleModule.run_command does), built per call, never by changing os.environ."""
    env = dict(os.environ)
    env.update(environ_update or {})
    if 'PYTHONPATH' in env:
        kept = [p for p in env['PYTHONPATH'].split(':') if p and not p.endswith('/ansible_modlib.zip') and not p.endswith('/debug_dir')]
        if kept:
            env['PYTHONPATH'] = ':'.join(kept)
        else:
            del env['PYTHONPATH']
    return env


def capture(argv, environ_update=None, data=None):
    """(rc, stdout, stderr) of ``argv`` (a list, no shell): everything it wrote on both pipes until it closed them.

    Not AnsibleModule.run_command, for two reasons. Its read loop stops when a 1-second select came back empty and
    the command has exited meanwhile, so what the command wrote last is lost (ansible/ansible#51393, still so in
    ansible-core 2.21): on a busy machine `ethtool DEV` came back empty with rc 0 and the node was graded on a parse
    error. And it expands ~ and $VARS in the arguments by default; here an argument reaches the command as it is.
    The locale is set in the command's own environment, never in os.environ: the reads of preflight_info run side by
    side in one process.  ``data`` (text) goes to stdin as it is.
    A command that cannot be started gives rc 127 and the reason as stderr.
    """
    stdin = subprocess.PIPE if data is not None else subprocess.DEVNULL
    try:
        # Not run_command: it can drop a command's last output (see above).
        proc = subprocess.Popen([str(a) for a in argv], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,  # pylint: disable=ansible-bad-function
                                env=child_environment(environ_update), close_fds=True)
    except OSError as exc:
        return NOT_STARTED_RC, '', '%s: %s' % (argv[0] if argv else '', exc.strerror or exc)
    out, err = proc.communicate(data.encode('utf-8') if data is not None else None)
    return proc.returncode, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')


def run_with_deadline(argv, timeout, grace=2.0):
    """Run ``argv`` in a session of its own and stop that whole session at ``timeout`` seconds.

    No coreutils ``timeout``: the deadline is ours, and it covers children that ignore SIGTERM
    or keep the output pipes open (SIGTERM to the group, SIGKILL after ``grace``).  The group is
    signalled only while its leader is unreaped, so its id cannot belong to anyone else.
    Returns a CommandResult whose ``timed_out`` says whether the deadline was hit.
    """
    # Not run_command: the whole session is ours to stop at the deadline.
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,  # pylint: disable=ansible-bad-function
                            env=child_environment(C_LOCALE),
                            close_fds=True, start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        out, err = b'', b''
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except OSError:
                pass
            try:
                out, err = proc.communicate(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            # Something that left our session still holds the pipes: stop reading, keep what we have.
            proc.stdout.close()
            proc.stderr.close()
            proc.wait()
    return CommandResult(argv, proc.returncode, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace'), timed_out=timed_out)


class ToolRunner(object):
    """Run external tools for an AnsibleModule.

    ``module`` is duck-typed: anything with ``get_bin_path`` and ``fail_json`` works, which keeps this file free of
    Ansible imports. Commands run through ``capture`` (the seam the unit tests replace).
    """

    def __init__(self, module, default_timeout=None):
        self.module = module
        self.default_timeout = default_timeout
        self._paths = {}

    def find(self, tool, required=True, opt_dirs=None):
        """Absolute path of ``tool``; fails the module (or returns None) when it is missing."""
        if tool not in self._paths:
            self._paths[tool] = self.module.get_bin_path(tool, required=False, opt_dirs=opt_dirs or [])
        path = self._paths[tool]
        if path is None and required:
            self.module.fail_json(
                msg='%s: required tool %r was not found on PATH; %s' % (hostname(), tool, package_hint(tool)),
                tool=tool, missing_tool=True, **failure('tool_missing', package_hint(tool)))
        return path

    def first_available(self, tools):
        """The first of ``tools`` that exists (for example flint, then mstflint), or None."""
        for tool in tools:
            if self.find(tool, required=False):
                return tool
        return None

    def run(self, tool, args, timeout=None, ok_rcs=(0,), check=True, data=None, environ=None):
        """Run ``tool`` with ``args`` (a list).  Returns a CommandResult.

        With ``check`` (the default) an rc outside ``ok_rcs`` or a timeout
        fails the module with a message naming host, command, rc and stderr.
        ``environ``: variables set in the command's own environment (never in this process's).
        """
        if isinstance(args, (str, bytes)):
            raise TypeError('args must be a list, not a string')
        binary = self.find(tool)
        argv = [binary] + [str(a) for a in args]
        timeout = self.default_timeout if timeout is None else timeout
        run_argv = argv
        if timeout:
            timeout_bin = self.find('timeout')
            run_argv = [timeout_bin, '--kill-after=5', str(int(timeout))] + argv
        rc, out, err = capture(run_argv, environ_update=dict(environ or {}, **C_LOCALE), data=data)
        timed_out = bool(timeout) and rc in TIMEOUT_RCS
        result = CommandResult(argv, rc, out, err, timed_out=timed_out)
        if check and (timed_out or rc not in ok_rcs):
            self.fail(result)
        return result

    def fail(self, result, reason=None, **extra):
        """Fail the module for ``result`` with a message an operator can act on (see ``failure``)."""
        self.module.fail_json(**self.failure(result, reason=reason, **extra))

    def failure(self, result, reason=None, **extra):
        """The failed result of ``result``: msg, the command's fields and the failure shape (nothing is exited).

        ``extra`` may name the failure class (error_class, error_hint); by default it is
        ``timeout`` or ``tool_failed`` (see failures.py).
        """
        if reason is None:
            if result.timed_out:
                reason = 'timed out'
            else:
                reason = 'exited with rc=%s' % result.rc
        detail = (result.stderr or result.stdout or '').strip().splitlines()
        msg = '%s: `%s` %s' % (hostname(), result.cmd, reason)
        if detail:
            msg += ': %s' % detail[-1][:300]
        fields = result.as_dict()
        error_class = extra.pop('error_class', None) or ('timeout' if result.timed_out else 'tool_failed')
        fields.update(failure(error_class, extra.pop('error_hint', None)))
        extra.pop('error_side', None)
        fields.update(extra)
        return dict(fields, msg=msg)

    def fail_parse(self, result, error):
        """Fail the module because a command's output could not be parsed (``error`` is a ParseError)."""
        self.fail(result, reason='gave output that could not be parsed (%s)' % error, error_class='parse_error')

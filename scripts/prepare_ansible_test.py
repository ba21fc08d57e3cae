"""Let `ansible-test sanity --venv` bootstrap pip without reaching ci-files.testing.ansible.com.

ansible-test downloads a get-pip script from a host these machines cannot
reach, unless ~/.ansible/test/cache/get_pip_<version>.py already exists.  We
put a stand-in there: it puts the pip wheel (fetched from the package index
with `pip download`) on sys.path and runs `pip install` with the arguments
ansible-test passes to the bootstrap script.
"""
import glob
import os
import subprocess
import sys

from ansible_test._internal.python_requirements import get_venv_packages  # pylint: disable=import-error


class _Python(object):
    version = '%d.%d' % sys.version_info[:2]


STANDIN = '''"""Offline stand-in for get-pip.py, written by gpufleet.netval scripts/prepare_ansible_test.py."""
import sys

sys.path.insert(0, %(wheel)r)

from pip._internal.cli.main import main  # noqa: E402

# get-pip.py's own flags; pip install does not know them.
OWN_FLAGS = ('--no-setuptools', '--no-wheel')
sys.exit(main(['install'] + [arg for arg in sys.argv[1:] if arg not in OWN_FLAGS]))
'''


def main():
    version = get_venv_packages(_Python())['pip']
    cache = os.path.expanduser('~/.ansible/test/cache')
    os.makedirs(cache, exist_ok=True)
    script = os.path.join(cache, 'get_pip_%s.py' % version.replace('.', '_'))
    wheels = glob.glob(os.path.join(cache, 'pip-%s-*.whl' % version))
    if not wheels:
        subprocess.check_call([sys.executable, '-m', 'pip', 'download', '--quiet', '--no-deps',
                               '--only-binary=:all:', '--dest', cache, 'pip==%s' % version])
        wheels = glob.glob(os.path.join(cache, 'pip-%s-*.whl' % version))
    if not wheels:
        sys.exit('could not download pip==%s wheel' % version)
    tmp = script + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as handle:
        handle.write(STANDIN % {'wheel': wheels[0]})
    os.replace(tmp, script)
    print('ansible-test pip %s bootstrap stand-in: %s' % (version, script))


if __name__ == '__main__':
    main()

"""Offline stand-in for ansible-test's get-pip bootstrap script.

ansible-test downloads get-pip from a host this machine cannot reach. This stand-in installs
pip with ensurepip and then the requested packages (e.g. ``pip==24.2``) from the package index.
"""

import subprocess
import sys


def main():
    args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
    subprocess.run([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"],
                   check=True, stdout=subprocess.DEVNULL)
    packages = [a for a in args if not a.startswith("-")]
    options = [a for a in args if a.startswith("-")]
    if packages:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q"] + options + packages, check=True)


if __name__ == "__main__":
    main()

# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Who holds the package manager's lock, if anyone (scripts/bootstrap waits while someone does).

apt and dpkg lock their files with fcntl (POSIX) locks; F_GETLK asks the kernel for a lock that
would conflict with ours without taking anything, so asking never gets in apt's way.
Prints "pid N (command) on PATH" for the first held lock, nothing when all are free.
Usage: python3 scripts/apt_lock.py [LOCK_FILE ...]   (default: dpkg's and apt's lock files)
"""

from __future__ import annotations

import fcntl
import os
import struct
import sys
from typing import List, Optional

LOCKS = ("/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock", "/var/lib/apt/lists/lock", "/var/cache/apt/archives/lock")
#: struct flock on Linux: l_type, l_whence (short), l_start, l_len (off_t), l_pid (pid_t), padding.
_FLOCK = "hhqqi4x"


def holder(path: str) -> Optional[int]:
    """The pid holding a lock on ``path`` that would block apt, or None (also when it does not exist)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
    except OSError:
        return None
    finally:
        os.close(fd)
    kind, _whence, _start, _length, pid = struct.unpack(_FLOCK, answer)
    return None if kind == fcntl.F_UNLCK else pid


def describe(pid: int) -> str:
    try:
        with open("/proc/%d/comm" % pid, encoding="utf-8", errors="replace") as handle:
            return "pid %d (%s)" % (pid, handle.read().strip())
    except OSError:
        return "pid %d" % pid


def main(argv: List[str]) -> int:
    for path in argv or LOCKS:
        pid = holder(path)
        if pid is not None:
            sys.stdout.write("%s on %s\n" % (describe(pid), path))
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

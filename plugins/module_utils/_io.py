# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Durable file writes (PRIVATE to this collection).

Why: a kubelet config or state file that is half-written, or written but lost by a power cut
after the task said "changed", is worse than no change. :func:`write_file` is the one way this
collection replaces a file: a temp file in the same directory, fsync, rename over the target,
fsync of the directory (``fsync`` on a file persists its bytes; the directory entry that the
rename changed is persisted by fsyncing the directory). Some filesystems refuse to open or fsync
a directory; that step is best effort (:func:`fsync_dir`).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import errno
import os
import tempfile
from typing import Callable, Optional

#: Mode of a file this collection creates when the caller gives none.
DEFAULT_MODE = 0o644


def fsync_dir(path: str) -> None:
    """fsync the directory ``path``; a directory that cannot be opened or fsynced is skipped."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_file_if_exists(path: str) -> Optional[bytes]:
    """The bytes of ``path``; None when it does not exist (ENOENT, a dangling link included).

    The one answer to "the file is missing" for every state and config file read from a host:
    absent is not an error here, each caller says what absent means for it (a fresh node, a new
    file, an error for a path the user named). Any other failure raises OSError.
    """
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise


def write_file(path: str,
               data: bytes,
               mode: Optional[int] = None,
               rename: Optional[Callable[[str, str], None]] = None) -> None:
    """Replace ``path`` by ``data`` durably: a reader sees the old file or the new one, never a mix.

    ``mode`` defaults to the replaced file's mode, else :data:`DEFAULT_MODE`. ``rename(src, dst)``
    defaults to ``os.replace``; a module passes ``module.atomic_move`` to keep the replaced file's
    owner and SELinux context. The file ends with ``mode`` either way: ``atomic_move`` gives a
    file it creates ``0o666 & ~umask`` whatever the temp file's mode, so a ``rename`` that left
    another mode is corrected. The temp file is removed on any failure; OSError propagates.
    """
    directory = os.path.dirname(os.path.abspath(path))
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except OSError:
            mode = DEFAULT_MODE
    handle, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        (rename or os.replace)(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if rename is not None and os.stat(path).st_mode & 0o7777 != mode:
        os.chmod(path, mode)
    fsync_dir(directory)

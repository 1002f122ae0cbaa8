# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""Making a rename, create or unlink in a directory durable.

Why: ``fsync`` on a file only persists its bytes; the directory entry that a rename or unlink
changed is persisted by fsyncing the directory. Both the checkpoint writer and the backup /
restore code need that after every rename, and both treat it as best effort (some filesystems
refuse to open or fsync a directory), so it lives here once.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os


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

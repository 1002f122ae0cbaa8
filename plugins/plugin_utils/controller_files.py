# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the controller-side action plugins that write files share (``numa_report``, ``numa_recommend``).

* :func:`resolve_output`: relative output paths are relative to the current directory of
  ``ansible-playbook`` (where a CI job runs), never to the playbook or inventory directory;
* :func:`write_whole`: files are written whole (``_io.write_file``: temporary file, fsync, rename),
  so a reader never sees half a report;
* :func:`plain`: task arguments and host variables as plain dicts and lists.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from collections.abc import Mapping

from ansible_collections.numaguard.kubelet.plugins.module_utils._io import write_file


def resolve_output(path, cwd=None):
    """An output path as given, relative ones against the current directory."""
    path = os.path.expanduser(str(path))
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(cwd or os.getcwd(), path))


def write_whole(path, text):
    """Write ``text`` to ``path`` durably (``_io.write_file``: temp file, fsync, rename, directory
    fsync; parent directories created), mode 0644."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    write_file(path, text.encode("utf-8"), 0o644)


def plain(value):
    """``value`` with every mapping a dict (str keys) and every sequence a list."""
    if isinstance(value, Mapping):
        return dict((str(k), plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value

# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Linux / kubelet CPU list syntax (``0-3,8-11``): parse to a frozenset, format canonically.

The kubelet writes cpusets as sorted ids with maximal runs ``a-b`` (even a run of two),
singletons ``a``, joined by ``,``; the empty set is the empty string. Parsing accepts what the
kernel and the kubelet accept: surrounding whitespace and a trailing newline.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_atoi

_ELEMENT = re.compile(r"^(\d+)(?:-(\d+))?$")

#: The largest ``CONFIG_NR_CPUS`` any Linux architecture accepts (x86_64 ``NR_CPUS_RANGE_END``
#: with MAXSMP, powerpc: 8192): no CPU id reaches it. Both parsers refuse an id at or beyond it
#: *before* expanding a range, so ``0-4294967295`` is a fast error, not gigabytes of set.
#: (k8s.io/utils/cpuset ``Parse`` has no bound: the kubelet itself would expand such a range.)
NR_CPUS_LIMIT = 8192


class InvalidCPUSet(NumaguardError):
    """A CPU list that is not valid Linux/kubelet cpuset syntax."""


def parse_cpuset(text):
    """Return the frozenset of CPU ids written in ``text`` (``"0-3,8"`` -> {0, 1, 2, 3, 8})."""
    if not isinstance(text, str):
        raise InvalidCPUSet("CPU list must be a string, got %r" % (text,))
    stripped = text.strip()
    if not stripped:
        return frozenset()
    cpus = set()
    for element in stripped.split(","):
        match = _ELEMENT.match(element.strip())
        if not match:
            raise InvalidCPUSet("invalid CPU list %r: cannot parse %r" % (text, element))
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise InvalidCPUSet("invalid CPU list %r: range %r is reversed (%d > %d)"
                                % (text, element, first, last))
        _check_limit(text, last)
        cpus.update(range(first, last + 1))
    return frozenset(cpus)


def _check_limit(text, highest):
    if highest >= NR_CPUS_LIMIT:
        raise InvalidCPUSet("invalid CPU list %r: CPU ids are 0 to %d (the largest NR_CPUS of any Linux kernel is %d), got %d"
                            % (_shown(text), NR_CPUS_LIMIT - 1, NR_CPUS_LIMIT, highest))


def _shown(text):
    return text if len(text) <= 80 else text[:60] + "...(%d characters)" % len(text)


def _go_atoi(text):
    """Go's ``strconv.Atoi`` (``gostrconv.go_atoi``, the one home) as an InvalidCPUSet."""
    try:
        return go_atoi(text)
    except ValueError as exc:
        raise InvalidCPUSet(str(exc))


def parse_go_cpuset(text):
    """k8s.io/utils/cpuset ``Parse``, as the kubelet reads ``reservedSystemCPUs``/``--reserved-cpus``:
    no whitespace tolerance (``"0, 1"`` and ``" 0-1"`` fail with strconv's message), ranges split
    on the first ``-``. Raises InvalidCPUSet with the Go error text. The sysfs-oriented
    :func:`parse_cpuset` is for kernel files, which end in a newline."""
    if not isinstance(text, str):
        raise InvalidCPUSet("CPU list must be a string, got %r" % (text,))
    cpus = set()
    if text == "":
        return frozenset()
    for element in text.split(","):
        bounds = element.split("-", 1)
        first = _go_atoi(bounds[0])
        last = _go_atoi(bounds[1]) if len(bounds) == 2 else first
        if first > last:
            raise InvalidCPUSet('invalid range "%s" (%d > %d)' % (element, first, last))
        _check_limit(text, last)
        cpus.update(range(first, last + 1))
    return frozenset(cpus)


def format_cpuset(cpus):
    """Return the canonical kubelet string for an iterable of CPU ids ({0, 1, 2, 5} -> "0-2,5")."""
    ids = sorted(set(cpus))
    parts = []
    start = prev = None
    for cpu in ids:
        if start is None:
            start = prev = cpu
        elif cpu == prev + 1:
            prev = cpu
        else:
            parts.append(_run(start, prev))
            start = prev = cpu
    if start is not None:
        parts.append(_run(start, prev))
    return ",".join(parts)


def _run(first, last):
    return "%d" % first if first == last else "%d-%d" % (first, last)

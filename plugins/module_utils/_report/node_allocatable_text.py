# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Node Allocatable equation's words: the engine's addends (``_engine/node_allocatable.py``
``AllocatablePart``: a label, a quantity and, for the hard-eviction part, its threshold) as the
reserved-memory findings and totals write them."""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any


def describe_threshold(threshold: Any, capacity_bytes: int) -> str:
    """``memory.available<5%`` with its float32 fraction of capacity and the bytes it holds, or
    ``memory.available<100Mi``: an eviction threshold (``_engine/eviction.py`` ``Threshold``) in an equation."""
    if threshold.percentage is not None:
        return "%s<%s (float32 %s of capacity %d bytes) = %s" % (
            threshold.signal, threshold.text, repr(float(threshold.percentage)), capacity_bytes,
            threshold.bytes_of(capacity_bytes))
    return "%s<%s" % (threshold.signal, threshold.text)


def part_text(part: Any) -> str:
    """One addend of a Node Allocatable reservation: ``system-reserved``, ``kube-reserved`` or
    ``hard eviction memory.available<...``."""
    if part.threshold is None:
        return str(part.label)
    return "hard eviction " + describe_threshold(part.threshold, part.capacity_bytes)

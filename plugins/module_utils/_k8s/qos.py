# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The pod QoS classes (``v1.PodQOSClass``, staging/src/k8s.io/api/core/v1/types.go).

A file of its own so that code needing only the names (the CPU Manager's static policy, built by
every start-up verdict) does not compile the pod model (``_engine/pod.py``, which computes a pod's
class): a kubelet_rollout preflight or a kubelet_config plan never reads a pod (issue 24).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

GUARANTEED = "Guaranteed"
BURSTABLE = "Burstable"
BEST_EFFORT = "BestEffort"
QOS_CLASSES = (GUARANTEED, BURSTABLE, BEST_EFFORT)

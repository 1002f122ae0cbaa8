# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""State files shared by engine tests (one copy of each fixture)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

#: memory_manager_state V1 of a two-node 8 GiB machine with two pods spanning both nodes
#: (uid-big 10 GiB, uid-small 1 GiB), written by hand: legacy checksum 0 = "no checksum",
#: accepted by every kubelet.
SPANNING_MEMORY_STATE = (
    '{"policyName":"Static","machineState":{'
    '"0":{"numberOfAssignments":2,"memoryMap":{"memory":{"total":8589934592,"systemReserved":1178599424,'
    '"allocatable":7411335168,"reserved":7411335168,"free":0}},"cells":[0,1]},'
    '"1":{"numberOfAssignments":2,"memoryMap":{"memory":{"total":8589934592,"systemReserved":0,'
    '"allocatable":8589934592,"reserved":4399824896,"free":4190109696}},"cells":[0,1]}},'
    '"entries":{"uid-big":{"c":[{"numaAffinity":[0,1],"type":"memory","size":10737418240}]},'
    '"uid-small":{"c":[{"numaAffinity":[0,1],"type":"memory","size":1073741824}]}},"checksum":0}')

# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""YAML from users, parsed on the controller within bounds (size, alias expansion, depth).

Why: PyYAML shares an anchored node between its aliases, so a 1 KB "billion laughs" file is
cheap to parse but expands exponentially as soon as anything walks it (converting to JSON,
shipping it to a module): 73 s of CPU and 3 GB were measured for one ``pod_file``. The node
graph is measured before anything is constructed: its size with every alias expanded, its
depth, and cycles (a recursive anchor), and the file is refused with a message beyond the limits.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import yaml

#: A Pod manifest is a few KB; a few hundred in one file stay far below these.
MAX_BYTES = 4 << 20
MAX_EXPANDED_NODES = 200000
MAX_DEPTH = 64


class BoundedYAMLError(ValueError):
    """The document is not YAML or exceeds a bound; the message says which."""


def _children(node):
    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _measure(root, source):
    """Expanded node count and depth of a node graph, iteratively (memoised; cycles refused)."""
    sizes, depths = {}, {}
    on_path = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            depths[key] = 1 + max([depths[id(c)] for c in children] or [0])
            if sizes[key] > MAX_EXPANDED_NODES:
                raise BoundedYAMLError("%s expands to more than %d nodes (aliases included); refusing it"
                                       % (source, MAX_EXPANDED_NODES))
            if depths[key] > MAX_DEPTH:
                raise BoundedYAMLError("%s nests deeper than %d levels; refusing it" % (source, MAX_DEPTH))
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise BoundedYAMLError("%s has a recursive alias (an anchor used inside itself); refusing it" % source)
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                raise BoundedYAMLError("%s has a recursive alias (an anchor used inside itself); refusing it" % source)
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)], depths[id(root)]


def load_all(text, source):
    """All documents of ``text`` (safe YAML types), or BoundedYAMLError naming ``source``."""
    if len(text) > MAX_BYTES:
        raise BoundedYAMLError("%s is larger than %d bytes; refusing it" % (source, MAX_BYTES))
    loader = yaml.SafeLoader(text)
    documents = []
    total = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            size, _depth = _measure(node, source)
            total += size
            if total > MAX_EXPANDED_NODES:
                raise BoundedYAMLError("%s expands to more than %d nodes (aliases included); refusing it"
                                       % (source, MAX_EXPANDED_NODES))
            documents.append(loader.construct_document(node))
    except RecursionError:
        raise BoundedYAMLError("%s nests deeper than %d levels; refusing it" % (source, MAX_DEPTH))
    except yaml.YAMLError as exc:
        raise BoundedYAMLError("%s is not valid YAML: %s" % (source, exc))
    finally:
        loader.dispose()
    return documents

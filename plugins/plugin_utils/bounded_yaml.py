# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""YAML from users, parsed on the controller within bounds (size, node count, alias expansion, depth).

Why: PyYAML shares an anchored node between its aliases, so a 1 KB "billion laughs" file is
cheap to parse but expands exponentially as soon as anything walks it (converting to JSON,
shipping it to a module): 73 s of CPU and 3 GB were measured for one ``pod_file``. The node
graph is measured before anything is constructed: its size with every alias expanded, its
depth, and cycles (a recursive anchor), and the file is refused with a message beyond the limits.

The nodes are also counted *while* they are composed (issue 23): PyYAML's composer builds the
whole graph of a document before returning it, and a 2 MB flow list of a million elements cost
24 s of CPU and 822 MB before it was refused. The composer here stops at the first node beyond
the limit or the first level beyond the depth; it reads the events of libyaml's parser when
PyYAML has it (the pure-Python scanner alone takes seconds per megabyte), else PyYAML's own.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import yaml

#: A Pod manifest is a few KB; a few hundred in one file stay far below these.
MAX_BYTES = 4 << 20
MAX_EXPANDED_NODES = 200000
#: Nodes composed (each alias counted once): what parsing costs, about 10 us of CPU each with
#: libyaml's events (a few hundred typical pods stay well below it).
MAX_COMPOSED_NODES = 100000
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


class _CountingComposer(yaml.composer.Composer):
    """PyYAML's composer, counting the nodes of the stream and the depth as it composes them."""

    def __init__(self, source):
        yaml.composer.Composer.__init__(self)
        self.numaguard_source = source
        self.numaguard_nodes = 0
        self.numaguard_depth = 0
        self.numaguard_anchored = False  # an alias is possible (an anchor was defined) in this document

    def compose_node(self, parent, index):
        self.numaguard_nodes += 1
        if self.anchors:
            self.numaguard_anchored = True
        if self.numaguard_nodes > MAX_COMPOSED_NODES:
            raise BoundedYAMLError("%s has more than %d YAML nodes; refusing it" % (self.numaguard_source, MAX_COMPOSED_NODES))
        self.numaguard_depth += 1
        try:
            if self.numaguard_depth > MAX_DEPTH:
                raise BoundedYAMLError("%s nests deeper than %d levels; refusing it" % (self.numaguard_source, MAX_DEPTH))
            return yaml.composer.Composer.compose_node(self, parent, index)
        finally:
            self.numaguard_depth -= 1


if getattr(yaml, "__with_libyaml__", False):
    class _Loader(_CountingComposer, yaml.cyaml.CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
        """libyaml's events, composed (and counted) in Python, constructed as SafeLoader does."""

        def __init__(self, stream, source):
            yaml.cyaml.CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            _CountingComposer.__init__(self, source)
else:  # pragma: no cover - PyYAML without libyaml
    class _Loader(_CountingComposer, yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser,  # type: ignore[no-redef]
                  yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
        """SafeLoader with the counting composer."""

        def __init__(self, stream, source):
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            _CountingComposer.__init__(self, source)


def load_all(text, source):
    """All documents of ``text`` (safe YAML types), or BoundedYAMLError naming ``source``."""
    if len(text) > MAX_BYTES:
        raise BoundedYAMLError("%s is larger than %d bytes; refusing it" % (source, MAX_BYTES))
    loader = None
    documents = []
    total = 0
    try:
        # inside the try: PyYAML's reader refuses a NUL byte (or another non-printable character)
        # as soon as it is built, and that error must name the file too
        loader = _Loader(text, source)
        while loader.check_node():
            composed = loader.numaguard_nodes
            loader.numaguard_anchored = False
            node = loader.get_node()
            if loader.numaguard_anchored:
                size, _depth = _measure(node, source)  # aliases share nodes: count them expanded
            else:
                size = loader.numaguard_nodes - composed  # a tree: as composed (and as deep)
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
        if loader is not None:
            loader.dispose()
    return documents

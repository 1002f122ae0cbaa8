# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A small JUnit XML writer for per-host check results (controller side).

Why not a callback plugin: CI users want the report as a file from one task they control, and the
results are already collected per host in the playbook; a filter is easy to test and to reuse for
other checks that return ``valid``/``errors``/``warnings``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import xml.etree.ElementTree as ET


def _text(result):
    lines = []
    if result.get("flag") is not None:
        lines.append("--reserved-memory=%s" % result.get("flag"))
    for _name, total in sorted((result.get("totals") or {}).items()):
        if isinstance(total, dict) and total.get("equation"):
            lines.append(total["equation"])
    for warning in result.get("warnings") or []:
        lines.append("WARNING: %s" % warning)
    return "\n".join(lines)


def render_junit(results, suite="numaguard.kubelet reserved memory"):
    """JUnit XML for ``{host: result}``; deterministic (hosts sorted, no timestamps)."""
    failures = errors = 0
    root = ET.Element("testsuites")
    suite_el = ET.SubElement(root, "testsuite", name=suite)
    for host in sorted(results, key=str):
        result = results[host]
        case = ET.SubElement(suite_el, "testcase", classname=suite, name=str(host))
        if not isinstance(result, dict) or result.get("input_error"):
            errors += 1
            text = str(result.get("input_error")) if isinstance(result, dict) else str(result)
            node = ET.SubElement(case, "error", message="check could not run: %s" % text[:200], type="error")
            node.text = text
            continue
        if not result.get("valid", False):
            failures += 1
            messages = list(result.get("errors") or []) or [str(result.get("msg", "invalid"))]
            node = ET.SubElement(case, "failure", message="%d error(s): %s" % (len(messages), messages[0][:200]),
                                 type="reserved-memory")
            node.text = "\n".join(messages)
        out = _text(result)
        if out:
            ET.SubElement(case, "system-out").text = out
    for element in (root, suite_el):
        element.set("tests", "%d" % len(results))
        element.set("failures", "%d" % failures)
        element.set("errors", "%d" % errors)
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"

# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The HTML report in a real browser: headless Chromium (Debian's ``chromium``, installed by
scripts/bootstrap) loads it with no console error, no failed load, no exception, and the
screenshot is not blank.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: NUL-separated
JSON on fds 3 and 4), standard library only. Skips with a message when chromium is not installed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import os
import shutil
import struct
import subprocess
import tempfile
import time
import zlib

import pytest

from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import check_pod_report, validate_report
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report_html import render_html

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/bootstrap installs it)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--remote-debugging-pipe", "--window-size=1200,900"]
GI = 1 << 30
#: where the screenshot of the last run is kept for people to look at
SCREENSHOT = os.path.join(tempfile.gettempdir(), "numaguard-report-screenshot.png")


class Browser:
    """A headless Chromium with a fresh profile, driven over the DevTools pipe."""

    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="ng-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the browser expects the commands on fd 3 and writes answers to fd 4
        self.proc = subprocess.Popen(
            [CHROMIUM] + FLAGS + ["--user-data-dir=%s" % self.profile, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=lambda: (os.dup2(to_browser_r, 3), os.dup2(from_browser_w, 4)))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next = 0
        self.events = []

    def _read(self, deadline):
        while b"\0" not in self._buffer:
            if time.time() > deadline:
                raise AssertionError("chromium did not answer in time")
            chunk = os.read(self._from_browser, 65536)
            if not chunk:
                raise AssertionError("chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message.decode("utf-8"))

    def call(self, method, params=None, session=None, timeout=30):
        self._next += 1
        request = {"id": self._next, "method": method, "params": params or {}}
        if session:
            request["sessionId"] = session
        os.write(self._to_browser, json.dumps(request).encode("utf-8") + b"\0")
        deadline = time.time() + timeout
        while True:
            message = self._read(deadline)
            if message.get("id") == self._next:
                if "error" in message:
                    raise AssertionError("%s failed: %s" % (method, message["error"]))
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method, timeout=30):
        deadline = time.time() + timeout
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            message = self._read(deadline)
            self.events.append(message)
            if message.get("method") == method:
                return message

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:  # already gone
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)


def load(path, expression=None):
    """Open ``path``; return (problems, PNG bytes), and with ``expression`` also what it evaluates to
    in the page (a JSON string, parsed)."""
    browser = Browser()
    try:
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.call("%s.enable" % domain, session=session)
        browser.call("Page.navigate", {"url": "file://" + path}, session=session)
        browser.wait_for("Page.loadEventFired")
        browser.call("Runtime.evaluate", {"expression": "1"}, session=session)  # flush pending events
        shot = browser.call("Page.captureScreenshot", {"format": "png"}, session=session)["data"]
        measured = None
        if expression:
            measured = json.loads(browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                                               session=session)["result"]["value"])
        problems = []
        for event in browser.events:
            method, params = event.get("method"), event.get("params") or {}
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert", "warning"):
                problems.append("console.%s: %s" % (params["type"], params.get("args")))
            elif method == "Runtime.exceptionThrown":
                problems.append("exception: %s" % params.get("exceptionDetails"))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") in ("error", "warning"):
                problems.append("log: %s" % params["entry"].get("text"))
            elif method == "Network.loadingFailed":
                problems.append("load failed: %s" % params.get("errorText"))
        if expression:
            return problems, base64.b64decode(shot), measured
        return problems, base64.b64decode(shot)
    finally:
        browser.close()


def png_colours(data):
    """Distinct pixel colours of a PNG (8-bit RGB/RGBA, no interlace), standard library only."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _c, _f, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    previous = bytearray(stride)
    colours = set()
    for row in range(height):
        filter_type = raw[row * (stride + 1)]
        line = bytearray(raw[row * (stride + 1) + 1:(row + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if filter_type == 1:
                line[i] = (line[i] + left) & 255
            elif filter_type == 2:
                line[i] = (line[i] + up) & 255
            elif filter_type == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif filter_type == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        if row % 4 == 0:
            for x in range(0, stride, channels * 4):
                colours.add(bytes(line[x:x + 3]))
        previous = line
    return colours


def _report():
    memory = {"0": {"memory": {"total": 96 * GI, "systemReserved": GI, "allocatable": 79 * GI, "reserved": 24 * GI,
                               "free": 55 * GI},
                    "hugepages-1Gi": {"total": 16 * GI, "systemReserved": 0, "allocatable": 16 * GI, "reserved": 4 * GI,
                                      "free": 12 * GI}},
              "1": {"memory": {"total": 96 * GI, "systemReserved": 2 * GI, "allocatable": 94 * GI, "reserved": 0,
                               "free": 94 * GI}}}
    pod = {"name": "db", "namespace": "shop", "admitted": True, "verdict": "admitted", "reason": "", "message": "",
           "numa_nodes": [0], "containers": [{"cpus": "2-5", "memory_blocks": [], "devices": {}}]}
    rejected = dict(pod, admitted=False, verdict="rejected", reason="OutOfcpu", numa_nodes=[],
                    message="Node didn't have enough resource: cpu, requested: 8000, used: 0, capacity: 4000")
    results = {"big-1": {"pods": [pod], "memory": memory, "node": {"hardware_class": "numa_2n_96c_1g_3fa2c1d0"}},
               "vm-1": {"pods": [rejected], "memory": {}, "node": {"hardware_class": "numa_1n_4c_nohp_51d61aeb"}},
               "odd-<1>": {"failed": True, "msg": "could not restore state from checkpoint: <corrupt>"}}
    return check_pod_report(results, {}, {}, sorted(results))


@pytest.mark.parametrize("kind", ["check_pod", "validate"])
def test_report_loads_cleanly_and_is_not_blank(tmp_path, kind):
    if kind == "check_pod":
        report = _report()
    else:
        node = {"id": 0, "memory_total_bytes": 64 * GI, "hugepages_bytes": 8 * GI, "reserved_memory_bytes": 2 * GI,
                "guaranteed_memory_bytes": 54 * GI}
        report = validate_report({"a": {"valid": True, "errors": [], "warnings": ["w"], "flag": "0:memory=2Gi",
                                        "nodes": [node, dict(node, id=1)]}}, {}, {"a": ["workers"]})
    path = str(tmp_path / "report.html")
    with open(path, "w") as handle:
        handle.write(render_html(report))
    problems, png = load(path)
    assert problems == []
    if kind == "check_pod":
        with open(SCREENSHOT, "wb") as handle:
            handle.write(png)
    colours = png_colours(png)
    # a blank page has one colour; the report has the header, text and the bar segments
    assert len(colours) > 20, len(colours)
    assert b"\x8e\x24\xaa" in colours or kind == "validate"   # the system-reserved segment (#8e24aa) is drawn


def test_the_checker_sees_console_errors(tmp_path):
    """The harness itself must be able to fail: a page with an error and a missing stylesheet."""
    path = str(tmp_path / "bad.html")
    with open(path, "w") as handle:
        handle.write('<!DOCTYPE html><html><head><link rel="icon" href="data:,"><link rel="stylesheet" '
                     'href="missing.css"></head><body><script>console.error("boom")</script></body></html>')
    problems, png = load(path)
    assert any("boom" in p for p in problems), problems
    assert any("load failed" in p or "missing.css" in p for p in problems), problems
    assert len(png_colours(png)) <= 2


#: which elements lie wholly inside the first viewport (no scrolling, nothing unfolded)
FIRST_VIEWPORT = """JSON.stringify((() => {
  const seen = e => { const r = e.getBoundingClientRect();
                      return r.width > 0 && r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; };
  return {height: window.innerHeight,
          headline: seen(document.querySelector("header .headline")),
          action: seen(document.querySelector("#action h2")),
          first_exception: [...document.querySelectorAll("#action .act")].slice(0, 1).map(seen),
          classes: [...document.querySelectorAll("#classes td:first-child a")].map(a => [a.textContent, seen(a)])};
})())"""


@pytest.mark.parametrize("kind", ["validate", "discover", "check_pod"])
def test_first_viewport_at_400_hosts_shows_the_headline_and_every_class(tmp_path, kind):
    """400 synthetic hosts of six bundled classes (tests/fleet/report_hosts.py), a 1200x900 window:
    the headline, how many hosts need action, the first of them and every class are on the first screen."""
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import discover_report
    from ansible_collections.numaguard.kubelet.tests.fleet.report_hosts import Fleet

    fleet = Fleet(400)
    if kind == "validate":
        report = validate_report(*fleet.validate_inputs())
    elif kind == "discover":
        topologies, groups, hosts, failed = fleet.discover_inputs()
        report = discover_report(topologies, groups, hosts, failed=failed)
    else:
        report = check_pod_report(*fleet.check_pod_inputs())
    path = str(tmp_path / ("%s.html" % kind))
    with open(path, "w") as handle:
        handle.write(render_html(report))
    problems, png, seen = load(path, FIRST_VIEWPORT)
    with open(os.path.join(tempfile.gettempdir(), "numaguard-report-400-%s.png" % kind), "wb") as handle:
        handle.write(png)  # for people to look at
    assert problems == []
    assert seen["headline"] and seen["action"] and seen["first_exception"] == [True], seen
    assert sorted(entry[0] for entry in seen["classes"]) == sorted(c["group"] for c in report["classes"])
    assert all(entry[1] for entry in seen["classes"]), seen
    assert len(png_colours(png)) > 20

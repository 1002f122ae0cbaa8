# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The numaguard.kubelet.compact stdout callback: one screen per play whatever the number of hosts,
and every failure in full.

The playbook runs in a subprocess (``python -m ansible.cli.playbook``, the interpreter running the
tests, so every tested ansible-core) on local hosts with controller-side tasks (set_fact, debug,
assert, fail) and, where a test needs a module's result, a module of the test's own that ansible-core
runs as it is (``WANT_JSON``: no AnsiballZ payload to build, unpack and compile per host): a run
costs about 1.5 s of CPU, most of it ansible-playbook's start.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from ansible_collections.numaguard.kubelet.plugins.callback import compact

# .../ansible_collections/numaguard/kubelet/plugins/callback/compact.py -> the directory holding ansible_collections
COLLECTIONS = os.path.abspath(os.path.join(os.path.dirname(compact.__file__), *([os.pardir] * 5)))

PLAYBOOK = """
- name: Fleet play
  hosts: all
  gather_facts: false
  tasks:
    - name: Quiet on every host
      ansible.builtin.set_fact:
        x: 1
    - name: Skipped everywhere
      ansible.builtin.debug:
        msg: never
      when: false
    - name: Changes on two hosts
      ansible.builtin.set_fact:
        y: 1
      changed_when: inventory_hostname in ['n01', 'n02']
    - name: Fails on the hosts listed in fail_on
      ansible.builtin.fail:
        msg: "{{ inventory_hostname }} is broken: the whole message is shown"
      when: inventory_hostname in fail_on | default([])
    - name: Ignored failure
      ansible.builtin.fail:
        msg: ignored but shown
      when: inventory_hostname in ignore_on | default([])
      ignore_errors: true
    - name: Rescued failure
      block:
        - name: Fails inside a block
          ansible.builtin.fail:
            msg: rescued but shown
          when: inventory_hostname in rescue_on | default([])
      rescue:
        - name: Rescue
          ansible.builtin.set_fact:
            rescued: true
    - name: Fleet report
      ansible.builtin.debug:
        msg: ["headline: {{ ansible_play_hosts_all | length }} host(s)", "class a: 3 hosts"]
      run_once: true
- name: A play that matches nothing
  hosts: nothing_here
  gather_facts: false
  tasks: []
"""


#: What a module returns, printed by a module ansible-core runs as it is (a ``WANT_JSON`` script: its
#: arguments as a JSON file): its ``result`` argument, with ``changed: false``. Its warnings reach the
#: callback as an AnsibleModule's ``warn`` do (a result's ``warnings`` list; from 2.19 each turned into
#: a WarningSummary by the task executor), without the AnsiballZ payload an AnsibleModule costs per host.
RESULT_MODULE = """#!/usr/bin/python
# WANT_JSON
import json
import sys

with open(sys.argv[1]) as handle:
    args = json.load(handle)
result = dict(args.get("result") or {}, changed=False)
print(json.dumps(result))
"""


def run(tmp_path, hosts, *extra, callback="numaguard.kubelet.compact", play=PLAYBOOK, unreachable=()):
    inventory = tmp_path / "inventory.yml"
    inventory.write_text("all:\n  hosts:\n" + "".join(
        "    n%02d: {ansible_connection: local, ansible_python_interpreter: %s}\n" % (i, sys.executable)
        for i in range(1, hosts + 1)) + "".join(
        "    %s: {ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: 1, ansible_timeout: 2}\n" % name
        for name in unreachable))
    playbook = tmp_path / "play.yml"
    playbook.write_text(play)
    (tmp_path / "library").mkdir(exist_ok=True)
    (tmp_path / "library" / "result.py").write_text(RESULT_MODULE)
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS + os.pathsep + env.get("ANSIBLE_COLLECTIONS_PATH", ""),
        "ANSIBLE_STDOUT_CALLBACK": callback, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_RETRY_FILES_ENABLED": "0", "ANSIBLE_LOCALHOST_WARNING": "0", "ANSIBLE_FORKS": "10",
        "ANSIBLE_DEPRECATION_WARNINGS": "0", "ANSIBLE_HOST_PATTERN_MISMATCH": "ignore",
    })
    argv = [sys.executable, "-m", "ansible.cli.playbook", "-i", str(inventory), str(playbook)] + list(extra)
    proc = subprocess.run(argv, cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=300, check=False)
    return proc


def test_names_line_caps_the_list():
    assert compact.names_line(["a", "b"]) == "a, b"
    assert compact.names_line(["h%d" % i for i in range(20)], limit=3) == "h0, h1, h2 (+17 more)"


@pytest.mark.parametrize("data, lines", [
    ({"msg": ["one", "two\nthree"]}, ["one", "two", "three"]),
    ({"msg": "plain"}, ["plain"]),
    ({"msg": {"a": 1}}, ['{"a": 1}']),
    ({"hostvar": "v", "_ansible_verbose_always": True, "changed": False}, ["hostvar: v"]),
    ({"items": [1, "x"]}, ["items:", "  1", "  x"]),
    ({"changed": False}, []),
])
def test_message_lines(data, lines):
    assert compact.message_lines(data) == lines


def test_output_does_not_grow_with_the_fleet(tmp_path):
    # 13 hosts: more than the forks (10, a second batch) and than the names a line lists (MAX_NAMES)
    assert compact.MAX_NAMES < 13
    small = run(tmp_path, 3)
    large = run(tmp_path, 13)
    assert small.returncode == 0 and large.returncode == 0, small.stdout + large.stdout
    assert "headline: 13 host(s)" in large.stdout and "class a: 3 hosts" in large.stdout
    assert "changed on 2 host(s): n01, n02" in large.stdout
    assert "PLAY RECAP: 13 host(s), 13 ok, 2 changed, 0 failed, 0 unreachable" in large.stdout
    assert "no hosts matched" in large.stdout
    # no per-host ok/skipping lines, no recap line per healthy host
    assert not re.search(r"^(ok|skipping): \[", large.stdout, re.M)
    assert not re.search(r"^\s*n\d\d\s*:\s*ok=", large.stdout, re.M)
    assert len(large.stdout.splitlines()) == len(small.stdout.splitlines()), large.stdout


def test_failures_are_shown_in_full(tmp_path):
    proc = run(tmp_path, 12, "-e", '{"fail_on": ["n03", "n07"], "ignore_on": ["n05"], "rescue_on": ["n09"]}')
    out = proc.stdout
    assert proc.returncode == 2, out
    for host in ("n03", "n07"):
        assert re.search(r"fatal: \[%s\]: FAILED! => .*%s is broken: the whole message is shown" % (host, host), out)
    assert re.search(r"fatal: \[n05\]: FAILED! => .*ignored but shown", out) and "...ignoring" in out
    assert re.search(r"fatal: \[n09\]: FAILED! => .*rescued but shown", out)
    assert "TASK [Fails on the hosts listed in fail_on]" in out
    assert "PLAY RECAP: 12 host(s), 10 ok, 2 changed, 2 failed, 0 unreachable" in out
    recap = dict((m.group(1), m.group(2)) for m in re.finditer(r"^  (n\d\d) : (ok=.*)$", out, re.M))
    assert sorted(recap) == ["n03", "n05", "n07", "n09"]
    assert "failed=1" in recap["n03"] and "ignored=1" in recap["n05"] and "rescued=1" in recap["n09"]


def test_verbose_prints_what_the_default_callback_prints(tmp_path):
    proc = run(tmp_path, 3, "-v")
    assert proc.returncode == 0, proc.stdout
    assert re.search(r"^ok: \[n01\]", proc.stdout, re.M)
    assert re.search(r"^n03\s+: ok=", proc.stdout, re.M)


REPEATS = """
- name: Judge on the controller
  hosts: all
  gather_facts: false
  tasks:
    - name: Judge every host at once
      ansible.builtin.debug:
        msg: "judged {{ ansible_play_hosts_all | length }}"
      run_once: true
    - name: Read a file on the controller (the same failure for every host)
      ansible.builtin.fail:
        msg: "cannot read /nonexistent/pod.yaml on the controller"
      when: fail_all | default(false) | bool
- name: Reach the hosts again
  hosts: all
  gather_facts: false
  tasks:
    - name: Ping (a module of the test's own, run on each host like ansible.builtin.ping)
      result:
        result: {ping: pong}
      ignore_unreachable: true
- name: And once more
  hosts: all
  gather_facts: false
  tasks:
    - name: Ping again
      result:
        result: {ping: pong}
"""


def test_run_once_plays_count_every_host_judged(tmp_path):
    # 13 hosts: more than the forks (10) and than the names a line lists (MAX_NAMES)
    proc = run(tmp_path, 13, play=REPEATS.split("- name: Reach the hosts again", maxsplit=1)[0])
    assert proc.returncode == 0, proc.stdout
    assert "judged 13" in proc.stdout
    assert "PLAY RECAP: 13 host(s), 13 ok, 0 changed, 0 failed, 0 unreachable" in proc.stdout, proc.stdout


def test_the_same_failure_is_printed_once_then_counted(tmp_path):
    proc = run(tmp_path, 20, "-e", "fail_all=true", play=REPEATS.split("- name: Reach the hosts again", maxsplit=1)[0])
    out = proc.stdout
    assert proc.returncode == 2, out
    assert len(re.findall(r"^fatal: \[n\d\d\]: FAILED!", out, re.M)) == 1, out
    assert re.search(r"the same failure on 19 more host\(s\): (n\d\d, ){11}n\d\d \(\+7 more\)", out), out
    # the recap is bounded too: 12 host lines, then one line for the rest
    assert len(re.findall(r"^  n\d\d : ok=", out, re.M)) == 12
    assert "  +8 more host(s) that failed, were unreachable, rescued or ignored an error: " in out


def test_an_unreachable_host_is_printed_once(tmp_path):
    proc = run(tmp_path, 2, play=REPEATS, unreachable=["gone"])
    out = proc.stdout
    assert out.count("fatal: [gone]: UNREACHABLE!") == 1, out
    assert "PLAY RECAP: 3 host(s), 2 ok, 0 changed, 0 failed, 1 unreachable" in out, out


RUN_ONCE_FAILS = """
- name: Judge on the controller
  hosts: all
  gather_facts: false
  tasks:
    - name: Every host
      ansible.builtin.set_fact:
        x: 1
    - name: Stop when no host could check the pod
      ansible.builtin.assert:
        that: false
        fail_msg: no host could check the pod
        quiet: true
      run_once: true
"""


def test_a_run_once_failure_is_not_blamed_on_a_host(tmp_path):
    proc = run(tmp_path, 5, play=RUN_ONCE_FAILS)
    out = proc.stdout
    assert proc.returncode == 2, out
    assert out.count("fatal: [run once for the play]: FAILED!") == 1, out
    assert "no host could check the pod" in out, out
    assert not re.search(r"fatal: \[n\d\d", out), out
    assert "PLAY RECAP: 5 host(s), 5 ok, 0 changed, 0 failed, 0 unreachable, 1 run-once task(s) failed" in out, out
    assert "  failed for the play (run once, not a host's failure): Stop when no host could check the pod" in out, out
    assert not re.search(r"^  n\d\d : ok=", out, re.M), out


def test_a_host_failure_next_to_a_run_once_failure_is_still_the_host_s(tmp_path):
    play = RUN_ONCE_FAILS.replace("    - name: Stop when", """    - name: Fails on n01
      ansible.builtin.fail:
        msg: n01 is broken
      when: inventory_hostname == 'n01'
    - name: Stop when""")
    proc = run(tmp_path, 3, play=play)
    out = proc.stdout
    assert "fatal: [n01]: FAILED!" in out and "fatal: [run once for the play]: FAILED!" in out, out
    assert "PLAY RECAP: 3 host(s), 2 ok, 0 changed, 1 failed, 0 unreachable, 1 run-once task(s) failed" in out, out
    assert re.search(r"^  n01 : ok=1 changed=0 unreachable=0 failed=1 ", out, re.M), out


HOST_WARNINGS = """
- name: Warn from every host
  hosts: all
  gather_facts: false
  tasks:
    - name: A module that names its host in its warnings (numa_facts' sysfs fallbacks)
      result:
        result:
          warnings:
            - "host {{ inventory_hostname }}: /sys/devices/system/node/node0/cpulist: does not exist; used cpumap (hex mask)"
            - "a warning without a host"
    - name: Next task
      ansible.builtin.set_fact:
        y: 1
"""


def test_the_same_host_warning_from_many_hosts_is_one_line_naming_them(tmp_path):
    proc = run(tmp_path, 14, play=HOST_WARNINGS)
    out = proc.stdout
    assert proc.returncode == 0, out
    # ansible-core 2.16 and 2.17 wrap a warning at the terminal's width: compare with the lines joined.
    flat = " ".join(out.split())
    assert out.count("cpulist: does not exist") == 1, out
    assert ("[WARNING]: /sys/devices/system/node/node0/cpulist: does not exist; used cpumap (hex mask) "
            "(n01, n02, n03, n04, n05, n06, n07, n08, n09, n10, n11, n12 (+2 more))") in flat, out
    assert out.count("a warning without a host") == 1, out
    assert not re.search(r"host n\d\d:", out), out

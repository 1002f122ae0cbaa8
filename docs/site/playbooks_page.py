# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write the site's playbooks page from the header comments of playbooks/*.yml (their one source).

Usage: python docs/site/playbooks_page.py PLAYBOOK_DIR OUT.rst
"""

import os
import sys


def header(path):
    """The leading comment block of a playbook, without the '# ' prefixes."""
    lines = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("---") and not lines:
                continue
            if not line.startswith("#"):
                break
            lines.append(line[2:].rstrip() if line.startswith("# ") else line[1:].rstrip())
    while lines and not lines[-1]:
        lines.pop()
    return lines


def main(playbook_dir, out):
    names = sorted(f[:-4] for f in os.listdir(playbook_dir) if f.endswith(".yml"))
    parts = [".. _ansible_collections.numaguard.kubelet.playbooks:", "", "Playbooks", "=========", "",
             "The collection's playbooks, run by their fully qualified names, for example",
             "``ansible-playbook -i inventory.yml numaguard.kubelet.discover``.", ""]
    for name in names:
        lines = header(os.path.join(playbook_dir, name + ".yml"))
        if not lines:
            sys.exit("playbooks/%s.yml has no header comment to document it" % name)
        title = "numaguard.kubelet.%s" % name
        parts += [title, "-" * len(title), "", ".. code-block:: text", ""]
        parts += ["   " + line if line else "" for line in lines]
        parts += ["", "Run it with ``ansible-playbook -i INVENTORY %s``." % title, ""]
    with open(out, "w", encoding="utf-8") as handle:
        handle.write("\n".join(parts))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

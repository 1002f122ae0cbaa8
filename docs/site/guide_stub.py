# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write the extra-docs stub page of a guide docs/NAME.md: its label and title, valid rst.

The site build (scripts/docs) replaces each stub by the Markdown guide itself; the stub is what
antsibull-docs lints and what an installed collection's docs/docsite holds.
Usage: python docs/site/guide_stub.py docs/NAME.md OUT_DIR
"""

import os
import sys


def main(md_path, out_dir):
    name = os.path.splitext(os.path.basename(md_path))[0]
    with open(md_path, encoding="utf-8") as handle:
        titles = [line[2:].strip() for line in handle if line.startswith("# ")]
    title = (titles[0] if titles else name).replace("`", "``")
    text = (
        "..\n  Copyright: numaguard.kubelet contributors\n"
        "  GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)\n"
        "  SPDX-License-Identifier: GPL-3.0-or-later\n\n"
        ".. _ansible_collections.numaguard.kubelet.docsite.%s:\n\n%s\n%s\n\n"
        "This guide is ``docs/%s.md`` in the collection; the documentation site shows it here in full\n"
        "(``scripts/docs`` puts the Markdown source in place of this page).\n"
    ) % (name, title, "=" * len(title), name)
    with open(os.path.join(out_dir, name + ".rst"), "w", encoding="utf-8") as handle:
        handle.write(text)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

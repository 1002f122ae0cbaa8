# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Sphinx configuration of the collection's documentation site, built offline by scripts/docs.

No intersphinx: the build must not reach the network, and every warning fails it (-W), so
references outside the collection are plain text or plain links.
"""

project = "numaguard.kubelet"
copyright = "numaguard.kubelet contributors"
title = "numaguard.kubelet documentation"
html_short_title = "numaguard.kubelet"

extensions = ["sphinx_antsibull_ext", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
myst_heading_anchors = 3

pygments_style = "ansible"
highlight_language = "YAML+Jinja"

html_theme = "sphinx_ansible_theme"
html_show_sphinx = False
display_version = False
html_use_smartypants = True
html_use_modindex = False
html_use_index = False
html_copy_source = False

default_role = "any"
nitpicky = True

"""Sphinx configuration of the oi-kernel documentation (MyST Markdown, pydata-sphinx-theme).

Build: ``.venv/bin/sphinx-build -W -n -b html docs docs/_build/html`` (the ``docs`` extra).
The configuration and magics references are generated from the code when the build starts
(``_ext/oi_reference.py``). Nothing here reaches the network.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE / "_ext")]  # this checkout's oi_kernel first

from oi_kernel._version import __version__  # noqa: E402

project = "oi-kernel"
author = "the oi-kernel developers"
copyright = "the oi-kernel developers"
version = release = __version__

extensions = ["myst_parser", "oi_reference"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_generated", "_ext", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 4  # [text](page.md#a-heading) links, as GitHub renders them
nitpicky = True
# A ```json block of the session-log page elides fields with "...": Pygments then highlights it
# leniently, which is what we want; every other warning fails the build (-W).
suppress_warnings = ["misc.highlighting_failure"]

html_theme = "pydata_sphinx_theme"
html_title = f"oi-kernel {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "header_links_before_dropdown": 5,
    "show_toc_level": 1,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"**": ["sidebar-nav-bs"]}
html_static_path = ["_static"]
html_css_files = ["oi.css"]
html_last_updated_fmt = None

# The chorus docs site: Sphinx with MyST (the pages stay Markdown), the API reference from Doxygen's XML through
# breathe. docs/build.sh runs Doxygen and writes the generated settings table first, then sphinx-build -W.
import os
import re

root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
generated = os.environ.get("CHORUS_DOCS_GENERATED", os.path.join(root, "build", "docs", "generated"))


def chorus_version():
    text = open(os.path.join(root, "include", "chorus", "version.hpp")).read()
    parts = [re.search(r"#define CHORUS_VERSION_%s (\d+)" % p, text).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


project = "chorus"
author = "the chorus developers"
release = version = chorus_version()

extensions = ["myst_parser", "breathe"]
source_suffix = {".md": "markdown"}
master_doc = "index"
exclude_patterns = ["_build", "requirements.txt"]
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

breathe_projects = {"chorus": os.path.join(generated, "doxygen", "xml")}
breathe_default_project = "chorus"
breathe_domain_by_extension = {"h": "c", "hpp": "cpp"}

html_theme = "furo"
html_title = "chorus %s" % release
html_static_path = []

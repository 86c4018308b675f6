# The chorus docs site: Sphinx with MyST (the pages stay Markdown), the API reference from Doxygen's XML through
# breathe. docs/build.sh runs Doxygen and writes the generated settings table first, then sphinx-build -W with the
# repository root as the source directory, so that the pages link to perf/RESULTS.md, its archive and reports, and
# CHANGELOG.md where they live (include_patterns below keeps everything else out).
import os
import re

root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
generated = os.environ.get("CHORUS_DOCS_GENERATED", os.path.join(root, "build", "docs", "generated"))


def chorus_version():
    text = open(os.path.join(root, "include", "chorus", "version.hpp")).read()
    parts = [re.search(r"#define CHORUS_VERSION_%s (\d+)" % p, text).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


project = "chorus"
author = "the chorus authors"
copyright = "2026, the chorus authors"
release = version = chorus_version()

extensions = ["myst_parser", "breathe"]
source_suffix = {".md": "markdown"}
root_doc = "docs/index"
include_patterns = ["docs/*.md", "perf/RESULTS.md", "perf/README.md", "perf/archive/*.md", "perf/results/**.md", "CHANGELOG.md"]
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

breathe_projects = {"chorus": os.path.join(generated, "doxygen", "xml")}
breathe_default_project = "chorus"
breathe_domain_by_extension = {"h": "c", "hpp": "cpp"}

html_theme = "furo"
html_title = "chorus %s" % release
html_static_path = []

# The settings table of docs/settings.md comes from the settings registry (chorus-info --settings-markdown), written
# by docs/build.sh before Sphinx runs; the page holds a marker line where it goes.
SETTINGS_MARKER = "% chorus: the generated settings table"


def insert_settings_table(app, docname, source):
    if docname != "docs/settings":
        return
    table = open(os.path.join(generated, "settings-table.md")).read()
    if SETTINGS_MARKER not in source[0]:
        raise RuntimeError("docs/settings.md lost the line '%s'" % SETTINGS_MARKER)
    source[0] = source[0].replace(SETTINGS_MARKER, table)


def setup(app):
    app.connect("source-read", insert_settings_table)

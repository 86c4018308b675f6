#!/usr/bin/env python3
"""The code the README and the docs pages show is code a test runs: every C, C++ and Python block of README.md and
docs/*.md must be lines of one file of examples/ (each example is built and run by ctest), in the file's order, so
that an example cannot change without the snippet failing here. Also: the Python package's version is the
library's (include/chorus/version.hpp).

Usage: snippets_match_examples.py <source dir>
"""

import pathlib
import re
import sys

CHECKED = {"c", "cpp", "c++", "python"}


def blocks(text):
    """(language, lines, line number) of each fenced block."""
    out, lang, body, start = [], None, [], 0
    for number, line in enumerate(text.splitlines(), 1):
        fence = re.match(r"^```\s*([\w+{}-]*)", line)
        if fence and lang is None:
            lang, body, start = fence.group(1).lower(), [], number
        elif line.startswith("```") and lang is not None:
            out.append((lang, body, start))
            lang = None
        elif lang is not None:
            body.append(line)
    return out


def is_subsequence(snippet, lines):
    at = 0
    for want in snippet:
        while at < len(lines) and lines[at] != want:
            at += 1
        if at == len(lines):
            return False
        at += 1
    return True


def main():
    root = pathlib.Path(sys.argv[1])
    examples = {p: [l.strip() for l in p.read_text().splitlines()] for p in (root / "examples").iterdir() if p.is_file()}
    pages = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    failures, checked = [], 0
    for page in pages:
        for lang, body, start in blocks(page.read_text()):
            if lang not in CHECKED:
                continue
            snippet = [l.strip() for l in body if l.strip()]
            checked += 1
            if not any(is_subsequence(snippet, lines) for lines in examples.values()):
                failures.append(f"{page.relative_to(root)}:{start}: this {lang} block is not lines of any file of examples/")
    version = re.findall(r"#define CHORUS_VERSION_(?:MAJOR|MINOR|PATCH) (\d+)",
                         (root / "include/chorus/version.hpp").read_text())
    package = re.search(r'^version = "([^"]+)"', (root / "pyproject.toml").read_text(), re.M).group(1)
    if ".".join(version) != package:
        failures.append(f"pyproject.toml says version {package}, include/chorus/version.hpp {'.'.join(version)}")
    for f in failures:
        print("FAILED:", f)
    if checked < 3:
        print(f"FAILED: only {checked} code blocks found in README.md and docs/")
        return 1
    print(f"{checked} code blocks, each lines of an example; the Python package is version {package}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Check that the documentation's links lead somewhere.

1. Every relative Markdown link [text](path#anchor) in a tracked .md file
   names a file or folder that exists and, with an anchor into a .md file,
   a heading of that file (GitHub's anchor rules).
2. Every "Documentation/<page>.md" named anywhere in the sources (code
   comments, scripts, man pages) exists, so a renamed page cannot leave a
   stale pointer behind.

Usage: check-doc-links.py [--markdown-only] [SOURCE_DIR]. With
--markdown-only, only check 1. Exit 1 and one line per broken link, else 0.
"""
import os
import re
import sys

ARGS = [a for a in sys.argv[1:] if a != "--markdown-only"]
MARKDOWN_ONLY = len(ARGS) < len(sys.argv) - 1
ROOT = os.path.abspath(ARGS[0] if ARGS else
                       os.path.join(os.path.dirname(__file__), ".."))
# Build trees, caches and VCS metadata are not the project's text.
SKIP_DIRS = re.compile(r"^(\..*|build.*|_deps|node_modules)$")
TEXT_EXT = (".md", ".c", ".h", ".cc", ".cpp", ".hpp", ".sh", ".py",
            ".txt", ".cmake", ".3", ".7", ".8", ".map", ".config")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
DOC_PATH = re.compile(r"Documentation/[A-Za-z0-9_./-]*\.md")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def files():
    for d, dirs, names in os.walk(ROOT):
        dirs[:] = sorted(x for x in dirs if not SKIP_DIRS.match(x))
        for n in sorted(names):
            if n.endswith(TEXT_EXT) or n in ("Makefile", "CMakeLists.txt"):
                yield os.path.join(d, n)


def slug(text):
    # GitHub: lower case, drop punctuation but '-' and '_', spaces to '-'.
    text = re.sub(r"`|\*\*|__", "", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, out, fence = {}, set(), False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.lstrip().startswith("```"):
                    fence = not fence
                    continue
                m = None if fence else HEADING.match(line)
                if not m:
                    continue
                s = slug(m.group(2))
                n = seen.get(s, 0)
                seen[s] = n + 1
                out.add(s if n == 0 else "%s-%d" % (s, n))
        cache[path] = out
    return cache[path]


def main():
    bad = []
    for path in files():
        rel = os.path.relpath(path, ROOT)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError:
            continue
        for m in () if MARKDOWN_ONLY else DOC_PATH.finditer(text):
            if not os.path.exists(os.path.join(ROOT, m.group(0))):
                line = text.count("\n", 0, m.start()) + 1
                bad.append("%s:%d: no such page %s" % (rel, line, m.group(0)))
        if not path.endswith(".md"):
            continue
        fence = False
        for no, line in enumerate(text.split("\n"), 1):
            if line.lstrip().startswith("```"):
                fence = not fence
            if fence:
                continue
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, https:, mailto:
                file_part, _, anchor = target.partition("#")
                dest = (os.path.normpath(os.path.join(os.path.dirname(path),
                                                      file_part))
                        if file_part else path)
                if not os.path.exists(dest):
                    bad.append("%s:%d: no such file %s" % (rel, no, target))
                elif anchor and dest.endswith(".md") and \
                        anchor not in anchors(dest):
                    bad.append("%s:%d: no heading #%s in %s" %
                               (rel, no, anchor, os.path.relpath(dest, ROOT)))
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

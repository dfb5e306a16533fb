#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Lint: a family added for the test build stays inside its footprint.

Adding a family touches its folder, the registry and the operation table
(Documentation/firmware/README.md, "Adding a family"). The echo family is
the proof that this holds: every file in the tree that names it must be
one of those (or documentation). Prints each file and line that names it
anywhere else and exits 1.

Usage: check-family-footprint.py SOURCE_DIR
"""
import os
import re
import subprocess
import sys

# Per family: what names it (case-sensitive: the word "echo" alone is
# everywhere in shell scripts and prose), and where it may be named.
FAMILIES = {
    "echo": {
        "names": re.compile(
            r'RHN_\w*ECHO\w*'        # its opcodes and the build switch
            r'|\bkEcho\w*'           # its OpFamily and claims
            r'|\bEcho[A-Z]\w*'       # its types
            r'|\becho_\w+\s*\('      # its functions
            r'|\bops/echo\b'         # its folder
            r'|"echo"'),             # its name in the operation table
        "allowed": (
            "firmware/ops/echo/",
            "firmware/ops/registry.cpp",
            "include/hw/rhinet/hw_ops.h",
            "Documentation/",
            "scripts/check-family-footprint.py",
        ),
    },
}

SKIP_DIRS = ("build", ".git")


def tree_files(root):
    """The files git knows of (tracked, or new and not ignored); every file
    outside the build trees when the tree is not a git checkout."""
    try:
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "-z", "--cached", "--others",
             "--exclude-standard"],
            check=True, capture_output=True).stdout
        return sorted({f for f in out.decode().split("\0") if f})
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith(SKIP_DIRS)]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return sorted(files)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    bad = 0
    for rel in tree_files(root):
        path = os.path.join(root, rel)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue  # deleted in the working tree
        if b"\0" in data:
            continue  # binary
        text = data.decode("utf-8", "replace")
        for family, rule in FAMILIES.items():
            if rel.startswith(rule["allowed"]):
                continue
            for n, line in enumerate(text.splitlines(), 1):
                m = rule["names"].search(line)
                if m:
                    print(f"{rel}:{n}: names the {family} family "
                          f"({m.group(0)}) outside its footprint")
                    bad += 1
    if bad:
        print("A test family lives in its folder, the registry "
              "(firmware/ops/registry.cpp) and the operation table "
              "(include/hw/rhinet/hw_ops.h) only.")
        return 1
    print("family footprints: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

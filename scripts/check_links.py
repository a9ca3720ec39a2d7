#!/usr/bin/env python3
"""Check that every relative link in the repository's Markdown files resolves.

A link [text](path#anchor) must name a file or directory that exists, and an
anchor must be a heading of the Markdown file it points into (GitHub's rule:
lower case, punctuation dropped, spaces to hyphens, -1, -2 … for repeats).
Links to http(s) and mailto are not fetched. Run from anywhere:
    python3 scripts/check_links.py
"""
import os
import re
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(root)
files = subprocess.run(
    ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
    capture_output=True, text=True, check=True).stdout.split()


def lines_outside_code(path):
    fenced = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.startswith("```"):
                fenced = not fenced
                continue
            if not fenced:
                yield n, line


def anchors(path):
    seen, out = {}, set()
    for _, line in lines_outside_code(path):
        m = re.match(r"^#+\s+(.*)", line)
        if m:
            text = m.group(1).strip().lower().replace("`", "")
            slug = "".join(c for c in text if c.isalnum() or c in "-_ ").replace(" ", "-")
            k = seen.get(slug, 0)
            seen[slug] = k + 1
            out.add(slug if k == 0 else f"{slug}-{k}")
    return out


bad = 0
for f in files:
    for n, line in lines_outside_code(f):
        for m in re.finditer(r"\]\(([^)\s]+)\)", line):
            target = m.group(1)
            if re.match(r"^(https?|mailto):", target):
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            if not os.path.exists(dest):
                print(f"{f}:{n}: {target}: no such file")
                bad += 1
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                print(f"{f}:{n}: {target}: no heading #{anchor} in {dest}")
                bad += 1
print(f"{len(files)} Markdown files, {bad} broken links")
sys.exit(1 if bad else 0)

#!/usr/bin/env python3
"""README's map of the code cannot drift: every folder under Sources/ and Tests/, and every Swift file of 100 lines or
more under Sources/, must be named in README's "Layout" section (its table and "Where to look"). A folder is named by
its path from its module (`Records/`) or by its module (`Sources/Feeds`); a file by its name without `.swift`, or, for
an extension file `Type+Part.swift`, by `+Part` beside its type. Run by scripts/test; exits 1 listing what is missing."""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def layout_text():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    start = readme.index("\n## Layout")
    end = readme.find("\n## ", start + 1)
    return readme[start:end if end >= 0 else len(readme)]


def missing():
    text = layout_text()
    problems = []
    for top in ("Sources", "Tests"):
        for module in sorted(os.listdir(os.path.join(ROOT, top))):
            module_path = os.path.join(ROOT, top, module)
            if not os.path.isdir(module_path):
                continue
            if module not in text:
                problems.append("%s/%s: the module is not named" % (top, module))
            for folder, dirs, files in os.walk(module_path):
                dirs.sort()
                relative = os.path.relpath(folder, module_path)
                if relative != "." and relative + "/" not in text and os.path.basename(folder) + "/" not in text:
                    problems.append("%s: the folder is not named" % os.path.relpath(folder, ROOT))
                if top != "Sources":
                    continue
                for name in sorted(files):
                    if not name.endswith(".swift"):
                        continue
                    with open(os.path.join(folder, name), encoding="utf-8") as f:
                        if sum(1 for _ in f) < 100:
                            continue
                    stem = name[:-len(".swift")]
                    part = "+" + stem.split("+", 1)[1] if "+" in stem else None
                    if stem not in text and not (part and re.search(re.escape(part) + r"\b", text)):
                        problems.append("%s: a file of 100+ lines is not named" % os.path.relpath(os.path.join(folder, name), ROOT))
    return problems


if __name__ == "__main__":
    problems = missing()
    if problems:
        print("check-layout: README's Layout does not name:\n  " + "\n  ".join(problems), file=sys.stderr)
        sys.exit(1)
    print("check-layout: every folder and every Swift file of 100+ lines is on README's map")

#!/usr/bin/env python3
"""Module boundaries (src/meson.build): a file of module X may include another module's header only if X
declares that it uses the module and the header is among the module's public headers; the program
(src/app) may include any module's public headers. tests/, bench/ and fuzz/ may reach private headers on
purpose (unit tests of internals), so they are not checked. TAP on stdout.

usage: check_modules.py SOURCE_ROOT 'name|folder|uses,...|public.h,...' ...
"""
import os
import re
import sys

root = sys.argv[1]
modules = {}
for entry in sys.argv[2:]:
    name, folder, uses, public = entry.split("|")
    modules[name] = {"folder": folder, "uses": set(filter(None, uses.split(","))),
                     "public": set(filter(None, public.split(",")))}
by_folder = {m["folder"]: n for n, m in modules.items()}
include = re.compile(r'^\s*#\s*include\s+"(src/[^"]+)"', re.M)

checks = []
for dirpath, _, files in os.walk(os.path.join(root, "src")):
    rel_dir = os.path.relpath(dirpath, root)
    own = by_folder.get(rel_dir)
    for f in sorted(files):
        if not f.endswith((".h", ".cc")):
            continue
        path = os.path.join(rel_dir, f)
        text = open(os.path.join(root, path)).read()
        bad = []
        for target in include.findall(text):
            folder, header = os.path.dirname(target), os.path.basename(target)
            tmod = by_folder.get(folder)
            if tmod is None:
                bad.append(f"{target}: not in any module")
            elif tmod == own:
                continue
            elif header not in modules[tmod]["public"]:
                bad.append(f"{target}: private to module {tmod}")
            elif own is not None and tmod not in modules[own]["uses"]:
                bad.append(f"{target}: module {own} does not declare that it uses {tmod}")
            elif own is None and rel_dir != "src/app":
                bad.append(f"{target}: {rel_dir} is not a module")
        checks.append((path, bad))

failed = 0
for i, (path, bad) in enumerate(checks, 1):
    if bad:
        failed += 1
        print(f"not ok {i} - {path} keeps to its module's boundaries")
        for b in bad:
            print(f"# {b}")
    else:
        print(f"ok {i} - {path} keeps to its module's boundaries")
print(f"1..{len(checks)}")
sys.exit(1 if failed or not checks else 0)

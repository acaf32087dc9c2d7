#!/usr/bin/env python3
"""The malformed-input corpus through the burstscope binary (TAP): each capture file gives its counts or one
clear error line, each configuration its verdict naming the bad key; the combined frame file gives every
frame's reason in the report; and the committed corpus is exactly what tools/make_corpus.py writes.

    check_corpus.py BURSTSCOPE SOURCE_ROOT
"""
import collections
import filecmp
import json
import os
import re
import subprocess
import sys
import tempfile

burstscope, root = sys.argv[1], sys.argv[2]
corpus = os.path.join(root, "tests/corpus")
checks = 0
failed = 0


def ok(cond, what):
    global checks, failed
    checks += 1
    print(("ok" if cond else "not ok"), checks, "-", what)
    if not cond:
        failed += 1
    return cond


def field(doc, dotted):
    for part in dotted.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return None
        doc = doc[part]
    return doc


def run(args):
    return subprocess.run([burstscope] + args, capture_output=True, text=True, timeout=60)


def check_stderr(name, p, pattern):
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    if pattern is None:
        return ok(not lines, f"{name}: nothing on stderr (got {lines[:2]})")
    return ok(len(lines) == 1 and re.search(pattern, lines[0]) is not None,
              f"{name}: one stderr line matching /{pattern}/ (got {lines[:3]})")


# 1. The committed corpus is the generator's output, byte for byte.
with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([sys.executable, os.path.join(root, "tools/make_corpus.py"), tmp], check=True,
                   stdout=subprocess.DEVNULL)
    diffs = []
    for sub in ("frames", "files", "config"):
        a, b = sorted(os.listdir(os.path.join(corpus, sub))), sorted(os.listdir(os.path.join(tmp, sub)))
        if a != b:
            diffs.append(f"{sub}: file lists differ")
            continue
        _, mismatch, errors = filecmp.cmpfiles(os.path.join(corpus, sub), os.path.join(tmp, sub), a, shallow=False)
        diffs += mismatch + errors
    if not filecmp.cmp(os.path.join(corpus, "manifest.json"), os.path.join(tmp, "manifest.json"), shallow=False):
        diffs.append("manifest.json")
    ok(not diffs, f"committed corpus equals tools/make_corpus.py output (differs: {diffs[:5]})")

with open(os.path.join(corpus, "manifest.json")) as f:
    manifest = json.load(f)

# 2. Capture files.
for name, expect in sorted(manifest["files"].items()):
    path = os.path.join(corpus, "files", name)
    p = run(["analyze", "--json", path])
    ok(p.returncode == expect["exit"], f"{name}: exit {expect['exit']} (got {p.returncode}: {p.stderr.strip()[:200]})")
    ok(p.returncode < 128, f"{name}: no crash")
    check_stderr(name, p, expect["stderr"])
    if p.returncode != 0:
        ok(p.stdout == "", f"{name}: no report on failure")
        continue
    report = json.loads(p.stdout)
    if expect.get("frames") == "all":
        frames = manifest["frames"]
        reasons = collections.Counter(e["reason"] for e in frames.values())
        ok(report["packets"] == len(frames), f"{name}: every frame counted ({report['packets']} of {len(frames)})")
        ok(report["decode"]["ok"] == reasons.pop("none"), f"{name}: decoded frames")
        ok(report["decode"]["errors"] == dict(reasons),
           f"{name}: errors by reason as the cases say ({set(report['decode']['errors'].items()) ^ set(reasons.items())})")
        ok(report["decode"]["error_total"] == sum(reasons.values()), f"{name}: error total")
        ok(report["ledger"]["balanced"], f"{name}: ledger balanced")
    for key, want in expect.get("json", {}).items():
        got = field(report, key)
        ok(got == want, f"{name}: {key} = {want!r} (got {got!r})")

# 3. Configurations.
for name, expect in sorted(manifest["config"].items()):
    p = run(["run", "--config", os.path.join(corpus, "config", name), "--check-config"])
    ok(p.returncode == expect["exit"], f"config {name}: exit {expect['exit']} (got {p.returncode}: {p.stderr.strip()[:200]})")
    if expect["stderr"] is not None:
        check_stderr(f"config {name}", p, expect["stderr"])

print(f"1..{checks}")
sys.exit(1 if failed else 0)

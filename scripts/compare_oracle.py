#!/usr/bin/env python3
"""Compares `burstscope analyze --json` output with the reference oracle's JSON (shared/reference).

Criteria (issue 2): packets, bytes, first_ns, last_ns, envelope_bytes and peak_bin_bytes identical; ptm to
1e-9 relative (null where the oracle says null); max_backlog_bytes within 1 byte; mean_bps to 1e-9 relative.
usage: compare_oracle.py ANALYZE.json ORACLE.json      exit 0 when equal, 1 with the differences listed
Standard library only, so it runs with any python3.
"""
import json
import sys


def rel_close(a, b, tol):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= tol * max(abs(a), abs(b), 1e-300)


def pairs_by(ours_list, oracle_list, key, what, errors):
    """Yields (ours, oracle) entries matched on `key`; notes oracle entries we do not have."""
    by_key = {x[key]: x for x in ours_list}
    for o in oracle_list:
        if o[key] in by_key:
            yield by_key[o[key]], o
        else:
            errors.append(f"{what} {o[key]} missing")


def compare(ours, oracle):
    errors = []
    for key in ("packets", "bytes", "first_ns", "last_ns"):
        if ours.get(key) != oracle[key]:
            errors.append(f"{key}: ours {ours.get(key)} oracle {oracle[key]}")
    if not rel_close(ours.get("mean_bps"), oracle["mean_bps"], 1e-9):
        errors.append(f"mean_bps: ours {ours.get('mean_bps')} oracle {oracle['mean_bps']}")
    for o, s in pairs_by(ours.get("scales", []), oracle["scales"], "tau_us", "scale (us)", errors):
        for key in ("envelope_bytes", "peak_bin_bytes"):
            if o[key] != s[key]:
                errors.append(f"tau {s['tau_us']} us {key}: ours {o[key]} oracle {s[key]}")
        if not rel_close(o["ptm"], s["ptm"], 1e-9):
            errors.append(f"tau {s['tau_us']} us ptm: ours {o['ptm']} oracle {s['ptm']}")
    for o, b in pairs_by(ours.get("backlog", []), oracle["backlog"], "rate_gbps", "rate (Gbit/s)", errors):
        if abs(o["max_backlog_bytes"] - b["max_backlog_bytes"]) > 1.0:
            errors.append(f"rate {b['rate_gbps']} Gbit/s max_backlog_bytes: ours {o['max_backlog_bytes']} "
                          f"oracle {b['max_backlog_bytes']}")
    return errors


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        ours = json.load(f)
    with open(sys.argv[2]) as f:
        oracle = json.load(f)
    errors = compare(ours, oracle)
    for e in errors:
        print("MISMATCH", e)
    print(f"{sys.argv[1]}: {'equal to the oracle' if not errors else f'{len(errors)} differences'}")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()

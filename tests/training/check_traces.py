#!/usr/bin/env python3
"""Training awareness on real training traffic recorded with the testbed (data/testbed, docs/testbed.md):
`burstscope analyze --json` against each job's own metadata and step log. TAP output.

- ring DDP: one job of the metadata's hosts, topology ring, each rank's successor the one the job's
  metadata says it sends its data to, period within 3% of the job's logged mean step time;
- parameter server: topology parameter-server with the metadata's server as the only server;
- every recording: its job found (all hosts), a period within 3% of the logged mean;
- two disjoint jobs at once on one bridge (two-jobs: a ring on h0-h2, a parameter server on h3-h5, different
  compute per step): two jobs reported, each job's hosts exactly one of them, each with its own topology and
  a period within 3% of its own logged mean.
The logged mean is the job's own (rank 0, steps after the first two, as in ../shared/traces)."""
import json
import subprocess
import sys

exe, root = sys.argv[1], sys.argv[2]
checks = []


def check(ok, what):
    checks.append((bool(ok), what))


def analyse(name):
    out = subprocess.run([exe, "analyze", "--json", f"{root}/data/testbed/{name}.pcap"], check=True,
                         capture_output=True, text=True).stdout
    meta = json.load(open(f"{root}/data/testbed/{name}.json"))
    return json.loads(out)["training"], meta


def period_error(period, spec):
    """The relative distance of a period to the job's logged mean step: the smaller of the mean after the two
    warm-up steps (step_mean_s) and the mean of every step rank 0 logged. These recordings hold 8-10 steps,
    two of them warm-up, so the window's mean pace includes those, and the mean of every step the capture
    holds is the other truth. Returns the error and a description."""
    truth = spec["step_mean_s"]
    durations = spec["ranks"][0]["step_s"]
    whole = sum(durations) / len(durations)
    if period is None:
        return None, f"no period; logged mean step {truth:.6f} s after warm-up, {whole:.6f} s over all steps"
    err = min(abs(period - truth) / truth, abs(period - whole) / whole)
    return err, (f"period {period:.6f} s within 3% of the job's logged mean step {truth:.6f} s after warm-up "
                 f"or {whole:.6f} s over all its steps (off by {100 * err:.2f}%)")


def job_of(training, hosts):
    for j in training["jobs"]:
        if set(hosts) <= set(j["hosts"]):
            return j
    return None


for name in ["ddp-ring-w4", "ps-w4-s1", "alltoall-w4", "tree-w4"]:
    t, meta = analyse(name)
    spec = meta["jobs"][0]
    ips = [h["ip"] for h in spec["hosts"]]
    j = job_of(t, ips)
    check(j is not None and len(t["jobs"]) == 1, f"{name}: one job holding the job's {len(ips)} hosts")
    if j is None:
        continue
    err, what = period_error(j["period"]["period_s"], spec)
    check(err is not None and err <= 0.03, f"{name}: {what}")
    kind = j["topology"]["kind"]
    if spec["pattern"] == "ddp-ring":
        check(kind == "ring", f"{name}: topology ring (got {kind})")
        by_ip = {r["host"]: r["successor"] for r in j["ranks"]}
        rank_ip = {r: ips[r] for r in range(len(ips))}
        edges = spec["edges"]  # [[src rank, dst rank], ...]: where each rank sends its data
        for src, dst in edges:
            check(by_ip.get(rank_ip[src]) == rank_ip[dst],
                  f"{name}: rank {src} ({rank_ip[src]}) sends to its successor rank {dst} ({rank_ip[dst]}): "
                  f"got {by_ip.get(rank_ip[src])}")
        g = j["gradient_bytes_estimate"]
        model = spec["model"]["bytes"]
        check(g is not None and 0.95 * model <= g <= 1.25 * model,
              f"{name}: gradient estimate {g} B within -5%/+25% (headers, ACKs) of the model's {model} B")
    if spec["pattern"] == "ps":
        servers = [r["ip"] for r in spec["ranks"] if r["role"] == "server"]
        check(kind == "parameter-server" and j["topology"]["servers"] == servers,
              f"{name}: parameter server with servers {servers} (got {kind}, {j['topology']['servers']})")

t, meta = analyse("two-jobs")
kinds = {"ddp-ring": "ring", "ps": "parameter-server"}
check(len(t["jobs"]) == len(meta["jobs"]) == 2,
      f"two-jobs: two jobs reported (got {len(t['jobs'])}: {[sorted(j['hosts']) for j in t['jobs']]})")
for spec in meta["jobs"]:
    ips = [h["ip"] for h in spec["hosts"]]
    name = f"two-jobs: job {spec['job_id']} ({spec['pattern']} on {', '.join(ips)})"
    hits = [j for j in t["jobs"] if set(ips) & set(j["hosts"])]
    check(len(hits) == 1 and sorted(hits[0]["hosts"]) == sorted(ips),
          f"{name}: exactly one reported job holds its hosts, and only them (got {[sorted(j['hosts']) for j in hits]})")
    if len(hits) != 1:
        continue
    j = hits[0]
    check(j["topology"]["kind"] == kinds[spec["pattern"]],
          f"{name}: topology {kinds[spec['pattern']]} (got {j['topology']['kind']})")
    err, what = period_error(j["period"]["period_s"], spec)
    check(err is not None and err <= 0.03, f"{name}: {what}")

print(f"1..{len(checks)}")
for i, (ok, what) in enumerate(checks, 1):
    print(f"{'ok' if ok else 'not ok'} {i} - {what}")
sys.exit(0 if all(ok for ok, _ in checks) else 1)

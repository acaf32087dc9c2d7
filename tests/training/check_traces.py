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
The logged mean is the job's own (rank 0, steps after the first two, as in ../shared/traces).

Steps that happened (SPEC "Steps"), on every recording and job: the step list holds as many steps as the job's
step log (data/testbed/*.steps), numbered from 0, and its first and last steps are the log's first and last: each
starts, and ends, within half a period of the logged one. Half a period: a listed step whose boundaries lie
nearer to a logged step's than to its neighbours' (a period away) is that step, while a list shifted by one step,
or started over the idle seconds before the job, misses by a period or more. The listed steps lie on SPEC's fixed
grid start + kT, cut right after the latest end of any step's traffic, and cannot follow single steps: these
jobs' steps end up to ~50 ms either side of any such grid (steps of 181-308 ms logged against periods of
194-294 ms), and a first step's logged start also holds the warm-up compute before its first traffic (step 0 of
tree-w4 lasts 272 ms against a period of 234). Every boundary that is a previous step's end (the last step's
start, both steps' ends) is held to half a period; the first step's start, which has no previous step, is held to
half a period plus what the logged first step lasted beyond one period.

Model size (SPEC "Model size"), on every ring job: G from transport payload within 1.5% of the job's parameter
bytes (4 bytes x the "params" of its metadata).

Current parallelism (SPEC "Current parallelism", "Phases of a step"), against each job's own metadata:
- pipeline (GPipe): kind pipeline, the stage order the job's `stages` give (hosts by rank), more phases per step
  than microbatches (each microbatch's activations and gradients are their own bursts);
- hybrid (DP x PP): kind hybrid, every pipeline with its stage order and every data-parallel group as the job's
  `pipelines` and `dp_groups` say, and the model size (the groups' reductions) within 1.5% of `param_bytes_total`;
- sharded (ZeRO-3 style): kind sharded, as many phases per step as the job's bursts of collectives
  (`merged_phases_per_step`) within a factor of 2, the model size from the gathers and reductions within 1.5% of
  `param_bytes_total`;
- expert parallel (MoE, and the one all-to-all per step of alltoall): kind expert-parallel, with as many
  all-to-all phases per step as the job logged all-to-alls, within a factor of 2 (a collective may show as two
  bursts on a loaded machine, two may merge).
"""
import json
import re
import subprocess
import sys

from parallelism import model_size, parallelism

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


def logged_steps(name):
    """The job's own step log: (start_ns, duration_s) of each step."""
    steps = []
    for line in open(f"{root}/data/testbed/{name}"):
        m = re.match(r"step=(\d+) start_ns=(\d+) duration_s=([\d.]+)", line)
        if m:
            steps.append((int(m[2]), float(m[3])))
    return steps


def check_steps(name, j, spec):
    log = logged_steps(spec["steps_file"])
    listed = j["steps"]
    period = j["period"]["period_s"]
    check(len(listed) == len(log), f"{name}: {len(listed)} steps listed, as many as the job logged ({len(log)})")
    if not listed or period is None:
        return
    half = period / 2
    warmup = max(0.0, log[0][1] - period)
    for what, edge, got, want, tol in (
            ("first", "starts", listed[0]["start_ns"], log[0][0], half + warmup),
            ("first", "ends", listed[0]["end_ns"], log[0][0] + log[0][1] * 1e9, half),
            ("last", "starts", listed[-1]["start_ns"], log[-1][0], half),
            ("last", "ends", listed[-1]["end_ns"], log[-1][0] + log[-1][1] * 1e9, half)):
        off = (got - want) / 1e9
        check(abs(off) <= tol, f"{name}: {what} step {edge} {1e3 * off:+.1f} ms from the logged one "
                               f"(within {1e3 * tol:.1f} ms)")
    check([s["index"] for s in listed] == list(range(len(listed))),
          f"{name}: steps numbered 0..{len(listed) - 1} from the job's first step")


def check_model_size(name, j, spec):
    """G within 1.5% of a ring's parameter bytes: 4 x its model's params."""
    truth = 4 * spec["model"]["params"]
    for ok, what in model_size(j, truth, f"{name}: model size from payload {j['gradient_bytes_estimate']} B within "
                                         f"1.5% of 4 x {spec['model']['params']} params = {truth} B"):
        check(ok, what)


def job_of(training, hosts):
    for j in training["jobs"]:
        if set(hosts) <= set(j["hosts"]):
            return j
    return None


for name in ["ddp-ring-w4", "ddp-ring-w4-bottleneck", "ps-w4-s1", "alltoall-w4", "tree-w4", "pipeline-w4",
             "pipeline-w3-m6", "hybrid-w4", "sharded-w4", "sharded-w3-l6", "moe-w4"]:
    t, meta = analyse(name)
    spec = meta["jobs"][0]
    ips = [h["ip"] for h in spec["hosts"]]
    j = job_of(t, ips)
    check(j is not None and len(t["jobs"]) == 1, f"{name}: one job holding the job's {len(ips)} hosts")
    if j is None:
        continue
    err, what = period_error(j["period"]["period_s"], spec)
    check(err is not None and err <= 0.03, f"{name}: {what}")
    check_steps(name, j, spec)
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
        check_model_size(name, j, spec)
    for ok, what in parallelism(name, j, spec, ips):
        check(ok, what)
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
    check_steps(name, j, spec)
    if spec["pattern"] == "ddp-ring":
        check_model_size(name, j, spec)

print(f"1..{len(checks)}")
for i, (ok, what) in enumerate(checks, 1):
    print(f"{'ok' if ok else 'not ok'} {i} - {what}")
sys.exit(0 if all(ok for ok, _ in checks) else 1)

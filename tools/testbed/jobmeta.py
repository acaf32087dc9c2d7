#!/usr/bin/env python3
"""Metadata and step logs of testbed runs (stdlib only; called by tools/testbed/testbed).

  jobmeta.py merge STATE_JSON PREFIX LAUNCH_JSON...
      Reads each job's launch file (written by `testbed run`) and its ranks' files (<job prefix>.rank<R>.json,
      written by the jobs), and writes PREFIX.json (the run's metadata, schema below) and the steps log:
      PREFIX.steps for one job, PREFIX.job<K>.steps for several. Exit 1 if a rank file is missing.
  jobmeta.py capture PREFIX.json PCAP TCPDUMP_STDERR SNAPLEN INTERFACE
      Adds the capture section (file, packets, tcpdump's drop counts) to a run's metadata.
  jobmeta.py summary STEPS_FILE
      Prints the summary line of a steps log.

Steps log: one line per step of rank 0 (`step=K start_ns=N duration_s=S`), then the summary
`step_mean_s=M step_min_s=A step_max_s=B` over the steps after the first two (all of them if there are
two or fewer), the format of ../shared/traces/*.steps.
"""

import json
import os
import re
import struct
import sys

SCHEMA = "burstscope-testbed-run/1"

RANK_KEYS = ("rank", "role", "host", "namespace", "ip", "step_start_ns", "step_s")
# Per rank, where the job says: its pipeline stage and pipeline (pipeline, hybrid).
RANK_OPTIONAL = ("stage", "pipeline")
# The job's truth beyond the common keys, taken from rank 0's file where the job writes it (docs/testbed.md).
JOB_OPTIONAL = (
    "servers", "workers", "collective", "reduce_edges",  # ps; all; tree
    "stages", "pipelines", "dp_groups", "pipeline_edges", "dp_edges",  # pipeline, hybrid
    "microbatches", "microbatch_size", "activation_bytes",  # pipeline, hybrid
    "params_total", "param_bytes_total",  # pipeline, hybrid, sharded, moe
    "phases_per_step",  # sharded, moe
    "merged_phases_per_step", "shard_elements", "gather_edges", "reduce_scatter_edges",  # sharded
    "moe_layers", "experts_per_layer", "tokens_per_rank",  # moe
)


def summary(durations):
    body = durations[2:] if len(durations) > 2 else durations
    if not body:
        return None
    return {"step_mean_s": sum(body) / len(body), "step_min_s": min(body), "step_max_s": max(body)}


def summary_line(s):
    return f"step_mean_s={s['step_mean_s']:.6f} step_min_s={s['step_min_s']:.6f} step_max_s={s['step_max_s']:.6f}"


def merge(state_path, prefix, launch_paths):
    state = json.load(open(state_path))
    jobs, missing = [], []
    for path in launch_paths:
        launch = json.load(open(path))
        ranks = []
        for r in range(launch["world_size"]):
            f = f"{launch['prefix']}.rank{r}.json"
            if not os.path.exists(f):
                missing.append(f)
                continue
            ranks.append(json.load(open(f)))
        if missing:
            continue
        first = ranks[0]
        job = {
            "job_id": launch["job_id"],
            "pattern": launch["pattern"],
            "world_size": launch["world_size"],
            "master": {"ip": launch["master_addr"], "port": launch["master_port"]},
            "hosts": launch["hosts"],
            "args": launch["args"],
            "model": first["model"],
            "batch": first["batch"],
            "steps": first["steps"],
            "compute_ms": first["compute_ms"],
            # Logical communication graph in ranks (directed: who sends its bulk data to whom).
            "edges": first["edges"],
            "ranks": [{k: rk[k] for k in RANK_KEYS + tuple(k for k in RANK_OPTIONAL if k in rk)}
                      for rk in ranks],
        }
        for key in JOB_OPTIONAL:
            if key in first:
                job[key] = first[key]
        s = summary(first["step_s"])
        if s:
            job.update(s)
        jobs.append(job)
    if missing:
        print("jobmeta: missing rank files (a rank failed?): " + " ".join(missing), file=sys.stderr)
        return 1
    doc = {
        "schema": SCHEMA,
        "testbed": {k: state[k] for k in ("name", "workers", "mtu", "rate", "loss", "subnet", "erspan", "tap",
                                          "switch_namespace", "span_namespace", "span_interface",
                                          "erspan_interface", "hosts", "mirror")},
        "jobs": jobs,
    }
    steps_files = []
    for job in jobs:
        name = f"{prefix}.steps" if len(jobs) == 1 else f"{prefix}.job{job['job_id']}.steps"
        rank0 = job["ranks"][0]
        with open(name, "w") as f:
            for i, (t, d) in enumerate(zip(rank0["step_start_ns"], rank0["step_s"])):
                f.write(f"step={i} start_ns={t} duration_s={d:.6f}\n")
            s = summary(rank0["step_s"])
            if s:
                f.write(summary_line(s) + "\n")
        job["steps_file"] = os.path.basename(name)
        steps_files.append(name)
    with open(f"{prefix}.json", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return 0


def pcap_count(path):
    """Records in a pcap file (either byte order, µs or ns magic)."""
    with open(path, "rb") as f:
        head = f.read(24)
        magic = struct.unpack("<I", head[:4])[0]
        endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
        n = 0
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return n
            caplen = struct.unpack(endian + "IIII", rec)[2]
            f.seek(caplen, 1)
            n += 1


def capture(meta_path, pcap, stderr_path, snaplen, interface):
    doc = json.load(open(meta_path))
    text = open(stderr_path).read()
    counts = {}
    for key, pattern in (("tcpdump_captured", r"(\d+) packets? captured"),
                         ("tcpdump_received_by_filter", r"(\d+) packets? received by filter"),
                         ("tcpdump_dropped_by_kernel", r"(\d+) packets? dropped by kernel")):
        m = re.search(pattern, text)
        counts[key] = int(m.group(1)) if m else None
    doc["capture"] = {"file": os.path.basename(pcap), "format": "pcap, nanosecond timestamps",
                      "snaplen": int(snaplen), "interface": interface, "tool": "tcpdump",
                      "packets": pcap_count(pcap), **counts}
    with open(meta_path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return 0


def main(argv):
    if len(argv) >= 4 and argv[1] == "merge":
        return merge(argv[2], argv[3], argv[4:])
    if len(argv) == 7 and argv[1] == "capture":
        return capture(*argv[2:])
    if len(argv) == 3 and argv[1] == "summary":
        lines = [l for l in open(argv[2]) if l.startswith("step_mean_s=")]
        print(lines[-1].strip() if lines else "")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

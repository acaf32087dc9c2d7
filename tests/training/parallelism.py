"""The current-parallelism checks (SPEC "Current parallelism", "Phases of a step", "Model size") of one reported
job against the testbed job's own metadata (docs/testbed.md): shared by the offline checks on the committed
recordings (check_traces.py) and the live ones on the testbed (tests/integration/testbed_test.sh).

Each function returns a list of (passed, description)."""


def model_size(j, truth, what):
    """G within 1.5% of the given parameter bytes."""
    g = j["gradient_bytes_estimate"]
    err = None if g is None else (g - truth) / truth
    return [(err is not None and abs(err) <= 0.015, what + ("" if err is None else f" (off by {100 * err:+.2f}%)"))]


def parallelism(name, j, spec, ips, model=True):
    """Kind, stages, groups, phases and (model=True) model size of a pipeline, hybrid, sharded or expert-parallel
    job; ips are the job's host addresses by rank."""
    kind, topo, phases = j["topology"]["kind"], j["topology"], j["phases"]
    pattern = spec["pattern"]
    out = []
    if pattern == "pipeline":
        stages = [ips[r] for r in spec["stages"]]
        out.append((kind == "pipeline" and topo["order"] == stages,
                    f"{name}: pipeline with stages {stages} (got {kind} {topo['order']}: {topo['evidence']})"))
        out.append((phases["count"] > spec["microbatches"],
                    f"{name}: {phases['count']} phases per step, more than its {spec['microbatches']} microbatches"))
    if pattern == "hybrid":
        pipes = sorted([ips[r] for r in p] for p in spec["pipelines"])
        groups = [sorted(ips[r] for r in g) for g in spec["dp_groups"]]
        out.append((kind == "hybrid" and sorted(topo["pipelines"]) == pipes,
                    f"{name}: hybrid with pipelines {pipes} in stage order (got {kind} {topo['pipelines']}: "
                    f"{topo['evidence']})"))
        out.append(([sorted(g) for g in topo["groups"]] == groups,
                    f"{name}: data-parallel groups {groups}, stage 0 first (got {topo['groups']})"))
        if model:
            out += model_size(j, spec["param_bytes_total"],
                              f"{name}: model size from the groups' reductions {j['gradient_bytes_estimate']} B "
                              f"within 1.5% of {spec['param_bytes_total']} B")
    if pattern == "sharded":
        want = spec["merged_phases_per_step"]
        out.append((kind == "sharded" and want / 2 <= phases["count"] <= want * 2,
                    f"{name}: sharded with {phases['count']} phases per step, as many as its {want} bursts of "
                    f"collectives (gathers, a reduce-scatter merged with the next gather) within a factor of 2 "
                    f"(got {kind}: {topo['evidence']})"))
        if model:
            out += model_size(j, spec["param_bytes_total"],
                              f"{name}: model size from the gathers and reductions {j['gradient_bytes_estimate']} B "
                              f"within 1.5% of {spec['param_bytes_total']} B")
    if pattern in ("moe", "alltoall"):
        n = len(ips)
        a2a = sum(1 for p in phases["phases"] if p["pairs"] >= 0.9 * n * (n - 1))
        want = spec.get("phases_per_step", 1)
        out.append((kind == "expert-parallel" and want / 2 <= a2a <= want * 2,
                    f"{name}: expert-parallel with {a2a} all-to-all phases per step, as many as its {want} "
                    f"all-to-alls within a factor of 2 (got {kind}: {topo['evidence']})"))
    return out

"""Data parallel x pipeline parallel: GPipe pipelines of P stages, each stage replicated W/P times (gloo).

--pipeline-stages P (default 2); the world size W must be a multiple of P. The pipelines are consecutive rank
blocks [0..P-1], [P..2P-1], ...: rank r is stage r % P of pipeline r // P. Inside each pipeline the schedule is
pipeline.py's GPipe (M microbatches of send/recv forward, then backward). Stage s of every pipeline forms a
data-parallel group (dist.new_group; every rank creates every group, in stage order); after the pipeline's
backward each rank all-reduces its stage's flat gradient on its group (one all_reduce per step), averages it
and applies SGD, so the replicas of a stage stay identical. Each pipeline trains on its own data.

On the wire: the pipelines' activation and gradient messages between consecutive stages (s -> s+1, s+1 -> s),
then, after each pipeline's drain, one gloo ring all-reduce per stage group (each rank sends its segments to
the group's previous rank; for groups of two both directions carry the same volume): 2 (D-1)/D of a stage's
parameters per rank, D = W/P.
"""

import torch.distributed as dist

import common
import pipeline


def extra(p):
    pipeline.extra(p)
    p.add_argument("--pipeline-stages", type=int, default=2, help="stages per pipeline (P)")


def ring_edges(group):
    """gloo's ring all-reduce (gloo/allreduce.cc) in a group: each member sends to the group's previous one."""
    n = len(group)
    return [[group[i], group[(i - 1) % n]] for i in range(n)] if n > 1 else []


def main():
    args = common.parse_args("hybrid", extra)
    rank, world = common.init(args)
    P = args.pipeline_stages
    if P < 1 or world % P:
        raise SystemExit(f"hybrid: the world size {world} must be a multiple of --pipeline-stages {P}")
    D = world // P
    pipelines = [list(range(p * P, (p + 1) * P)) for p in range(D)]
    dp_groups = [[p * P + s for p in range(D)] for s in range(P)]
    groups = [dist.new_group(g) for g in dp_groups]  # every rank, every group, the same order
    replica, stage = rank // P, rank % P
    mb = pipeline.microbatch_size(args)
    module = pipeline.build_stage(args, stage, stage == P - 1)
    stage_params = common.model_numbers(module)[0]
    clock = common.StepClock()
    dist.barrier()
    for step in range(args.steps):
        clock.start()
        pipeline.gpipe_step(args, module, pipelines[replica], stage, replica, step)
        grad = common.flat_grads(module)
        if D > 1:
            dist.all_reduce(grad, group=groups[stage])
            grad /= D
        pipeline.sgd(module, grad, args.lr)
        clock.stop()
    pp_edges = pipeline.pipeline_edges(pipelines)
    dp_edges = sorted(e for g in dp_groups for e in ring_edges(g))
    params_total = stage_params * P  # one replica: all stages of one pipeline
    common.finish(args, "hybrid", rank, world, "stage", module, clock,
                  sorted(map(list, {tuple(e) for e in pp_edges + dp_edges})),
                  {"collective": "GPipe pipelines (send/recv between consecutive stages) + all_reduce (gloo ring) "
                                 "of each stage's gradient in its data-parallel group",
                   "stage": stage, "pipeline": replica, "pipelines": pipelines, "dp_groups": dp_groups,
                   "pipeline_edges": pp_edges, "dp_edges": dp_edges,
                   "microbatches": args.microbatches, "microbatch_size": mb,
                   "activation_bytes": mb * args.width * 4,
                   "params_total": params_total, "param_bytes_total": params_total * 4})


if __name__ == "__main__":
    main()

"""Reduce to a root, then broadcast from it: dist.reduce and dist.broadcast with gloo.

Each step every rank computes its gradients; dist.reduce sums them onto rank 0, which applies SGD, and
dist.broadcast sends the new parameters to everyone. What gloo puts on the wire (gloo/reduce.cc,
gloo/broadcast.cc): the reduce is a ring reduce-scatter toward rank-1 followed by a gather of every rank's
reduced chunk to the root; the broadcast is a binomial tree from the root (rank 0 sends to 1, 2, 4, ...;
rank 1 to 3, ...). So the busiest pairs are the root's outgoing tree edges.
"""

import torch
import torch.distributed as dist

import common


def binomial_edges(world, root=0):
    """gloo's broadcast tree: in round i every virtual rank v < 2^i sends to v + 2^i."""
    edges = []
    for i in range(max(1, (world - 1).bit_length())):
        for v in range(1 << i):
            if v + (1 << i) < world:
                edges.append([(v + root) % world, (v + (1 << i) + root) % world])
    return sorted(edges)


def main():
    args = common.parse_args("tree")
    rank, world = common.init(args)
    model = common.mlp(args)
    clock = common.StepClock()
    dist.barrier()
    for step in range(args.steps):
        clock.start()
        common.local_gradients(model, args, rank, step)
        common.compute_pause(args)
        grads = common.flat_grads(model)
        dist.reduce(grads, dst=0)
        flat = common.flat_params(model)
        if rank == 0:
            flat -= args.lr * grads / world
        dist.broadcast(flat, src=0)
        common.load_flat(model, flat)
        clock.stop()
    ring = [[r, (r - 1) % world] for r in range(world)]
    gather = [[r, 0] for r in range(1, world)]
    common.finish(args, "tree", rank, world, "root" if rank == 0 else "peer", model, clock,
                  binomial_edges(world),
                  {"collective": "reduce (gloo: ring reduce-scatter + gather to root) + broadcast (binomial tree)",
                   "reduce_edges": sorted(ring + gather)})


if __name__ == "__main__":
    main()

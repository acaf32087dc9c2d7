"""All-to-all exchange (an expert-parallel / embedding-exchange step): dist.all_to_all_single with gloo.

Each step every rank computes its gradients, then sends 1/W of its flat gradient vector to every other rank
and receives as much from each (gloo in PyTorch 1.13 has all_to_all_single; the list form all_to_all is not
implemented). On the wire: a full mesh, every ordered pair of ranks carries the same volume each step.
"""

import torch
import torch.distributed as dist

import common


def main():
    args = common.parse_args("alltoall")
    rank, world = common.init(args)
    model = common.mlp(args)
    clock = common.StepClock()
    dist.barrier()
    for step in range(args.steps):
        clock.start()
        common.local_gradients(model, args, rank, step)
        common.compute_pause(args)
        grads = common.flat_grads(model)
        n = grads.numel() - grads.numel() % world  # equal splits
        out = torch.empty(n)
        dist.all_to_all_single(out, grads[:n].contiguous())
        # Each rank now holds everyone's slice r of the gradients: average it and apply it to that slice.
        mean = out.view(world, n // world).mean(dim=0)
        flat = common.flat_params(model)
        lo = rank * (n // world)
        flat[lo:lo + n // world] -= args.lr * mean
        common.load_flat(model, flat)
        clock.stop()
    edges = [[a, b] for a in range(world) for b in range(world) if a != b]
    common.finish(args, "alltoall", rank, world, "peer", model, clock, edges,
                  {"collective": "all_to_all_single"})


if __name__ == "__main__":
    main()

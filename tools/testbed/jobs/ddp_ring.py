"""DDP ring all-reduce: torch DistributedDataParallel with the gloo backend (its all-reduce is gloo's ring).

Every rank holds the whole MLP; each step it computes its gradients, and DDP all-reduces them in buckets
during backward. On the wire: each rank streams to rank-1 (reduce-scatter then all-gather,
2 (W-1)/W of the model per rank and step) and acknowledges rank+1; DDP's construction adds one broadcast of
the model from rank 0 (a binomial tree: 0 to 1 and 2, 1 to 3, ...).
"""

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

import common


def main():
    args = common.parse_args("ddp-ring")
    rank, world = common.init(args)
    model = common.mlp(args)
    ddp = DDP(model)  # broadcasts rank 0's parameters once, at construction
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr)
    clock = common.StepClock()
    torch.distributed.barrier()
    for step in range(args.steps):
        clock.start()
        g = torch.Generator().manual_seed(args.seed * 1000003 + rank * 1009 + step)
        x = torch.randn(args.batch, args.width, generator=g)
        y = torch.randn(args.batch, args.width, generator=g)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        common.compute_pause(args)
        loss.backward()  # the all-reduce happens here
        opt.step()
        clock.stop()
    # gloo's ring (gloo/allreduce.cc) sends each rank's segments to rank-1 and acknowledges rank+1; the
    # end-to-end test checks that the ring found on the wire is this one.
    edges = [[r, (r - 1) % world] for r in range(world)] if world > 1 else []
    common.finish(args, "ddp-ring", rank, world, "worker", model, clock, edges,
                  {"collective": "DistributedDataParallel all-reduce (gloo ring)"})


if __name__ == "__main__":
    main()

"""Parameter server: point-to-point send/recv between worker ranks and server ranks (gloo).

Ranks 0..S-1 are servers (--servers S, default 1), the rest workers. The flat parameter vector is split into S
shards, shard s held by server s. Each step every worker computes its gradients and pushes shard s of them to
server s; each server waits for every worker's shard, averages, applies SGD and sends the new shard back to
every worker. On the wire: fan-in of W-S pushes onto each server's link, then fan-out of the same size.
"""

import torch
import torch.distributed as dist

import common


def extra(p):
    p.add_argument("--servers", type=int, default=1, help="server ranks (0..S-1)")


def shards(n, s):
    bounds = [n * i // s for i in range(s + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(s)]


def main():
    args = common.parse_args("ps", extra)
    rank, world = common.init(args)
    if not 1 <= args.servers < world:
        raise SystemExit(f"ps: --servers must be 1..{world - 1}")
    servers, workers = list(range(args.servers)), list(range(args.servers, world))
    model = common.mlp(args)  # same seed on every rank: identical initial parameters
    flat = common.flat_params(model)
    parts = shards(flat.numel(), args.servers)
    clock = common.StepClock()
    dist.barrier()
    for step in range(args.steps):
        clock.start()
        if rank in servers:
            lo, hi = parts[rank]
            bufs = {w: torch.empty(hi - lo) for w in workers}
            for w in [dist.irecv(bufs[w], src=w) for w in workers]:
                w.wait()
            grad = torch.stack(list(bufs.values())).mean(dim=0)
            flat[lo:hi] -= args.lr * grad
            shard = flat[lo:hi].clone()
            for w in [dist.isend(shard, dst=w) for w in workers]:
                w.wait()
        else:
            common.local_gradients(model, args, rank, step)
            common.compute_pause(args)
            grads = common.flat_grads(model)
            sends = [dist.isend(grads[lo:hi].clone(), dst=s) for s, (lo, hi) in zip(servers, parts)]
            recvs = [dist.irecv(flat[lo:hi], src=s) for s, (lo, hi) in zip(servers, parts)]
            for w in sends + recvs:
                w.wait()
            common.load_flat(model, flat)
        clock.stop()
    edges = [[w, s] for w in workers for s in servers] + [[s, w] for s in servers for w in workers]
    common.finish(args, "ps", rank, world, "server" if rank in servers else "worker", model, clock, edges,
                  {"servers": servers, "workers": workers})


if __name__ == "__main__":
    main()

"""Fully sharded data parallel (ZeRO-3 / FSDP style): all_gather and reduce-scatter per layer (gloo).

Every rank holds a 1/W shard of each layer's flat parameters (weight and bias, zero-padded to a multiple of W)
and trains on its own batch. Each step:
  forward, layer by layer: dist.all_gather of the layer's shards into the full layer, the layer's compute
    (its input kept), a compute pause;
  backward, layer by layer in reverse: dist.all_gather of the layer again (the full layer was freed after the
    forward), a compute pause, the layer's backward (autograd on the layer with the kept input and the
    upstream gradient), then the reduce-scatter of its flat gradient and SGD on the own shard.
gloo has no reduce_scatter, so it is dist.all_to_all_single (slice j of the flat gradient to rank j) and a sum
of the W slices received: exactly reduce-scatter's wire volume, (W-1)/W of the layer per rank.
Compute: --compute-ms per step, a third in the forward pauses, two thirds in the backward pauses.

On the wire: gloo's all_gather is a ring (gloo/allgather.cc: each rank sends to rank+1), (W-1)/W of the layer
per rank; the all-to-all is a full mesh, 1/W of the layer on every ordered pair.
"""

import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

import common


def pause(args, fraction):
    time.sleep(args.compute_ms / 1000.0 * fraction)


def main():
    args = common.parse_args("sharded")
    rank, world = common.init(args)
    model = common.mlp(args)  # the full model, same seed everywhere; each rank keeps only its shards of it
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    L, w = len(linears), args.width
    n = w * w + w  # one layer's flat parameters
    per = -(-n // world)  # shard size (elements), n padded to per * world
    shards = []
    for lin in linears:
        flat = torch.zeros(per * world)
        flat[:n] = torch.cat([lin.weight.data.reshape(-1), lin.bias.data])
        shards.append(flat[rank * per:(rank + 1) * per].clone())

    def gather(i):
        parts = [torch.empty(per) for _ in range(world)]
        dist.all_gather(parts, shards[i])
        full = torch.cat(parts)
        return full[:w * w].view(w, w), full[w * w:n]

    clock = common.StepClock()
    dist.barrier()
    for step in range(args.steps):
        clock.start()
        g = torch.Generator().manual_seed(args.seed * 1000003 + rank * 1009 + step)
        x = torch.randn(args.batch, w, generator=g)
        y = torch.randn(args.batch, w, generator=g)
        saved = []
        with torch.no_grad():
            for i in range(L):
                weight, bias = gather(i)
                saved.append(x)
                x = F.linear(x, weight, bias)
                if i < L - 1:
                    x = F.relu(x)
                pause(args, 1.0 / (3 * L))
        out = x.requires_grad_()
        F.mse_loss(out, y).backward()
        upstream = out.grad
        for i in reversed(range(L)):
            weight, bias = gather(i)
            pause(args, 2.0 / (3 * L))
            weight.requires_grad_()
            bias.requires_grad_()
            xin = saved[i].requires_grad_(i > 0)
            h = F.linear(xin, weight, bias)
            if i < L - 1:
                h = F.relu(h)
            h.backward(upstream)
            upstream = xin.grad
            flat = torch.zeros(per * world)
            flat[:n] = torch.cat([weight.grad.reshape(-1), bias.grad])
            recv = torch.empty(per * world)
            dist.all_to_all_single(recv, flat)  # reduce-scatter: slice j to rank j, then the sum below
            shards[i] -= args.lr * recv.view(world, per).sum(dim=0) / world
        clock.stop()
    # Collectives per step: L all_gathers forward, L all_gathers + L reduce-scatters backward. On the wire,
    # the reduce-scatter of layer i and the all_gather of layer i-1 have no compute between them (only the
    # tiny shard update), so they merge into one burst: L forward bursts, then G(L-1), RS(L-1)+G(L-2), ...,
    # RS(1)+G(0), RS(0): 2L+1 separated phases. The forward gathers are separated by their layers' pauses,
    # and the last forward gather from the first backward one by layer L-1's forward pause.
    gather_edges = [[r, (r + 1) % world] for r in range(world)] if world > 1 else []
    rs_edges = [[a, b] for a in range(world) for b in range(world) if a != b]
    params_total = common.model_numbers(model)[0]
    common.finish(args, "sharded", rank, world, "peer", model, clock,
                  sorted(map(list, {tuple(e) for e in gather_edges + rs_edges})),
                  {"collective": "FSDP/ZeRO-3: all_gather (gloo ring) of each layer's shards forward and again "
                                 "backward, reduce-scatter of its gradient (all_to_all_single + sum)",
                   "params_total": params_total, "param_bytes_total": params_total * 4,
                   "shard_elements": per, "phases_per_step": 3 * L, "merged_phases_per_step": 2 * L + 1,
                   "gather_edges": gather_edges, "reduce_scatter_edges": rs_edges})


if __name__ == "__main__":
    main()

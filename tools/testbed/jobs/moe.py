"""Expert parallel (mixture of experts): two all_to_all_single per MoE layer forward, two backward (gloo).

W ranks, --moe-layers K (default 2). MoE layer k is a dense Linear (the non-expert part, replicated on every
rank) followed by an expert Linear, one expert per rank: rank j holds expert j of every layer. Each rank has
--batch tokens of --width floats (rounded down to a multiple of W). Forward, per layer: the dense part, then
the tokens are dispatched with dist.all_to_all_single in equal splits (a fixed router: token block j goes to
expert j), the expert computes on the W blocks it received, and a second all_to_all_single combines the
results back to the tokens' ranks. Backward, per layer in reverse: the same two all-to-alls carry the gradients
of the combined tokens (to the experts) and of the dispatched tokens (back to their ranks). Then every rank
applies SGD to its own parameters; the data-parallel all-reduce of the dense (non-expert) parameters a real job
would add is left out, so the only bulk traffic is the all-to-alls. Compute: --compute-ms per step, a third
forward, two thirds backward, half of each layer's share in its dense part and half in its expert.

On the wire: 4K all-to-alls per step, each a full mesh with batch x width x 4 / W bytes on every ordered pair,
separated by the compute pauses. --layers is not used.
"""

import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

import common


def extra(p):
    p.add_argument("--moe-layers", type=int, default=2, help="MoE layers (K), one expert per rank in each")


class AllToAll(torch.autograd.Function):
    """all_to_all_single in equal splits; its own inverse, so the backward is the same exchange."""

    @staticmethod
    def forward(ctx, x):
        out = torch.empty_like(x)
        dist.all_to_all_single(out, x.contiguous())
        return out

    @staticmethod
    def backward(ctx, grad):
        out = torch.empty_like(grad)
        dist.all_to_all_single(out, grad.contiguous())
        return out


class Compute(torch.autograd.Function):
    """Identity that pauses fwd_s seconds in the forward and bwd_s in the backward (the accelerator's work)."""

    @staticmethod
    def forward(ctx, x, fwd_s, bwd_s):
        ctx.bwd_s = bwd_s
        time.sleep(fwd_s)
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        time.sleep(ctx.bwd_s)
        return grad, None, None


def main():
    args = common.parse_args("moe", extra)
    rank, world = common.init(args)
    K, w = args.moe_layers, args.width
    tokens = args.batch - args.batch % world
    if K < 1 or tokens < world:
        raise SystemExit(f"moe: needs --moe-layers >= 1 and --batch >= the world size {world}")
    dense, experts = torch.nn.ModuleList(), torch.nn.ModuleList()
    for k in range(K):
        torch.manual_seed(args.seed * 7919 + k)  # the dense part: the same on every rank
        dense.append(torch.nn.Linear(w, w))
        torch.manual_seed(args.seed * 7919 + 1000 * (k + 1) + rank)  # expert `rank` of layer k
        experts.append(torch.nn.Linear(w, w))
    model = torch.nn.ModuleList([dense, experts])
    fwd_s = args.compute_ms / 1000.0 / 3 / K / 2
    bwd_s = 2 * fwd_s
    clock = common.StepClock()
    dist.barrier()
    for step in range(args.steps):
        clock.start()
        g = torch.Generator().manual_seed(args.seed * 1000003 + rank * 1009 + step)
        x = torch.randn(tokens, w, generator=g)
        y = torch.randn(tokens, w, generator=g)
        model.zero_grad(set_to_none=False)
        for k in range(K):
            h = Compute.apply(F.relu(dense[k](x)), fwd_s, bwd_s)
            d = AllToAll.apply(h)  # dispatch: block j of my tokens to expert j
            e = Compute.apply(F.relu(experts[k](d)), fwd_s, bwd_s)
            x = AllToAll.apply(e)  # combine: each block back to its tokens' rank
        F.mse_loss(x, y).backward()  # the 2K backward all-to-alls, in reverse layer order
        with torch.no_grad():
            for p in model.parameters():
                p -= args.lr * p.grad
        clock.stop()
    edges = [[a, b] for a in range(world) for b in range(world) if a != b]
    layer = w * w + w
    params_total = K * layer + K * world * layer  # the dense parts once, every expert
    args.layers = 2 * K  # this rank's Linear layers: K dense, K experts (the rank's `model` entry)
    common.finish(args, "moe", rank, world, "expert", model, clock, edges,
                  {"collective": "expert parallel: all_to_all_single dispatch + combine per MoE layer, "
                                 "forward and backward",
                   "moe_layers": K, "experts_per_layer": world, "tokens_per_rank": tokens,
                   "phases_per_step": 4 * K,
                   "params_total": params_total, "param_bytes_total": params_total * 4})


if __name__ == "__main__":
    main()

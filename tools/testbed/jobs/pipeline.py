"""Pipeline parallel (GPipe): point-to-point send/recv between consecutive stages (gloo).

W ranks are W stages, rank r is stage r (stage order = rank order; `--hosts` places the ranks on workers).
Each stage holds --layers MLP layers of --width (its own layers: no data parallelism). Each step splits the
--batch samples into --microbatches M microbatches. Forward, microbatch by microbatch: stage s>0 receives the
activations from stage s-1, computes, and stage s<W-1 sends its activations to stage s+1; the last stage
computes an MSE loss. Backward, in reverse microbatch order: stage s<W-1 receives the gradient of its output
from stage s+1, back-propagates, and stage s>0 sends the gradient of its input to stage s-1. Then every stage
applies SGD to its own layers. Compute: --compute-ms per stage and step, a third in the M forward pauses, two
thirds in the M backward pauses (a backward costs about twice a forward).

On the wire: each step, M messages of (batch/M) x width floats on every edge s -> s+1 (activations), then M
of the same size on every edge s+1 -> s (gradients); the stages' transfers follow each other down the pipeline
and back (the GPipe fill and drain), nothing between non-adjacent stages.
"""

import time

import torch
import torch.distributed as dist

import common


def extra(p):
    p.add_argument("--microbatches", type=int, default=4, help="microbatches per step (the batch is split)")


def pause(args, fraction):
    time.sleep(args.compute_ms / 1000.0 * fraction)


def build_stage(args, stage, last):
    """Stage `stage` of the model: --layers Linear layers (common.mlp), a ReLU after it unless it is the last
    stage. Seeded by stage, so replicas of a stage (hybrid's data-parallel groups) start identical."""
    torch.manual_seed(args.seed * 7919 + stage)
    body = common.mlp(args)
    return body if last else torch.nn.Sequential(body, torch.nn.ReLU())


def microbatch_size(args):
    if not 1 <= args.microbatches <= args.batch:
        raise SystemExit(f"--microbatches must be 1..--batch ({args.batch})")
    return args.batch // args.microbatches


def microbatch(args, replica, step, m, mb):
    """Input and target of microbatch m (the first stage uses the input, the last the target)."""
    g = torch.Generator().manual_seed(args.seed * 1000003 + replica * 100003 + step * 1009 + m)
    return torch.randn(mb, args.width, generator=g), torch.randn(mb, args.width, generator=g)


def gpipe_step(args, module, ranks, stage, replica, step):
    """One GPipe step of stage `stage` of the pipeline `ranks` (global ranks in stage order): all forwards,
    then all backwards in reverse microbatch order. Leaves the stage's gradients on its parameters."""
    last, n = stage == len(ranks) - 1, args.microbatches
    mb = microbatch_size(args)
    module.zero_grad(set_to_none=False)
    inputs, outputs = [], []
    for m in range(n):
        if stage == 0:
            x = microbatch(args, replica, step, m, mb)[0]
        else:
            x = torch.empty(mb, args.width)
            dist.recv(x, src=ranks[stage - 1])
            x.requires_grad_()
        out = module(x)
        if last:
            out = torch.nn.functional.mse_loss(out, microbatch(args, replica, step, m, mb)[1]) / n
        pause(args, 1.0 / (3 * n))
        if not last:
            dist.send(out.detach().contiguous(), dst=ranks[stage + 1])
        inputs.append(x)
        outputs.append(out)
    for m in reversed(range(n)):
        if last:
            outputs[m].backward()
        else:
            g = torch.empty(mb, args.width)
            dist.recv(g, src=ranks[stage + 1])
            outputs[m].backward(g)
        pause(args, 2.0 / (3 * n))
        if stage > 0:
            dist.send(inputs[m].grad.contiguous(), dst=ranks[stage - 1])


def sgd(module, flat_grad, lr):
    off = 0
    with torch.no_grad():
        for p in module.parameters():
            k = p.numel()
            p -= lr * flat_grad[off:off + k].view_as(p)
            off += k


def pipeline_edges(pipelines):
    """Activations s -> s+1 and gradients s+1 -> s, in every pipeline."""
    edges = []
    for ranks in pipelines:
        for a, b in zip(ranks, ranks[1:]):
            edges += [[a, b], [b, a]]
    return sorted(edges)


def main():
    args = common.parse_args("pipeline", extra)
    rank, world = common.init(args)
    stages = list(range(world))
    mb = microbatch_size(args)
    module = build_stage(args, rank, rank == world - 1)
    stage_params = common.model_numbers(module)[0]
    clock = common.StepClock()
    dist.barrier()
    for step in range(args.steps):
        clock.start()
        gpipe_step(args, module, stages, rank, 0, step)
        sgd(module, common.flat_grads(module), args.lr)
        clock.stop()
    params_total = stage_params * world  # every stage has the same layers
    common.finish(args, "pipeline", rank, world, "stage", module, clock, pipeline_edges([stages]),
                  {"collective": "GPipe pipeline: send/recv of activations stage s -> s+1 and of their "
                                 "gradients s+1 -> s, one message per microbatch",
                   "stage": rank, "stages": stages, "pipelines": [stages], "dp_groups": [],
                   "microbatches": args.microbatches, "microbatch_size": mb,
                   "activation_bytes": mb * args.width * 4,
                   "params_total": params_total, "param_bytes_total": params_total * 4})


if __name__ == "__main__":
    main()

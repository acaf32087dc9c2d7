"""What every testbed job shares: arguments, the process group, the model, step timing and the rank file.

A job runs as one process per rank, each in its worker's network namespace, started by `testbed run` with
RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, GLOO_SOCKET_IFNAME and TESTBED_RANKS (JSON: the host, namespace
and IP of every rank) in its environment. Each rank writes `<out>.rank<R>.json` when it ends; `testbed run`
merges them into the job's metadata and steps log (tools/testbed/jobmeta.py).

Step times are wall times (time.time_ns, the clock tcpdump and burstscope stamp frames with): a step starts
with its compute and ends when its communication has finished, and steps follow each other back to back, so
the mean step time is the period of the job's traffic bursts.
"""

import argparse
import datetime
import json
import os
import time

import torch
import torch.distributed as dist


def parse_args(pattern, extra=None):
    p = argparse.ArgumentParser(description=f"testbed job: {pattern}")
    p.add_argument("--out", required=True, help="output prefix: writes <out>.rank<R>.json")
    p.add_argument("--steps", type=int, default=8, help="training steps")
    p.add_argument("--batch", type=int, default=64, help="samples per step and rank")
    p.add_argument("--width", type=int, default=256, help="MLP width (each layer is width x width)")
    p.add_argument("--layers", type=int, default=4, help="MLP layers")
    p.add_argument("--compute-ms", type=float, default=150.0,
                   help="extra compute time per step (a sleep standing for the accelerator's work), so "
                        "that steps are separated: burst, then silence")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout-s", type=float, default=120.0, help="gloo operation and rendezvous timeout")
    if extra:
        extra(p)
    return p.parse_args()


def init(args):
    """Joins the process group (gloo over TCP, rendezvous at MASTER_ADDR:MASTER_PORT)."""
    torch.set_num_threads(1)  # several ranks share two cores
    torch.manual_seed(args.seed)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.timeout_s))
    return rank, world


def mlp(args):
    layers = []
    for i in range(args.layers):
        layers.append(torch.nn.Linear(args.width, args.width))
        if i + 1 < args.layers:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def model_numbers(model):
    params = sum(p.numel() for p in model.parameters())
    return params, params * 4  # float32


def local_gradients(model, args, rank, step):
    """Forward and backward on this rank's random batch; returns nothing (grads are on the parameters)."""
    g = torch.Generator().manual_seed(args.seed * 1000003 + rank * 1009 + step)
    x = torch.randn(args.batch, args.width, generator=g)
    y = torch.randn(args.batch, args.width, generator=g)
    model.zero_grad(set_to_none=False)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss


def compute_pause(args):
    time.sleep(args.compute_ms / 1000.0)


def flat_grads(model):
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def flat_params(model):
    return torch.cat([p.data.reshape(-1) for p in model.parameters()])


def load_flat(model, flat):
    off = 0
    for p in model.parameters():
        n = p.numel()
        p.data.copy_(flat[off:off + n].view_as(p))
        off += n


class StepClock:
    """Wall time of each step: start stamps and durations in seconds."""

    def __init__(self):
        self.starts_ns, self.durations_s = [], []
        self._t0 = None

    def start(self):
        self._t0 = time.time_ns()

    def stop(self):
        t1 = time.time_ns()
        self.starts_ns.append(self._t0)
        self.durations_s.append((t1 - self._t0) / 1e9)


def finish(args, pattern, rank, world, role, model, clock, edges, extra=None):
    """Writes this rank's file and leaves the process group (after a barrier, so no rank leaves early)."""
    params, model_bytes = model_numbers(model)
    ranks = json.loads(os.environ.get("TESTBED_RANKS", "[]"))
    me = ranks[rank] if rank < len(ranks) else {}
    doc = {
        "pattern": pattern,
        "rank": rank,
        "world_size": world,
        "role": role,
        "host": me.get("host"),
        "namespace": me.get("namespace"),
        "ip": me.get("ip"),
        "model": {"layers": args.layers, "width": args.width, "params": params, "bytes": model_bytes,
                  "dtype": "float32"},
        "batch": args.batch,
        "steps": args.steps,
        "compute_ms": args.compute_ms,
        "step_start_ns": clock.starts_ns,
        "step_s": clock.durations_s,
        "edges": edges,
    }
    if extra:
        doc.update(extra)
    dist.barrier()
    dist.destroy_process_group()
    tmp = f"{args.out}.rank{rank}.json.tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, f"{args.out}.rank{rank}.json")

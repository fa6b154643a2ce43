"""
Data parallelism across the processes torchrun launches, the way nanoGPT and nanochat do it: one process per
device, every process holds the whole model and optimizer, each takes a share of the batch, and the gradients
are summed across processes before every optimizer step. Without torchrun (no RANK in the environment) there is
one process and every helper here is the identity.

    torchrun --standalone --nproc_per_node=8 train.py --algo vpo --device cuda ...

What is split: an RL step's prompt groups (shard_groups: a group never straddles processes, since advantages
compare the rollouts of a group), the warm start's demonstrations (shard), the evaluation's problems (shard).
Randomness is drawn per prompt, per demonstration and per problem from seeds of (seed, step, global index)
(runs/seeding.py: step_seed), so a prompt samples the same tokens whichever process holds it. A library module:
it imports nothing of ours.
"""
import os

import torch
import torch.distributed as td


def env_world_size():
    """The number of processes torchrun started (1 without torchrun); readable before setup()."""
    return int(os.environ.get("WORLD_SIZE", 1)) if "RANK" in os.environ else 1


def setup(device):
    """Join the process group when launched by torchrun (NCCL on CUDA, gloo on CPU) -> device. A no-op without
    torchrun."""
    if "RANK" not in os.environ or td.is_initialized():
        return device
    if device.type == "cuda":  # runs.cli.pick_device gave cuda:LOCAL_RANK
        torch.cuda.set_device(device)
    td.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    return device


def teardown(wait=True):
    """Leave the process group. wait: first a barrier, so no process tears down its connections while another
    still uses them (gloo then aborted a process now and then: "terminate called without an active exception");
    after an error, leave at once."""
    if td.is_initialized():
        if wait:
            td.barrier()
        td.destroy_process_group()


def world():
    return td.get_world_size() if td.is_initialized() else 1


def rank():
    return td.get_rank() if td.is_initialized() else 0


def is_main():
    """Rank 0 alone writes logs, checkpoints, plots, summaries and the cached warm start."""
    return rank() == 0


def barrier():
    if world() > 1:
        td.barrier()


def broadcast(obj):
    """Rank 0's value of a picklable obj, on every rank (e.g. what rank 0 found on disk)."""
    if world() == 1:
        return obj
    box = [obj]
    td.broadcast_object_list(box, src=0)
    return box[0]


def _on_backend(x):
    """x where the backend can reduce it: NCCL only moves CUDA tensors (never run on a GPU: docs/gpus.md), gloo CPU ones."""
    if td.get_backend() == "nccl":
        return x.to(torch.device("cuda", torch.cuda.current_device()))
    return x.cpu()


def all_sum(x):
    """The sum over ranks of a tensor (a new tensor on x's device; x is left as it was)."""
    if world() == 1:
        return x.clone()
    y = _on_backend(x).clone()
    td.all_reduce(y)
    return y.to(x.device)


def gather_objects(items):
    """Every rank's list of picklable items, concatenated in rank order, on every rank."""
    if world() == 1:
        return list(items)
    out = [None] * world()
    td.all_gather_object(out, list(items))
    return [x for part in out for x in part]


def shard(n, r=None, parts=None):
    """Rank r's contiguous share of n items: range(lo, hi), the first n % world ranks one item longer."""
    r, parts = rank() if r is None else r, world() if parts is None else parts
    size, extra = divmod(n, parts)
    lo = r * size + min(r, extra)
    return range(lo, lo + size + (r < extra))


def shard_groups(B, minibatches, r=None, parts=None):
    """Rank r's prompt groups (global indices) of a step of B prompts updated in `minibatches` minibatches: its
    share of each minibatch's prompts, so that minibatch k of every rank together is minibatch k of one process
    (prompts k B / M .. (k + 1) B / M - 1). Needs B divisible by minibatches x world (train.py checks)."""
    r, parts = rank() if r is None else r, world() if parts is None else parts
    if parts == 1:
        return list(range(B))
    per = B // (minibatches * parts)
    return [k * (B // minibatches) + r * per + j for k in range(minibatches) for j in range(per)]


def gather_groups(x, B, minibatches):
    """This rank's per-group tensor x (b, ...) -> the whole batch's (B, ...) in global prompt order, on every rank
    (equal shares, so one all_gather)."""
    if world() == 1:
        return x
    if x.dtype == torch.bool:  # gloo gathers numbers
        return gather_groups(x.to(torch.uint8), B, minibatches).bool()
    y = _on_backend(x).contiguous()
    parts = [torch.empty_like(y) for _ in range(world())]
    td.all_gather(parts, y)
    out = x.new_empty((B, *x.shape[1:]))
    for r, part in enumerate(parts):
        out[shard_groups(B, minibatches, r)] = part.to(x.device)
    return out


def loss_share(mask, agg):
    """This process's share of a minibatch's loss: its tokens / all processes' tokens for token-mean (one global
    token-mean), 1 / world for the per-sequence means (every process holds as many rows). 1 in one process."""
    if agg != "token-mean":
        return 1.0 / world()
    n = mask.sum()
    return float(n / all_sum(n).clamp_min(1)) if world() > 1 else 1.0

def sum_gradients(model):
    """Sum every parameter's gradient over ranks (one flat all_reduce). Each rank's loss is already its share of
    the global loss (e.g. its tokens' sum / the global token count), so the sum is the global loss's gradient."""
    if world() == 1:
        return
    params = [p for p in model.parameters() if p.requires_grad]
    grads = [torch.zeros_like(p) if p.grad is None else p.grad for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    td.all_reduce(flat)
    for p, g in zip(params, flat.split([g.numel() for g in grads])):
        p.grad = g.view_as(p)

"""
The RL step of train.py: rollouts of the step's prompts, rewards, one advantage per rollout by method (the
estimators are in vpo.py), and one PPO epoch of vpo.policy_loss in --minibatches updates.

    row = rl_step(model, train_model, ref_model, opt, task, args, step, log_weights, device)   # a log dict

args is train.py's argparse namespace. Every draw is seeded by (seed, stream, step, prompt index), so a step is
the same whichever process holds a prompt (torchrun: dist.shard_groups) and whenever it is resumed.
"""
import time

import numpy as np
import torch

import dist
import metrics
import vpo
from evaluate import rollout, slot_rewards
from model import pack_shared, shared_token_logprobs
from runs import MULTI_ANSWER, answers_per_rollout
from sample import step_seed
from tasks import tokenizer as tok


def group_size(args):
    single = args.algo not in MULTI_ANSWER
    return args.group_size * (args.num_answers if single and args.match_budget else 1)


def prompt_weights(args, stream, step, B, N, D, alpha=1.0, sampler="iid"):
    """N weight vectors w ~ Dir(alpha) for each of the step's B prompts, prompt b's from its own seed
    (seed, stream, step, b): the same draws whichever process holds the prompt. -> (B, N, D)"""
    def generator(b):
        return torch.Generator().manual_seed(step_seed(args.seed, stream, step, b))
    return torch.cat([vpo.sample_weights(1, N, D, alpha, generator(b), sampler) for b in range(B)])


def advantages(args, task, rewards, mask, step, goal_weights=None):
    """One scalar advantage per rollout (B, G) and the per-rollout score it normalized, by method, on the whole
    batch (batch statistics, --scale batch and GDPO's whitening, are over all B prompts). goal_weights (B, D): the
    weights goal_cond wrote into each prompt; its reward is w_b^T r."""
    w_star, (B, D) = task.deploy_weights, (rewards.shape[0], rewards.shape[-1])
    if args.algo == "vpo":
        w = prompt_weights(args, 5, step, B, args.num_weights, D, args.alpha, args.weight_sampler)   # (B, N, D)
        return vpo.vpo_advantages(rewards, mask, weights=w, scale=args.scale)
    if args.algo == "multi_rlvr":
        return vpo.multi_rlvr_advantages(rewards, mask, w_star, scale=args.scale)
    if args.algo == "grpo":
        return vpo.grpo_advantages(rewards, w_star, scale=args.scale)
    if args.algo == "random_weight":
        w = prompt_weights(args, 5, step, B, 1, D, args.alpha)[:, 0]                                # (B, D)
        return vpo.random_weight_advantages(rewards, scale=args.scale, weights=w)
    if args.algo == "goal_cond":  # the random-weight reward, with the weights written into the prompt too
        return vpo.random_weight_advantages(rewards, scale=args.scale, weights=goal_weights)
    if args.algo == "max_at_k":
        return vpo.max_at_k_advantages(rewards, w_star, k=args.max_at_k, scale=args.scale)
    if args.algo == "gdpo":
        return vpo.gdpo_advantages(rewards, w_star)
    return vpo.maxrl_advantages(rewards, w_star)


def eval_weights(args, task):
    """What a goal-conditioned policy is prompted with at evaluation: the deployment weights w* (None otherwise)."""
    return task.deploy_weights if args.algo == "goal_cond" else None


def rl_step(model, train_model, ref_model, opt, task, args, step, log_weights, device):
    """Sample, score, estimate advantages, and one PPO epoch over the step's rollouts. -> a log dict.
    Under torchrun this process samples its share of the prompt groups (dist.shard_groups), the rewards are
    gathered so that every process computes the whole batch's advantages, and the gradients are summed."""
    t0 = time.perf_counter()
    m, G, B, M = answers_per_rollout(args), group_size(args), args.batch_size, args.minibatches
    for group in opt.param_groups:  # constant (the authors'), after an optional linear warmup
        group["lr"] = args.lr * min(1.0, (step + 1) / max(args.warmup_steps, 1))
    mine = dist.shard_groups(B, M)                                                   # this process's prompts
    problems = task.problems("train", B, seed=step_seed(args.seed, 3, step))
    problems = [problems[b] for b in mine]
    model.eval()
    goal = None
    if args.algo == "goal_cond":  # w_b ~ Dir(1) per prompt, written into the prompt text
        goal = prompt_weights(args, 6, step, B, 1, task.dim)[:, 0]                   # (B, D)
    amp = args.dtype != "float32"                                                    # bf16 autocast on CUDA
    seeds = [step_seed(args.seed, 4, step, b) for b in mine]                         # prompt b's sampling stream
    gen, prompts, texts, rewards, mask = rollout(model, task, problems, m, G, args.temperature, seeds=seeds, amp=amp,
                                                 weights=None if goal is None else goal[mine])
    model.train()
    answers = [task.parse(t, m) for t in texts]
    per_slot = torch.cat([slot_rewards(rewards[b], mask[b], answers[b * G:(b + 1) * G])[None]
                          for b in range(len(problems))])                           # (b, G, m, D)
    rewards, mask, per_slot = (dist.gather_groups(x, B, M) for x in (rewards, mask, per_slot))  # (B, G, m, D)
    adv, scores = advantages(args, task, rewards, mask, step, goal)                 # (B, G) each
    adv = adv[mine].to(device).reshape(-1)                                          # one per own rollout (R,)
    # the loss covers the tokens the policy sampled, not the separators the sampler wrote (AnswerBudget)
    tokens, tmask = gen.tokens, gen.sampled                                          # (R, Tc)
    batch = pack_shared(prompts, tokens, G, tok.PAD_ID)                              # each prompt encoded once
    # rows are prompt-major, so a minibatch holds whole prompts when --minibatches divides B (the default); else
    # a prompt's rows may fall in two minibatches, and its prompt is encoded in each (batch.select)
    chunks = torch.arange(len(adv), device=device).chunk(M)  # minibatch k of every process = one's minibatch k
    with torch.no_grad():
        ref = shared_token_logprobs(ref_model, batch, args.temperature, amp) if args.kl_coef else None
        # the old policy's log-probs, needed once the first update has changed the policy: the later minibatches
        # (the first one's are its own log-probs before that update)
        later = torch.cat(chunks[1:]) if len(chunks) > 1 else None
        old = None if later is None else shared_token_logprobs(model, batch.select(later), args.temperature, amp)
    stats = []
    for i, rows in enumerate(chunks):
        logp = shared_token_logprobs(train_model, batch.select(rows), args.temperature, amp)
        old_rows = logp.detach() if i == 0 else old[rows - len(chunks[0])]
        loss, s = vpo.policy_loss(logp, old_rows, adv[rows], tmask[rows],
                                  args.clip, args.clip, args.dual_clip, None if ref is None else ref[rows],
                                  args.kl_coef, args.agg)
        share = dist.loss_share(tmask[rows], args.agg)
        opt.zero_grad(set_to_none=True)
        (loss * share).backward()
        dist.sum_gradients(model)                                                    # the whole minibatch's gradient
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        opt.step()
        summed = dist.all_sum(torch.tensor([v * share for v in s.values()], dtype=torch.float64))  # token-weighted
        stats.append(dict(zip(s, summed.tolist())))
    w_star = torch.as_tensor(task.deploy_weights, dtype=torch.float32)
    deploy = (per_slot @ w_star).mean()                                             # missing answers count 0
    set_r = vpo.set_rewards(rewards, mask, log_weights.expand(rewards.shape[0], -1, -1))
    n_tokens = float(dist.all_sum(tmask.sum()))
    seconds = time.perf_counter() - t0
    written = [len(tok.encode(a)) for row in answers for a in row if a]                # non-empty answer slots
    return {"step": step + 1, "deploy_reward": float(deploy), "set_reward": float(set_r.mean()),
            "diversity": float(np.mean([metrics.diversity(rewards[b], mask=mask[b]) for b in range(B)])),
            **{k: float(np.mean([s[k] for s in stats])) for k in ("entropy", "kl", "clip_frac", "ratio", "loss")},
            "zero_var_frac": float((scores.std(dim=1, correction=0) < 1e-6).float().mean()),  # flat groups
            "valid_rate": float(mask.float().mean()), "completion_tokens": n_tokens / (B * G),
            # this process's rollouts: answer slots written (non-empty) and their mean length in tokens
            "written_rate": len(written) / max(1, m * len(answers)), "answer_tokens": float(np.mean(written or [0])),
            # answers the sampler closed because they filled their room, per non-final answer slot
            "forced_rate": float(gen.forced.sum()) / max(1, (m - 1) * len(answers)),
            "tokens_per_s": n_tokens / seconds, "step_seconds": seconds}

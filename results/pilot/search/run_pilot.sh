#!/bin/bash
# The search experiment's pilot, one python job at a time, one torch thread (results/pilot/search/README.md).
# Resumable: pilot.py skips a file that exists; a training run that exists is resumed.
# Run from the repository root: bash results/pilot/search/run_pilot.sh
set -e
export OMP_NUM_THREADS=1 PYTHONPATH=.
OUT=out/pilot-search            # checkpoints and the cached warm start (never committed)
P=results/pilot/search          # the small files (committed)
BASE=$OUT/base/code-4cbe223cc0/ckpt.pt
pilot() { python $P/pilot.py "$@"; }
train() {  # ALGO: 500 RL steps with v2's arguments, seed 99 (no table uses it), evaluations every 125 steps kept
  local algo=$1 dir=$OUT/$1-s99
  local flags=(--task code --algo "$algo" --seed 99 --steps 500 --eval_every 125 --run_name "$algo-s99"
               --keep_eval_ckpts --no_base_eval --eval_problems 64 --eval_answers 48 --ckpt_every 25 --quiet
               --out_dir $OUT)
  if [ -f "$dir/summary.json" ]; then :
  elif [ -d "$dir" ]; then python train.py --resume --run_name "$algo-s99" --out_dir $OUT --quiet
  else python train.py "${flags[@]}"; fi
  mkdir -p $P/runs/$algo-s99
  cp "$dir"/{summary.json,log.jsonl,eval.jsonl} $P/runs/$algo-s99/
}
train grpo                                              # also trains the warm start (1,500 supervised steps)
mkdir -p $P/runs/base && cp $OUT/base/code-4cbe223cc0/log.jsonl $P/runs/base/log.jsonl
pilot screen --ckpt $BASE --m 1 --n 1152 --out $P/screen-base-m1.json
pilot screen --ckpt $BASE --m 3 --n 1152 --out $P/screen-base-m3.json
pilot hard --screens $P/screen-base-m1.json $P/screen-base-m3.json --first 128 --out $P/hard.json
# the selection handicap: the warm start's pool on the unsolved problems again, with other streams (seed 1)
pilot screen --ckpt $BASE --m 1 --n 1152 --ids $P/hard.json --seed 1 --out $P/rescreen-base-m1-seed1.json
pilot screen --ckpt $BASE --m 3 --n 1152 --ids $P/hard.json --seed 1 --out $P/rescreen-base-m3-seed1.json
G=$OUT/grpo-s99
pilot validate --ckpt $G/ckpt-step125.pt $G/ckpt-step250.pt $G/ckpt-step375.pt $G/ckpt.pt --out $P/validate-grpo-s99.json
search() {  # NAME CKPT M: evolve and sample on the first 32 hard problems at the budgets given after M
  local name=$1 ckpt=$2 m=$3; shift 3
  for b in "$@"; do for kind in evolve sample; do
    pilot search --kind $kind --ckpt "$ckpt" --m "$m" --hard $P/hard.json --count 32 --budget "$b" --seed 1000 \
      --out $P/search-$kind-$name-b$b.json
  done; done
}
search grpo-s99 $G/ckpt.pt 1 768 1536
train vpo
search vpo-s99 $OUT/vpo-s99/ckpt.pt 3 768 1536
search base-m1 $BASE 1 768 1536
train multi_rlvr_max
search multi_rlvr_max-s99 $OUT/multi_rlvr_max-s99/ckpt.pt 3 1536
search base-m3 $BASE 3 1536
# does RL on this machine, from this warm start, follow v2's committed GRPO seed-0 run? (20 steps, v2's arguments)
C=$OUT/check-grpo-s0
[ -f $C/grpo-s0/summary.json ] || { mkdir -p $C/base && ln -sfn "$(pwd)/$OUT/base/code-4cbe223cc0" $C/base/code-4cbe223cc0
  python train.py --task code --algo grpo --seed 0 --steps 20 --eval_every 125 --run_name grpo-s0 --keep_eval_ckpts \
    --no_base_eval --eval_problems 64 --eval_answers 48 --ckpt_every 25 --quiet --out_dir $C; }
python - <<'PY' > $P/check-grpo-s0.txt
import json
mine = [json.loads(l) for l in open("out/pilot-search/check-grpo-s0/grpo-s0/log.jsonl")]
v2 = [json.loads(l) for l in open("results/runs/code-v2/grpo-s0/log.jsonl")]
keys = ("deploy_reward", "entropy", "kl", "loss", "completion_tokens")
first = next((a["step"] for a, b in zip(mine, v2) if any(a[k] != b[k] for k in keys)), None)
print(f"RL steps compared: {len(mine)}; first step whose {', '.join(keys)} differ from v2's GRPO seed 0: {first}")
for a, b in zip(mine, v2):
    print(a["step"], *(f"{k} {a[k]!r} / {b[k]!r}" for k in keys))
PY
echo pilot done

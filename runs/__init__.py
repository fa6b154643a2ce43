"""
The machinery beside the reading path: what a command line needs, and nothing a student must read to learn VPO.

    runs/cli.py      one-line errors (UsageError, Parser), number types, task options, devices, loading a run
    runs/dirs.py     run directories, --overwrite, the warm-start cache's key and lock, resume, checkpoints
    runs/dist.py     torchrun helpers (sharding prompt groups, summing gradients and losses)
    runs/seeding.py  the seeding rule (step_seed)
    runs/steplog.py  the log row of one RL step (step_log): its statistics, reduced over torchrun processes
    runs/plots.py    a run's figures (training curves, best@k, the answers' reward vectors)
    runs/export.py   a pretrained model's checkpoint as a Hugging Face folder (python -m runs.export)
"""

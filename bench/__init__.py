"""The benchmarks: bench.py (ours) and the peers (peer_trl_grpo.py, peer_generate.py); see README.md here."""

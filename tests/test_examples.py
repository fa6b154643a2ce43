"""examples/toy.py: the authors' smallest demonstration through this repository's estimators and loss."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_toy_example_prints_the_compromise_and_the_corners():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "toy.py")], capture_output=True, text=True,
                         check=True, timeout=120).stdout.splitlines()
    grpo, vpo2, vpo3 = out[1:4]
    assert "learns compromise (0.6, 0.6)" in grpo and grpo.endswith("0.60")     # GRPO: the compromise, 0.6
    assert "corner (1, 0), corner (0, 1) " in vpo2 and vpo2.endswith("0.75")    # VPO, 2 slots: both corners
    assert "compromise" in vpo3 and "corner (0, 1)" in vpo3 and vpo3.endswith("0.76")  # 3 slots: the optimum

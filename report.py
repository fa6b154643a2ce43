"""Tables and figures of reproduce.py from the finished runs on disk (placeholder until the full report lands)."""
import json
import os


def write_report(cfg, out, title, figures=True):
    from reproduce import jobs_of, run_dir
    lines = [f"# Reproduction: `{title}`", ""]
    for j in jobs_of(cfg):
        path = os.path.join(run_dir(out, j), "summary.json")
        if os.path.isfile(path):
            with open(path) as f:
                m = json.load(f)["metrics"]
            lines.append(f"- {j['task']} {j['name']}: pooled best@k {m['pooled_best@k']}")
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")

"""
The maze's experiments of record as results.md reads them, and the reviewer's section (results/PLAN_REVIEW.md):
the rerun of v3 by v3's rule (the reference arms of every reading below, by the plan's amendment), VPO against
matched GRPO at equal answers, at equal tokens and after early stopping, the ablations, what the final answers
cover and whether VPO's slots specialize, and VPO under each reward geometry. Each record's tables are drawn by the
functions that draw compare.md's (results/tables.py), with the plans' readings beside the run-level ones.
"""
import os

from results.dimensions import geometry_points, geometry_reading
from results.plan import KS, at_step, base_metrics, compute_at, eval_steps, experiment, finished_runs, read_json, value
from results.review_jobs import REVIEWED, read_review, stop_step
from results.runstats import describe, paired_comparison, smallest_p
from results.tables import (PAIRED_STD_NOTE, PLAN_HEADER, STD_NOTE, metric_lines, paired_table, plan_cells, pm,
                            run_level, run_note, table)

RECORDS = ("maze_v3", "maze_rerun", "maze_matched", "maze_ablations", "maze_geometry")
GROUPS = ("main", "baselines", "rerun", "matched", "ablations", "geometry")   # the plan groups that train them
POOLED, THREE = "pooled_best@k", (3, 12, 48)
AGAINST = (("GRPO", KS[1:]), ("Max@k", THREE), ("Multi-RLVR", THREE))   # VPO's paired tables in v3 and the rerun


def maze_records(cfg, out):
    """{name: {label: [run, ...]}} of the maze's experiments of record (results/experiments/NAME.json) with finished
    runs: each arm's runs by its label, every seed its plan group trained (so the geometry record's ρ = 0, the
    rerun's VPO, is paired with all three of the rerun's GRPO seeds)."""
    runs = {label: rs for g in GROUPS if g in cfg for label, rs in finished_runs(cfg, out, g).items()}
    records = {name: {a["label"]: runs[a["label"]] for a in experiment(name)["arms"] if a["label"] in runs}
               for name in RECORDS}
    return {name: rs for name, rs in records.items() if rs}


def record_lines(runs, captions, vpo, against, need, bases):
    """A record's metrics along training as compare.md draws them (captions: {metric: caption}; the step 0 rows from
    bases, {m: the base's evaluation}), then VPO's paired differences in pooled best@k against other arms (against:
    [(label, ks)]) with the plan's reading."""
    lines = metric_lines(runs, bases, captions)
    for other, ks in against:
        lines += paired_table(runs, vpo, other, POOLED, ks, "pooled best@k", need)
    return lines


def review_section(cfg, out, records):
    """results/PLAN_REVIEW.md's readings from whatever has finished: the rerun of v3 by v3's rule, VPO against
    matched GRPO, against random-weight GRPO and the other ablations, early-stopped GRPO, the coverage of every
    arm's final answers, and VPO under each reward geometry against the rerun's GRPO at step 750."""
    ref, matched = records.get("maze_rerun", {}), records.get("maze_matched", {})
    ablations = records.get("maze_ablations", {})
    if not any(name in records for name in RECORDS[1:]):
        return []
    lines = ["## The reviewer's questions (maze; [PLAN_REVIEW.md](PLAN_REVIEW.md))", ""]
    need, bases = len(cfg["rerun"]["seeds"]), base_metrics(ref)
    if ref:
        lines += record_lines(ref, {POOLED: "The rerun of v3 (PLAN_REVIEW.md, amendment: v3's plan again on today's "
                                      "code, weights kept; a second realization, not v3's runs): pooled best@k at "
                                      "each evaluation step:"}, "VPO (rerun)",
                              [(f"{b} (rerun)", ks) for b, ks in AGAINST], need, bases)
        compare = os.path.join(out, "runs", cfg["rerun"].get("dir", "maze"), "compare.json")
        if os.path.isfile(compare):
            first = read_json(compare)
            lines += ["Against v3's committed files, key for key (timing and the valid-answer statistics aside; "
                      "results/review_jobs.py): " + "; ".join(
                          f"{name}: " + ", ".join(f"{file} {'equal' if d == 'equal' else f'first differs at row {d[0]}'}"
                                                  for file, d in files.items()) for name, files in first.items()), ""]
    if "matched GRPO" in matched:
        lines += record_lines(matched, {POOLED: "Pooled best@k of GRPO with matched answers (24 rollouts of one "
                                          "answer) and of the rerun's VPO at each evaluation step:"}, "VPO (rerun)",
                              [("matched GRPO", KS[1:])], need, bases)
        lines += equal_tokens_lines({**ref, **matched})
        lines += machine_lines(records.get("maze_v3", {}), {**ref, **matched, **ablations})
    if "random-weight GRPO" in ablations:
        lines += record_lines(ablations, {POOLED: "Pooled best@k of the ablations and of the rerun's VPO at each "
                                            "evaluation step:"}, "VPO (rerun)", [("random-weight GRPO", THREE)], need,
                              bases)
    rows, ds_of = [], {}
    for name, seed, t, ds in early_stopped(cfg, out, {**ref, **matched}):
        rows.append([name, str(seed), str(t)] + [f"{d:+.3f}" for d in ds])
        for k, d in zip(THREE, ds):
            ds_of.setdefault((name, k), []).append(d)
    if rows:
        lines += ["Early stopping: the step of highest pooled best@48 on the validation mazes (64-127), and the "
                  "rerun's VPO at step 1000 minus that GRPO on the 64 test mazes, pooled best@k:", ""]
        lines += table(["method", "seed", "stopped at", "VPO − it, k=3", "k=12", "k=48"], rows) + [""]
        lines += ["The plan's reading of VPO at step 1000 − early-stopped GRPO:", ""]
        lines += table(["method", "k"] + PLAN_HEADER, [[name, f"k={k}"] + plan_cells(
            ds, "VPO (rerun)", f"early-stopped {name}", need) for (name, k), ds in ds_of.items()], PAIRED_STD_NOTE)
        lines += ["", run_note(max(len(ds) for ds in ds_of.values())), ""]
    lines += coverage_lines(read_review(cfg, out, "coverage.json"), need)
    return lines + geometry_lines(records.get("maze_geometry", {}), cfg["geometry"]) if "geometry" in cfg else lines


def geometry_lines(runs, g):
    """VPO under each reward geometry (the plan group g) minus the rerun's GRPO of the same seed: pooled best@k and
    the dimensions VPO saw (results/dimensions.py), then the plan's reading 4."""
    points = geometry_points(runs, g["steps"])
    if not points:
        return []
    rows = [[p["label"], str(len(p["d"][3]))] + [pm(p["d"][k]) for k in THREE]
            + run_level(p["d"][48], "VPO", "GRPO")[1:3]
            + [pm([x["dim_corr"] for x in p["policy"]]), pm([x["eff_rank"] for x in p["policy"]], 2),
               f"{p['base']['dim_corr']:.3f} / {p['base']['eff_rank']:.2f}" if p["base"] else "-"] for p in points]
    lines = [f"VPO under each reward geometry minus the rerun's GRPO of the same seed at step {g['steps']}, pooled "
             "best@k, and the dimensions VPO saw (mean pairwise correlation, effective rank) over the policy's and the "
             "base's held-out answers (results/dimensions.py):", ""]
    lines += table(["VPO", "seeds", "− GRPO, k=3", "k=12", "k=48", "k=48: 95% interval over runs",
                    "k=48: p (exact, runs)", "policy: correlation", "policy: eff. rank",
                    "base: correlation / eff. rank"], rows, PAIRED_STD_NOTE)
    lines += ["", run_note(min(len(p["d"][48]) for p in points)), ""]
    n = len(g["seeds"])
    reading = geometry_reading(points, n)
    return lines + ([" ".join(reading), "", f"Run level: each setting has {n} runs, so an exact test comparing two "
                     f"settings over runs cannot go below p = {smallest_p(n, n):.3g} (unpaired) or {smallest_p(n):.3g} "
                     "(paired): the reading above describes the means, it does not separate the settings.", ""]
                    if reading else [])


def early_stopped(cfg, out, runs, ks=THREE):
    """The rerun's VPO at its last step minus GRPO (and matched GRPO) stopped at its best validation step, per seed:
    [(name, seed, stopped at, [d at each k])], pooled best@k on the test mazes (PLAN_REVIEW.md, reading 1). runs:
    the rerun's and matched GRPO's, by label."""
    validation, found = read_review(cfg, out, "validation.json"), []
    for group, label in (("rerun", "GRPO (rerun)"), ("matched", "matched GRPO")):
        for v in validation.get(group, {}).get(label, []):
            run = next((r for r in runs.get(label, []) if r["seed"] == v["seed"]), None)
            vpo = next((r for r in runs.get("VPO (rerun)", []) if r["seed"] == v["seed"]), None)
            if run and vpo:
                t = stop_step(v)
                final, stopped = vpo["summary"]["metrics"], at_step(run, t)
                found.append((label, v["seed"], t,
                              [value(final, POOLED, k) - value(stopped, POOLED, k) for k in ks]))
    return found


def nearest_in_tokens(r, tokens):
    """The evaluation step of run r whose cumulative generated tokens (plan.compute_at) are nearest `tokens`."""
    return min(eval_steps([r]), key=lambda step: (abs(compute_at(r, step)[0] - tokens), step))


def equal_tokens_lines(runs, step=250):
    """Per seed, VPO's evaluation at `step` against the GRPO and matched-GRPO evaluations of the same seed nearest to
    it in cumulative generated tokens (PLAN_REVIEW.md, reading 1), pooled best@k."""
    rows = []
    for vpo in runs.get("VPO (rerun)", []):
        tokens = compute_at(vpo, step)[0]
        for label in ("GRPO (rerun)", "matched GRPO"):
            other = next((r for r in runs.get(label, []) if r["seed"] == vpo["seed"]), None)
            if other is None or not at_step(vpo, step):
                continue
            t = nearest_in_tokens(other, tokens)
            ds = [value(at_step(vpo, step), POOLED, k) - value(at_step(other, t), POOLED, k) for k in THREE]
            rows.append([label, str(vpo["seed"]), f"{tokens / 1e6:.2f}", str(t), f"{compute_at(other, t)[0] / 1e6:.2f}"]
                        + [f"{d:+.3f}" for d in ds])
    if not rows:
        return []
    return [f"Equal generated tokens: VPO (rerun) at step {step} against the evaluation of the same seed nearest to it "
            "in tokens generated, pooled best@k:", ""] + table(
        ["against", "seed", f"VPO tokens at {step} (M)", "its step", "its tokens (M)", "VPO − it, k=3", "k=12", "k=48"],
        rows) + [""]


def machine(run):
    """The machine a run trained on, as its summary.json records it (v3's runs predate the record)."""
    return run["summary"].get("machine") or "not recorded (v3's machine)"


def machine_lines(v3, review):
    """Training seconds compare only within one machine (PLAN_REVIEW.md, amendment 2): every arm's machines and RL
    seconds, and the ratio measured on one configuration trained on two machines (v3's run and the rerun's)."""
    if not review:
        return []
    rows, pairs = [], []
    for label, rs in {**v3, **review}.items():
        secs = [r["summary"]["train_seconds"] for r in rs]
        rows.append([label, str(len(rs)), "; ".join(sorted({machine(r) for r in rs})), pm(secs, 0)])
    for label, rs in review.items():
        twins = {t["seed"]: t for t in v3.get(label.removesuffix(" (rerun)"), [])} if label.endswith(" (rerun)") else {}
        for r in (r for r in rs if r["seed"] in twins):
            a, b = twins[r["seed"]]["summary"]["train_seconds"], r["summary"]["train_seconds"]
            pairs.append([label, str(r["seed"]), f"{a:.0f}", f"{b:.0f}", machine(r), f"{a / b:.2f}"])
    lines = ["Training seconds (summary.json `train_seconds`, one torch thread, two jobs at a time) and the machine "
             "of every arm. Seconds compare only within one machine:", ""]
    lines += table(["arm", "seeds", "machines", "train seconds"], rows, STD_NOTE) + [""]
    if pairs:
        lines += ["One configuration on two machines: v3's run and the rerun's of the same arm and seed:", ""] + table(
            ["arm", "seed", "v3's seconds", "rerun's seconds", "rerun's machine", "v3 / rerun"], pairs) + [""]
    return lines


def covers(cs, need=None):
    """The plan's coverage reading from {label: [coverage per seed, with "seed"]} (PLAN_REVIEW.md, reading 3): VPO's
    sets cover the gold-diamond trade-off if on every seed its share of pools holding a gold answer beside a diamond
    answer exceeds GRPO's and Max@k's, and some slot's mean gold exceeds its mean diamonds while another slot's is
    the reverse. -> (bool or None before every arm's seeds, the pool kinds VPO holds more of than GRPO on every seed).
    need: the seeds the plan runs; no reading before VPO has them all."""
    vpo, others = cs.get("VPO (rerun)", []), [cs.get("GRPO (rerun)", []), cs.get("Max@k (rerun)", [])]
    if not vpo or need and len(vpo) < need or any(len(o) < len(vpo) for o in others):
        return None, []
    by_seed = [{c["seed"]: c for c in o} for o in others]

    def specialized(c):
        slots = c.get("slots", [])
        return any(s["gold"] > s["diamonds"] for s in slots) and any(s["diamonds"] > s["gold"] for s in slots)
    pools = all(c["pools"]["gold and diamonds"] > o[c["seed"]]["pools"]["gold and diamonds"]
                for c in vpo for o in by_seed if c["seed"] in o)
    more = [k for k in vpo[0]["pools"] if all(c["pools"][k] > by_seed[0][c["seed"]]["pools"][k]
                                               for c in vpo if c["seed"] in by_seed[0])]
    return pools and all(specialized(c) for c in vpo), more


def coverage_lines(coverage, need=None):
    """The coverage tables (results/coverage.py) of every review arm, the multi-answer arms' slots, the reading."""
    labelled = {label: cs for group in REVIEWED for label, cs in coverage.get(group, {}).items()}
    if not labelled:
        return []
    rows, slot_rows = [], []
    for label, cs in labelled.items():
        best = [c["best@k"].get("48", {}) for c in cs]
        rows.append([label, str(len(cs))] + [pm([c["answers"][k] for c in cs]) for k in ("exit", "gold", "diamonds",
                                                                                       "both", "no item")]
                    + [pm([c["pools"]["gold and diamonds"] for c in cs]), pm([c.get("completions_two_classes") for c in cs]),
                       pm([b.get("gold") for b in best]), pm([b.get("diamonds") for b in best])])
        for j in range(len(cs[0].get("slots", []))):
            slot_rows.append([label, str(j), str(len(cs))] + [pm([c["slots"][j][d] for c in cs])
                                                             for d in ("exit", "gold", "diamonds", "no_lava")])
    lines = ["What the final answers cover (results/coverage.py; per answer: reaches the exit, with gold, with diamonds, "
             "with both, with no item; pools with a gold and a diamond answer; completions in two or more classes; the "
             "best of 48 answers' gold and diamonds):", ""]
    lines += table(["method", "seeds", "exit", "gold", "diamonds", "both", "no item", "pools gold & diamonds",
                    "completions ≥ 2 classes", "best@48 gold", "best@48 diamonds"], rows) + [""]
    if slot_rows:
        lines += ["Each slot's mean reward vector over its written answers (the multi-answer arms):", ""]
        lines += table(["method", "slot", "seeds", "exit", "gold", "diamonds", "no_lava"], slot_rows) + [""]
    cover, more = covers(labelled, need)
    if cover is not None:
        lines += [("Reading (the plan's rule): VPO's sets cover the gold-diamond trade-off." if cover else
                   "Reading (the plan's rule): VPO's sets do not cover the gold-diamond trade-off; its pools hold more "
                   "of these kinds than GRPO's on every seed: " + (", ".join(more) or "none") + "."), ""]
        vpo = {c["seed"]: c["pools"]["gold and diamonds"] for c in labelled.get("VPO (rerun)", [])}
        for other in ("GRPO (rerun)", "Max@k (rerun)"):
            them = {c["seed"]: c["pools"]["gold and diamonds"] for c in labelled.get(other, [])}
            if len(set(vpo) & set(them)) >= 2:
                c = paired_comparison(vpo, them, "VPO", other)
                lines += [f"Run level: VPO − {other}, share of pools with a gold and a diamond answer: {describe(c)} "
                          f"(95% interval over runs, exact sign-flip p; smallest p with {c.n_a} runs {c.floor:.3g}): "
                          f"{c.reading}.", ""]
    return lines

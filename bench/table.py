#!/usr/bin/env python3
"""Turns bench/results/*.json (written by bench/run.py) into the README's benchmark tables.

  bench/table.py [--results DIR]            print the Markdown on stdout
  bench/table.py --update README.md         replace what lies between the markers
                                            <!-- bench:start --> and <!-- bench:end -->
  --cpu FAMILY:MODEL                        only runs on that CPU model (as lscpu numbers
                                            it: 26:2 a Zen 5 EPYC, 6:207 an Emerald Rapids
                                            Xeon); the GPU harness's documents are kept

Each section (gemm, forward, phases, generate, sampling, kvf16, moe; gpu, from the documents
tests/gpu/run.sh's bench stage writes) comes from the newest of the result files that hold the
most entries of it (cache, divergence and compare: each model's newest rows; gemm, forward
and phases pass over a run whose own int8 peak probe read below 90% of the best on its CPU);
the line under each table names that file's commit, date and machine.
"""
import argparse
import json
import os
import statistics
import sys

import run

HERE = os.path.dirname(os.path.abspath(__file__))
START, END = "<!-- bench:start -->", "<!-- bench:end -->"
# Sections whose speed depends on the CPU's instructions get one table per class, widest first.
ISA_CLASSES = ("avx512_vnni", "avx_vnni", "avx2")
PER_ISA = ("forward", "phases", "sampling", "gemm", "compare")

LABEL = {name: m["label"] for name, m in run.MODELS.items()}


def peak_of(doc):
    """The run's int8 peak: the highest bench_gemm measured in it, else the one it recorded."""
    return run.int8_peak(doc.get("gemm"), doc.get("threads")) or doc.get("int8_peak_gops")


def own_probe(doc):
    """The int8 peak probe taken in the run itself (its gemm part, or the probe run.py takes
    before the forward and phases parts without it), or None (the GPU harness's documents,
    made on the device machine's CPU, have neither, nor a thread count)."""
    return run.int8_peak(doc.get("gemm"), doc.get("threads")) or doc.get("probe_gops")


def failed(msg):
    """A failure for a table cell: the program's message without the file path, shortened."""
    msg = msg.split("error: ")[-1]
    msg = msg.split(": ", 1)[-1] if msg.startswith("/") else msg
    return "failed: " + (msg if len(msg) <= 90 else msg[:87] + "...")


def pct(gops, peak):
    return fmt(100 * gops / peak if peak else None) + "%"


def section_probes(doc, section):
    """The int8 peak probes of a run that speak for a section's figures: its own probe, and
    for forward and phases those bench/run.py took right before and after each measurement
    (probes_gops)."""
    probes = [own_probe(doc)]
    records = (doc.get(section) or []) if section in ("forward", "phases") else []
    for f in records:
        probes += f.get("probes_gops") or []
        probes += [p for r in f.get("rounds", []) for p in r.get("probes_gops") or []]
    return [p for p in probes if p]


def probe_ok(docs, doc, section):
    """Whether a run's probes for a section (section_probes) all read at least 90% of the best
    probe of docs' runs on the same CPU (the rule by which bench/run.py repeats a run: below it
    the machine was busy or throttled); a run without a probe of its own passes."""
    low = min(section_probes(doc, section), default=None)
    best = max((max(section_probes(d, s), default=0) for d in docs
                for s in ("gemm", "forward", "phases")
                if run.cpu_key(d.get("machine")) == run.cpu_key(doc.get("machine"))), default=0)
    return not low or low >= 0.9 * best


def newest(docs, section):
    """The newest of the runs with the most entries in section (for gemm, forward and phases,
    among those that pass probe_ok, and for the two that give shares of the peak, gemm and
    forward, that have a peak, where any does): a partial run (a before/after check of one
    model or canvas) does not hide a whole one, nor a run on a busy machine or one without a
    peak (--parts forward alone) a run on a quiet one."""
    have = [d for d in docs if d.get(section)]
    most = max((len(d[section]) for d in have), default=0)
    full = [d for d in have if len(d[section]) == most]
    if section in ("gemm", "forward", "phases"):
        full = [d for d in full
                if probe_ok(docs, d, section) and (section == "phases" or peak_of(d))] or full
    return max(full, key=lambda d: d["date"]) if full else None


def isa_class(doc):
    """The widest int8 dot-product instructions of the run's CPU, which decide the matrix and
    row-maths kernels it ran: avx512_vnni, avx_vnni or avx2."""
    dots = (doc.get("machine") or {}).get("int8_dot") or []
    return next((c for c in ISA_CLASSES if c in dots), "avx2")


def source(doc):
    m = doc["machine"]
    dirty = " (with uncommitted changes)" if doc.get("dirty") else ""
    cpu = m["cpu"] + (" (family %s model %s)" % (m["cpu_family"], m["cpu_model"])
                      if "cpu_family" in m else "")
    if m.get("int8_dot"):
        cpu += ", " + ("AVX2 without VNNI" if m["int8_dot"] == ["avx2"] else
                       "+".join(d.upper().replace("_", "-") for d in m["int8_dot"]))
    return "_%s, commit %s%s, %s, %d cores, %s threads; load average %.1f before the run._" % (
        doc["date"][:10], doc["commit"], dirty, cpu, m["cores"], doc["threads"],
        doc["loadavg_start"][0])


def fmt(x, digits=0):
    return "n/a" if x is None else "%.*f" % (digits, x)


def secs(ms, digits=2):
    return fmt(None if ms is None else ms / 1000, digits)


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def forward_section(doc):
    rows = []
    peak = peak_of(doc)
    for f in doc["forward"]:
        if "error" in f:
            rows.append([LABEL[f["model"]], str(f["canvas"]), failed(f["error"])] + [""] * 7)
            continue
        cpu = ("%s / %s" % (fmt(f["load_user_ms"]), fmt(f["load_sys_ms"]))
               if "load_user_ms" in f else "-")
        rows.append([LABEL[f["model"]], str(f["canvas"]), secs(f["median_ms"]),
                     fmt(f["gops"]), pct(f["gops"], peak), fmt(f["load_ms"]), cpu,
                     fmt(f.get("load_vs_cat"), 2), fmt(f["peak_rss_mb"] / 1024, 2), f["kernel"]])
    lines = ["**Forward pass** (`dllm bench`, Q4_K_M, logits for the last 32 rows; %% of the "
             "measured int8 peak, %s GOPS; load / cat: the load time over the median of 3 "
             "`cat FILE >/dev/null` just before; the load's CPU time, user / system, in files "
             "from commit 1a3e71e on)" % fmt(peak), ""]
    lines += table(["model", "canvas", "pass s", "GOPS", "% int8 peak", "load ms",
                    "load CPU ms user / sys", "load / cat", "peak RSS GB", "kernel"], rows)
    cold = [[LABEL[c["model"]], failed(c["error"]), "", ""] if "error" in c else
            [LABEL[c["model"]], fmt(c["cold_cat_ms"]), fmt(c["cold_load_ms"]),
             fmt(c["load_vs_cat"], 2)] for c in doc.get("load_cold") or []]
    if cold:
        lines += ["", "Loads from disk (the file dropped from the page cache before each: "
                  "`posix_fadvise` `POSIX_FADV_DONTNEED`; no target):", ""]
        lines += table(["model", "cat from disk ms", "load from disk ms", "load / cat"], cold)
    return lines + ["", source(doc)]


def phases_section(doc):
    n = len(doc["phases"][0].get("rounds", []))
    rows = []
    for f in doc["phases"]:
        if "error" in f:
            rows.append([LABEL[f["model"]], failed(f["error"])] + [""] * (5 if n > 1 else 4))
            continue
        one, two = f["threads_1"], f["threads_2"]
        for p in ("gemm", "attention", "norms_rope", "output", "pass"):
            a = one["median_ms"] if p == "pass" else one["phases_median_ms"][p]
            b = two["median_ms"] if p == "pass" else two["phases_median_ms"][p]
            row = [LABEL[f["model"]], p, fmt(a), fmt(b), fmt(f["ratio"].get(p), 2)]
            each = [r["ratio"][p] for r in f.get("rounds", []) if p in r["ratio"]]
            if n > 1:
                row.append("%s-%s" % (fmt(min(each), 2), fmt(max(each), 2)) if each else "")
            rows.append(row)
    rounds = (", %d rounds, the order of 1 and 2 threads alternating; median ms of each phase "
              "over the rounds' passes" % n if n > 1 else "; median ms of each phase")
    lines = ["**Phases on 1 and 2 threads** (`dllm bench` with `--threads-sweep`, canvas %d, "
             "logits for 32 rows%s; 2 / 1: the 2-thread time over the 1-thread time, 0.5 when "
             "the phase divides perfectly%s)"
             % (doc["phases"][0]["canvas"], rounds,
                "; each round's own 2 / 1 beside it" if n > 1 else ""), ""]
    lines += table(["model", "phase", "1 thread ms", "2 threads ms", "2 / 1"]
                   + (["rounds' 2 / 1"] if n > 1 else []), rows)
    return lines + ["", source(doc)]


def generate_section(doc):
    rows = []
    for g in doc["generate"]:
        mode = "threshold %g" % g["threshold"] if g["threshold"] else "32 steps, block 32"
        if "error" in g:
            rows.append([LABEL[g["model"]], mode, str(g["generated_tokens"]),
                         failed(g["error"])] + [""] * 6)
            continue
        rows.append([LABEL[g["model"]], mode, str(g["generated_tokens"]), str(g["canvas"]),
                     str(g["steps"]), fmt(g["ms_per_step"]), fmt(g["tokens_per_s"], 2),
                     fmt(g["sample_ms"] / g["steps"], 1), fmt(g["sample_share_pct"], 2) + "%",
                     fmt(g["outside_forward_pct"], 2) + "%"])
    lines = ["**Generation** (`dllm run`; canvas = prompt + tokens)", ""]
    lines += table(["model", "decoding", "tokens", "canvas", "steps", "ms/step", "tokens/s",
                    "sampling ms/step", "sampling share", "outside forward"], rows)
    return lines + ["", source(doc)]


def sampling_section(doc):
    rows = []
    for g in doc["sampling"]:
        if "error" in g:
            rows.append([LABEL[g["model"]], g["settings"], str(g["canvas"]),
                         failed(g["error"])] + [""] * 3)
            continue
        rows.append([LABEL[g["model"]], g["settings"], str(g["canvas"]), str(g["steps"]),
                     fmt(g["sample_ms_per_step"], 1), fmt(g["sample_share_pct"], 2) + "%",
                     "n/a" if g["bookkeeping_pct"] is None else fmt(g["bookkeeping_pct"], 2) + "%"])
    lines = ["**Sampling** (`dllm run --trace`, 128 tokens after a prompt of canvas - 128, the "
             "first steps: the most masks; share = sampling / (forward + sampling); "
             "bookkeeping = time outside the forward passes / elapsed; target at most 2%)", ""]
    lines += table(["model", "settings", "canvas", "steps", "sampling ms/step", "sampling share",
                    "bookkeeping"], rows)
    return lines + ["", source(doc)]


def cache_section(docs):
    """The newest cache figures of each model, from whichever runs measured them."""
    newest_of = {}
    for d in sorted((d for d in docs if d.get("cache")), key=lambda d: d["date"]):
        for c in d["cache"]:
            newest_of[c["model"]] = d
    rows, sources = [], []
    for model, doc in newest_of.items():
        if doc not in sources:
            sources.append(doc)
    for doc in sources:
        rows += cache_rows([c for c in doc["cache"] if newest_of[c["model"]] is doc])
    lines = ["**K/V cache** (`dllm run --cache`, block 32, no early stop; seconds = "
             "the steps' summed time, median of the rounds; the bound counts computed positions; "
             "agreement = answer tokens equal to `none`'s, random weights)", ""]
    lines += table(["model", "decoding", "cache", "steps s", "speed-up", "row bound",
                    "tokens as none", "cache MB", "peak RSS GB"], rows)
    return lines + [""] + [source(d) for d in sources]


def cache_rows(entries):
    rows = []
    for c in entries:
        tokens = c["runs"][0].get("generated_tokens", 128) if c["runs"] else 128
        mode_of = ("threshold %g, %d tokens" % (c["threshold"], tokens) if c["threshold"]
                   else "32 steps, 128 tokens")
        for mode, m in c["summary"].items():
            rows.append([LABEL[c["model"]], mode_of, mode, secs(m["median_sum_step_ms"], 1),
                         fmt(m["speedup"], 2) + "x", fmt(m["row_bound"], 2) + "x",
                         fmt(100 * m["token_agreement_with_none"], 0) + "%",
                         fmt(m["cache_bytes"] / 1e6, 0), fmt(m["peak_rss_mb"] / 1024, 2)])
        for r in c["runs"]:
            if "error" in r:
                rows.append([LABEL[c["model"]], mode_of, r["mode"], failed(r["error"])] + [""] * 5)
    return rows


def divergence_section(docs):
    """The newest divergence figures of each model, from whichever runs measured them."""
    newest_of = {}
    for d in sorted((d for d in docs if d.get("divergence")), key=lambda d: d["date"]):
        for r in d["divergence"]:
            newest_of[r["model"]] = d
    sources = []
    for doc in newest_of.values():
        if doc not in sources:
            sources.append(doc)
    rows = []
    for doc in sources:
        for r in doc["divergence"]:
            if newest_of[r["model"]] is not doc:
                continue
            if "error" in r:
                rows.append([r["model"], "", failed(r["error"])] + [""] * 5)
                continue
            rows.append([r["model"], r["mode"], str(r["checked_steps"]), fmt(r["cos_min"], 4),
                         fmt(r["rel_median_of_step_max"], 3), fmt(r["rel_max"], 3),
                         fmt(100 * r["argmax_agreement"], 1) + "%",
                         fmt(100 * r["token_agreement_with_none"], 0) + "%"])
    lines = ["**K/V cache divergence** (`dllm run --cache MODE --cache-check`, 128 tokens, 32 "
             "steps, block 32: each cached step's rows against the exact pass over the same "
             "canvas; random weights)", ""]
    lines += table(["model", "cache", "steps checked", "cosine min", "rel. L2 (median step)",
                    "rel. L2 max", "argmax agrees", "tokens as none"], rows)
    return lines + [""] + [source(d) for d in sources]


def kvf16_section(doc):
    """The float16 cache against the float32 one, per model and window (bench_kv_f16)."""
    rows = []
    for r in doc["kvf16"]:
        label = LABEL.get(r["model"], r["model"]) if r["model"] in LABEL else r["model"]
        if "error" in r:
            rows.append([label, "", failed(r["error"])] + [""] * 6)
            continue
        for window in ("dual", "prefix"):
            w = r.get(window)
            if not w:
                continue
            rows.append([label, window, "%d / %d" % (r["cases"], w["steps"]), fmt(w["own"], 4),
                         fmt(w["f16"], 4), "%+.1f%%" % (100 * w["extra_share"]),
                         fmt(100 * w["direct_share"], 1) + "%", fmt(w["step0_f16"], 4),
                         "yes" if w["rule_f16"] else "no"])
    lines = ["**K/V cache in float16** (`bench/bench_kv_f16`: one block after the prompt, "
             "refreshed, then filled left to right; each cached step's candidate rows against the "
             "exact pass; mean relative L2 error over the steps that read a stale cache; rule: "
             "float16 unless its extra error exceeds 10% of float32's; random weights)", ""]
    lines += table(["model", "window", "cases / steps", "f32 error", "f16 error",
                    "f16 extra", "f16 vs f32", "f16 at step 0", "rule met"], rows)
    return lines + ["", source(doc)]


def pair(a, b, digits=2):
    return "%s / %s" % (secs(a, digits), secs(b, digits))


def ratio(a, b):
    return "%s / %s" % (fmt(a, 2), fmt(b, 2))


def newest_per_model(docs, section):
    """Each model's newest entries of a section, from whichever runs measured them, and those
    runs, oldest first."""
    newest_of = {}
    for d in sorted((d for d in docs if d.get(section)), key=lambda d: d["date"]):
        for e in d[section]:
            newest_of[e["model"]] = d
    sources = []
    for doc in newest_of.values():
        if doc not in sources:
            sources.append(doc)
    entries = [e for doc in sources for e in doc[section] if newest_of[e["model"]] is doc]
    return entries, sources


def compare_section(docs):
    rows = []
    entries, sources = newest_per_model(docs, "compare")
    for c in entries:
        if "error" in c:
            rows.append([LABEL[c["model"]], str(c["canvas"]), failed(c["error"])] + [""] * 6)
            continue
        rows.append([LABEL[c["model"]], str(c["canvas"]),
                     pair(c["dllm_median_ms"], c.get("dllm_min_ms")),
                     pair(c.get("llama_diffusion_median_ms"), c.get("llama_diffusion_min_step_ms")),
                     ratio(c.get("speedup_vs_diffusion_cli"), c.get("speedup_min_vs_min")),
                     secs(c.get("llama_bench_median_ms")),
                     fmt(c.get("speedup_vs_llama_bench"), 2),
                     secs(c.get("ik_bench_median_ms")),
                     fmt(c.get("speedup_vs_ik_bench"), 2)])
    commits = ", ".join(sorted({c["llama_cpp_commit"] for c in entries
                                if c.get("llama_cpp_commit")}))
    peers = ["commit " + commits] if commits else []
    ik = next((c for c in entries if c.get("ik_llama_commit")), None)
    if ik:
        peers.append("%s %s%s" % ("ik_llama.cpp" if commits else "commit", ik["ik_llama_commit"],
                                   " with " + " ".join(ik["ik_args"]) if ik.get("ik_args") else ""))
    lines = ["**Against %s** (%s; same file, canvas and threads, runs alternating; logits for "
             "every row, but llama-bench's for the last; median / fastest, speedup = their time / "
             "dllm time)" % ("llama.cpp" if commits else "ik_llama.cpp", "; ".join(peers)), ""]
    lines += table(["model", "canvas", "dllm pass s", "llama-diffusion-cli s/step",
                    "speedup", "llama-bench causal prefill s", "speedup",
                    "ik_llama.cpp causal prefill s", "speedup"], rows)
    return lines + [""] + [source(d) for d in sources]


def moe_section(doc):
    m = doc["moe"]
    if "error" in m:
        return ["**Mixture of experts**: " + failed(m["error"]), "", source(doc)]
    rows = []
    for i, r in enumerate(m["rounds"]):
        a, b = r["llada-moe"], r["llada"]
        rows.append([str(i + 1), "%s (CPU %s)" % (secs(a["median_ms"]), secs(statistics.median(
            a["cpu_ms"]))), fmt(a["gops"]), "%s (CPU %s)" % (secs(b["median_ms"]), secs(
                statistics.median(b["cpu_ms"]))), fmt(b["gops"]),
                     fmt(a["median_ms"] / b["median_ms"], 3)])
    rows.append(["median", secs(m["moe_median_ms"]), "", secs(m["dense_median_ms"]), "",
                 "**%s** (target at most %s)" % (fmt(m["ratio"], 3), fmt(m["target_ratio"], 3))])
    g = [r for r in m["expert_gemm"]["results"] if r["threads"] == doc["threads"]]
    best = {}
    for r in g:
        key = (r["N"], r["K"], r["type"])
        if key not in best or r["gops"] > best[key]["gops"]:
            best[key] = r
    gemm = ", ".join("%s %d x %d: %s GOPS" % (t, n, k, fmt(r["gops"]))
                     for (n, k, t), r in sorted(best.items()))
    lines = ["**Mixture of experts** (`dllm bench --canvas 160 --rows 32`, Q4_K_M synth files, "
             "the two alternating per round; GOPS counts the 8 experts each token uses; %s)" %
             m["note"], ""]
    lines += table(["round", "LLaDA-MoE-7B-A1B pass s", "GOPS", "LLaDA-8B pass s", "GOPS",
                    "MoE / dense"], rows)
    r = m.get("rnd1") or {}
    if "median_ms" in r:
        rnd1 = ("RND1-30B-A3B shape (%.1f GB file): pass %s s (CPU %s s), %s GOPS, load %s s, "
                "peak RSS %s GB." % (r["file_gb"], secs(r["median_ms"]),
                                     secs(statistics.median(r["cpu_ms"])), fmt(r["gops"]),
                                     secs(r["load_ms"], 1), fmt(r["peak_rss_mb"] / 1024, 1)))
    elif r:
        rnd1 = "RND1-30B-A3B shape: not run, %s." % (r.get("skipped") or failed(r["error"]))
    else:
        rnd1 = "RND1-30B-A3B shape: not measured in this run."
    return lines + ["", "One expert's matrices at 20 rows (bench_gemm): " + gemm + ".", "",
                    rnd1, "", source(doc)]


def gemm_section(doc):
    peak = peak_of(doc)
    rows, variants = [], set()
    for name, g in doc["gemm"].items():
        best, shapes = {}, []
        for r in g["results"]:
            if r["threads"] != doc["threads"]:
                continue
            key = (r["N"], r["K"], r["type"], r["L"])
            if (r["N"], r["K"]) not in shapes:
                shapes.append((r["N"], r["K"]))
            if key not in best or r["gops"] > best[key]["gops"]:
                best[key] = r
        for n, k in shapes:
            cells = []
            for typ in ("Q4_K", "Q6_K"):
                for l in (160, 512):
                    r = best.get((n, k, typ, l))
                    cells.append("%s (%s)" % (fmt(r["gops"]), pct(r["gops"], peak)) if r else "")
                    if r:
                        variants.add(r["variant"])
            rows.append([LABEL[name], "%d x %d" % (n, k)] + cells)
    lines = ["**GEMM alone** (`bench/bench_gemm`: one layer's matrices N x K times L activation "
             "rows, with the activation conversion; GOPS (%% of the int8 peak, %s GOPS), the "
             "fastest variant: %s)" % (fmt(peak), ", ".join(sorted(variants))), ""]
    lines += table(["model", "N x K", "Q4_K L=160", "Q4_K L=512", "Q6_K L=160", "Q6_K L=512"],
                   rows)
    return lines + mix_bound_lines(doc.get("gemm_mix_bound"), variants) + ["", source(doc)]


def mix_bound_lines(mb, variants):
    """The bound the inner loops' instruction mix sets (bench/mix_bound.py), for the variants
    the table shows, as a sentence."""
    rows = [r for r in (mb or {}).get("rows", []) if r["kernel"] in variants and
            r["function"] in ("ktile_q45", "ktile_q4", "ktile_q5", "ktile_q6")]
    if not rows:
        return []
    parts = ["%s %s on %s %s%%" % (r["kernel"], "/".join(r["types"]), r["cpu"],
                                   round(100 * r["bound"])) for r in rows]
    measured = [c for c in (run.mix_bound.ZEN5, run.mix_bound.SPR)
                if any(r["cpu"] == c for r in rows)]
    ports = "; on %s the pipes bench/bench_ports measured on one" % " and ".join(
        c.split(" ")[0] for c in measured) if measured else ""
    return ["", "The share of the int8 peak the inner loop's instruction mix allows (llvm-mca %s%s, "
            "bench/mix_bound.py): %s." % (mb["llvm_version"], ports, ", ".join(parts))]


def gpu_label(e):
    """A bench entry's model: the real shape's label, or the synth preset (tiny, on the CPU)."""
    big = {"llada": "8b", "dream": "7b"}
    return (LABEL[e["arch"]] if big.get(e["arch"]) == e["preset"] else
            "%s %s" % (e["arch"], e["preset"]))


def gpu_source(doc):
    m = doc["machine"]
    dirty = " (with uncommitted changes)" if doc.get("dirty") else ""
    mib = m.get("gpu_memory_mib")
    where = ("%s, driver %s, %s GB" % (m["gpu"], m["driver"], fmt(mib / 1024 if mib else None))
             if m.get("gpu") else "device %s" % doc["device"])
    return "_%s, commit %s%s, %s; host %s, %d cores._" % (doc["date"][:10], doc["commit"], dirty,
                                                        where, m["cpu"], m["cores"])


def gpu_section(doc):
    """tests/gpu/run.sh's bench stage: per model and mode, dllm run's step with its canvas, pass
    and sampling times (older documents lack some), dllm bench's pass at canvas 160 and 512,
    and the GPU memory at 512 beside the file's size."""
    cells = {}
    for e in doc["gpu"]:
        cells.setdefault((gpu_label(e), e["mode"]), {})[e["canvas"]] = e
    rows = []
    for (label, mode), by_canvas in cells.items():
        first = next(iter(by_canvas.values()))
        if first["error"]:
            rows.append([label, mode, failed(first["error"])] + [""] * 9)
            continue

        def pass_ms(canvas):
            b = (by_canvas.get(canvas) or {}).get("bench")
            return fmt(b["median_ms"], 1) if b else "failed"

        def phases(canvas):
            """Each phase's median over the passes: gemm / attention / norms_rope / output."""
            b = (by_canvas.get(canvas) or {}).get("bench") or {}
            if not b.get("phases_ms"):
                return "n/a"
            return " / ".join(fmt(statistics.median(p[k] for p in b["phases_ms"]), 1)
                              for k in ("gemm", "attention", "norms_rope", "output"))
        e512 = by_canvas.get(512) or {}
        peak, idle = e512.get("gpu_peak_mib"), e512.get("gpu_idle_mib") or 0
        used = None if peak is None else (peak - idle) * 2**20 / 1e9
        file_gb = first["file_bytes"] / 1e9 if first["file_bytes"] else None
        step_parts = ("n/a" if first.get("forward_ms") is None else
                      fmt(first["forward_ms"], 1) + " / " + fmt(first["sample_ms"], 1))
        step_canvas = first.get("step_canvas")
        rows.append([label, mode, fmt(first["step_ms"], 1),
                     "not recorded" if step_canvas is None else str(step_canvas), step_parts,
                     pass_ms(160), phases(160),
                     pass_ms(512), phases(512), fmt(used, 2), fmt(file_gb, 2),
                     fmt(None if used is None or file_gb is None else used - file_gb, 2)])
    lines = ["**GPU** (`tests/gpu/run.sh bench`, `dllm synth` Q4_K_M files; step: median "
             "`step_ms` of `dllm run` with a 32-token prompt, 128 tokens, 128 steps, blocks of "
             "32 (canvas 160, 32 logits rows) after the first, and the same steps' median "
             "forward and sampling ms from its `--trace`; step canvas: the run's prompt tokens "
             "plus 128, not recorded by the documents of 2026-12-04 before 16:00, whose prompt "
             "of 31 words made 154-155 tokens of the synth files' byte-level vocabulary (canvas "
             "282-283); pass: `dllm bench --rows 32`, median, and its phases' medians, gemm / "
             "attention / norms and RoPE / output; "
             "memory: nvidia-smi's peak during the bench at 512 less its reading before; "
             "targets: LLaDA-8B shape step under 15 ms on an H200, memory at most the file "
             "plus 1.5 GB in the default mode)", ""]
    lines += table(["model", "mode", "step ms", "step canvas", "step's forward / sampling ms",
                    "pass ms, canvas 160", "phases ms",
                    "pass ms, canvas 512", "phases ms", "GPU memory GB at 512", "file GB",
                    "memory - file GB"], rows)
    return lines + ["", gpu_source(doc)]


def render(docs):
    out = []
    # Sections whose rows may come from several runs take all the documents (of one class of
    # CPU, for those in PER_ISA).
    merged = {"cache": cache_section, "divergence": divergence_section,
              "compare": compare_section}
    for section, fn in (("forward", forward_section), ("phases", phases_section),
                        ("compare", None),
                        ("generate", generate_section), ("sampling", sampling_section),
                        ("cache", None), ("divergence", None),
                        ("kvf16", kvf16_section), ("moe", moe_section), ("gemm", gemm_section),
                        ("gpu", gpu_section)):
        groups = ([[d for d in docs if isa_class(d) == isa] for isa in ISA_CLASSES]
                  if section in PER_ISA else [docs])
        for group in groups:
            doc = newest(group, section)
            if doc:
                out += (fn(doc) if fn else merged[section](group)) + [""]
    return "\n".join(out).rstrip() + "\n"


def cpu_model(text):
    """--cpu's FAMILY:MODEL as two numbers."""
    family, sep, model = text.partition(":")
    if not (sep and family.isdigit() and model.isdigit()):
        raise argparse.ArgumentTypeError("%r is not FAMILY:MODEL (26:2, say)" % text)
    return int(family), int(model)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--update", metavar="FILE", help="rewrite the marked part of FILE")
    ap.add_argument("--cpu", type=cpu_model, metavar="FAMILY:MODEL",
                    help="only the runs on this CPU model (the GPU table's documents are kept)")
    a = ap.parse_args()
    docs = []
    for fn in sorted(os.listdir(a.results)):
        if fn.endswith(".json"):
            with open(os.path.join(a.results, fn)) as f:
                d = json.load(f)
            if "date" in d and "machine" in d and (
                    a.cpu is None or d.get("gpu") or run.cpu_key(d["machine"])[1:] == a.cpu):
                docs.append(d)
    if a.cpu and not any(not d.get("gpu") for d in docs):
        sys.exit("table.py: no result file in %s was measured on CPU family %d model %d"
                 % (a.results, *a.cpu))
    md = render(docs)
    if not a.update:
        sys.stdout.write(md)
        return
    with open(a.update) as f:
        text = f.read()
    i, j = text.find(START), text.find(END)
    if i < 0 or j < i:
        sys.exit("table.py: %s has no %s ... %s markers" % (a.update, START, END))
    with open(a.update, "w") as f:
        f.write(text[:i + len(START)] + "\n" + md + text[j:])


if __name__ == "__main__":
    main()

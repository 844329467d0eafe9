#!/usr/bin/env python3
"""Runs dllm's benchmarks and writes one JSON result file under bench/results/.

Parts (--parts, default gemm,forward,generate):
  gemm      bench/bench_gemm on the LLaDA-8B and Dream-7B layer shapes, with the int8 peak
            (a run whose peak probe reads below 90% of the best recorded on this CPU is made
            again, up to three times),
            and the share of it the inner loops' instruction mix allows (bench/mix_bound.py,
            when an llvm-mca is installed), with bench/bench_ports' measure of which
            instructions share the 512-bit dot products' pipes (AVX512-VNNI CPUs)
  forward   `dllm bench` on the synth models at canvas 160 and 512 (--forward-canvas), each
            between two int8 peak probes (probes_gops), with
            each load's time over the median of 3 `cat FILE` made just before (load_vs_cat);
            then a load from disk beside a cat from disk (load_cold: each time the file is
            dropped from the page cache first with posix_fadvise POSIX_FADV_DONTNEED)
  phases    `dllm bench --threads 1 --threads-sweep 2` at canvas 160, --rounds times, the
            order of 1 and 2 threads alternating: each phase of a pass (gemm, attention,
            norms_rope, output) on 1 and 2 threads, and 2-thread over 1-thread
  generate  `dllm run --json --trace` end to end: 128 tokens, 32 steps, block 32, with and
            without --threshold 0.9; ms per step, tokens/s, time outside the forward pass
  sampling  the sampler's share of a step, `dllm run --no-chat --trace` on the synth models
            with LLaDA's defaults and --threshold 0.9, Dream's defaults, --temperature 1
            and --threshold 0.9 --alg maskgit_plus, 128 tokens after a prompt of 32 and of
            384 tokens (canvas 160 and 512): the first --sampling-steps steps (the ones with
            the most masks: an upper bound), the run then stopped as Ctrl+C would; shares
            sum(sample_ms) / sum(forward_ms + sample_ms) and, for the bookkeeping outside
            the steps, (elapsed_ms - sum(forward_ms)) / elapsed_ms at the last step
  cache     `dllm run --json --cache none|prefix|dual` alternating (--rounds rounds): 128
            tokens, 32 steps, block 32, no early stop; the summed step times, the speed-up
            over none beside the bound counting computed positions gives, token agreement
            with none; then one round with --threshold 0.9
  divergence  `dllm run --cache prefix|dual --cache-check` on the fixture models
            ($DLLM_FIXTURES) and the synth shapes: every cached step's logits rows against
            the exact pass over the same canvas (cosine, relative L2 error, argmax
            agreement), and whole-run token agreement with none
  kvf16     bench/bench_kv_f16 on the fixture models' cases and the synth shapes: what
            storing the K/V cache in float16 would add to the cache's own divergence (the
            issue's rule: float16 unless that exceeds 10% of it)
  moe       the LLaDA-MoE-7B-A1B shape against the LLaDA-8B shape: `dllm bench --canvas 160
            --rows 32` on the two files alternating (--rounds rounds, --reps passes each),
            the ratio of the medians; bench_gemm on one expert's matrices at 20 rows (a
            canvas of 160 routed to 8 of 64 experts is 20 rows per expert on average); then
            the RND1-30B-A3B shape (an 18.6 GB file) once, only when MemAvailable is at least
            its need plus 2 GB (else the need and what was available are recorded)
  compare   side by side with llama.cpp on the same file, canvas and threads, runs
            alternating: `dllm bench` with logits for every row next to llama-diffusion-cli's
            time per step (one non-causal pass over the canvas plus its sampling), and
            llama-bench -p L -n 0 (a causal prefill of L tokens) as a second reference.
            --llama-cpp DIR names a folder holding those two programs (built by you,
            outside this repository). With --ik-llama DIR (ik_llama.cpp's build/bin), its
            llama-bench too, on a copy of each file whose architecture is renamed to the
            autoregressive one it knows (llada -> llama, dream -> qwen2: the same tensors);
            with --ik-rtr it runs with -rtr 1, its run-time repack into row-interleaved
            blocks, ik_llama.cpp's fastest CPU layout. Needs one of the two folders or both.

The models are written once by `dllm synth` (LLaDA-8B and Dream-7B shapes, Q4_K_M, random
weights, about 5 GB each; the LLaDA-8B shape also in Q3_K_M and Q2_K) into --cache (default
~/.cache/dllm-bench). Nothing here asserts a speed; bench/table.py turns the result files into
the README's table.
"""
import argparse
import datetime
import json
import os
import platform
import re
import resource
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import mix_bound

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = {
    "llada": {"arch": "llada", "preset": "8b", "type": "Q4_K_M", "file": "llada-8b-q4km.gguf",
              "label": "LLaDA-8B shape"},
    "dream": {"arch": "dream", "preset": "7b", "type": "Q4_K_M", "file": "dream-7b-q4km.gguf",
              "label": "Dream-7B shape"},
    "llada-moe": {"arch": "llada-moe", "preset": "7b-a1b", "type": "Q4_K_M",
                  "file": "llada-moe-7b-a1b-q4km.gguf", "label": "LLaDA-MoE-7B-A1B shape"},
    "rnd1": {"arch": "rnd1", "preset": "30b-a3b", "type": "Q4_K_M",
             "file": "rnd1-30b-a3b-q4km.gguf", "label": "RND1-30B-A3B shape"},
    # the LLaDA-8B shape in the smaller K-quant mixes, for the forward and phases parts
    "llada-q3km": {"arch": "llada", "preset": "8b", "type": "Q3_K_M",
                   "file": "llada-8b-q3km.gguf", "label": "LLaDA-8B shape, Q3_K_M"},
    "llada-q2k": {"arch": "llada", "preset": "8b", "type": "Q2_K", "file": "llada-8b-q2k.gguf",
                  "label": "LLaDA-8B shape, Q2_K"},
}
# What the RND1-30B-A3B shape needs besides MemAvailable's 2 GB margin: its weights (the Q4_K_M
# file) and about 1 GB of buffers and logits at canvas 160.
RND1_WEIGHTS_GB, RND1_BUFFERS_GB = 18.6, 1.0
# The matrix shapes of one layer, N x K (output x input): q/o, k/v, ffn gate/up, ffn down.
GEMM_SHAPES = {
    "llada": "4096x4096,12288x4096,4096x12288",
    "dream": "3584x3584,512x3584,18944x3584,3584x18944",
    # one expert: gate/up, down
    "llada-moe": "1024x2048,2048x1024",
}
PROMPT = "Explain speculative decoding in two sentences."


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


class RunError(Exception):
    """A benchmarked program failed; the message holds its last line of output."""


def children_cpu_s():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run(cmd, timeout=3600, cpu=None, env=None):
    """Runs cmd (in env, or this process's environment); returns (stdout, stderr, seconds). A
    failure ends the script with its output. With cpu (a dict), cpu["s"] is set to the CPU
    seconds the command used, all threads."""
    log(" ".join(cmd))
    t, c = time.monotonic(), children_cpu_s()
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout,
                       env=env)
    dt = time.monotonic() - t
    if cpu is not None:
        cpu["s"] = children_cpu_s() - c
    if p.returncode != 0:
        lines = [l for l in (p.stderr or p.stdout).splitlines() if l.strip()]
        raise RunError("%s exited %d: %s" % (os.path.basename(cmd[0]), p.returncode,
                                             lines[-1] if lines else "no output"))
    return p.stdout, p.stderr, dt


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def machine():
    """The CPU (lscpu: its name, family and model, which tell e.g. AMD Zen 4, family 25, from
    Zen 5, family 26, where both are named "AMD EPYC"), cores, memory and OS: where the
    figures were measured."""
    info = {"cpu": platform.processor() or "unknown", "cores": os.cpu_count(),
            "kernel": platform.release()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            key, _, val = line.partition(":")
            if key.strip() == "Model name":
                info["cpu"] = val.strip()
            elif key.strip() in ("CPU family", "Model"):
                info["cpu_" + key.strip().split()[-1].lower()] = int(val) if val.strip().isdigit() \
                    else val.strip()
            elif key.strip() == "Flags":
                flags = val.split()
                info["int8_dot"] = [f for f in ("avx2", "avx_vnni", "avx512_vnni") if f in flags]
    except OSError:
        pass
    with open("/proc/meminfo") as f:
        kb = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1))
    info["memory_gb"] = round(kb / 1024 / 1024, 1)
    return info


def commit_of(path):
    """The commit (and whether the tree had changes) of the checkout a program was built in."""
    d = os.path.dirname(os.path.abspath(path))
    try:
        c = subprocess.run(["git", "-C", d, "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", d, "status", "--porcelain", "-uno"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return {"commit": c, "dirty": bool(dirty)}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": "unknown", "dirty": None}


def find_program(given, candidates):
    if given:
        return os.path.abspath(given)
    for c in candidates:
        p = os.path.join(HERE, "..", c)
        if os.access(p, os.X_OK):
            return os.path.abspath(p)
    sys.exit("bench: cannot find %s; build it or name it (see --help)" % candidates[0])


def synth_models(dllm, cache, names):
    os.makedirs(cache, exist_ok=True)
    paths = {}
    for name in names:
        m = MODELS[name]
        path = os.path.join(cache, m["file"])
        if not os.path.exists(path):
            run([dllm, "synth", "--arch", m["arch"], "--preset", m["preset"], "--type", m["type"],
                 "--out", path, "--quiet"])
        paths[name] = path
    return paths


def part_gemm(bench_gemm, names, threads, reps, best_probe):
    """bench_gemm on each model's shapes. A run whose int8 peak probe reads below 90% of the
    best probe recorded on this CPU (best_probe; the machine was busy) is repeated, up to
    three runs; the last is kept, with how many were made and what each probe read."""
    out = {}
    for name in names:
        probes = []
        for _ in range(3):
            doc, _, _ = run([bench_gemm, "--threads", str(threads), "--rows", "160,512",
                             "--types", "Q4_K,Q6_K", "--shapes", GEMM_SHAPES[name], "--reps",
                             str(reps)])
            d = json.loads(doc)
            probes.append(int8_peak({name: d}, threads) or 0)
            if not best_probe or probes[-1] >= 0.9 * best_probe:
                break
        d["probe_runs_gops"] = probes
        best_probe = max([best_probe or 0] + probes)
        out[name] = d
    return out


def part_ports(program):
    """bench_ports' document: which instructions take the 512-bit dot products' resources on
    this CPU (bench/mix_bound.py's Zen 5 bound rests on it); why not, where it cannot run."""
    try:
        r = subprocess.run([program], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"skipped": str(e)}
    return json.loads(r.stdout) if r.returncode == 0 else {"skipped": r.stderr.strip()}


def result_docs(folder):
    """The result files in folder, oldest name first, as documents."""
    for fn in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if fn.endswith(".json"):
            with open(os.path.join(folder, fn)) as f:
                yield json.load(f)


def cpu_key(machine_info):
    """What tells one CPU model from another in a result file: name, family and model."""
    m = machine_info or {}
    return m.get("cpu"), m.get("cpu_family"), m.get("cpu_model")


def recorded_peaks(folder, cpu, threads):
    """(date, int8 peak) of each result file in folder measured on this CPU (same name, family
    and model) that has a peak."""
    for doc in result_docs(folder):
        p = int8_peak(doc.get("gemm"), threads)
        if p and cpu_key(doc.get("machine")) == cpu_key(cpu):
            yield doc["date"], p


def best_probe(folder, cpu, threads):
    """The highest int8 peak probe recorded on this CPU, or None."""
    return max((p for _, p in recorded_peaks(folder, cpu, threads)), default=None)


def int8_peak(gemm, threads):
    """The highest int8 peak bench_gemm measured (each model's run measures it once): a peak
    taken while other programs ran is lower, never higher. The peak is the probe of the CPU's
    widest multiply-add (bench_gemm's int8_peak; files from before it had one measured only
    512-bit VPDPBUSD)."""
    peaks = [p.get("int8_peak", p["zmm_vpdpbusd"]) for doc in (gemm or {}).values()
             for p in doc["int8_peak_gops"] if p["threads"] == threads]
    peaks = [p for p in peaks if p > 0]
    return max(peaks) if peaks else None


def probe(bench_gemm, threads):
    """bench_gemm's int8 peak probe (beside a product too small to take time), for a run
    without the gemm part: bench/table.py passes over a run whose probe reads below 90% of the
    best on its CPU, as this part's figures then come from a busy or throttled machine."""
    doc, _, _ = run([bench_gemm, "--threads", str(threads), "--types", "Q4_K", "--shapes",
                     "256x256", "--rows", "16", "--reps", "1"])
    return int8_peak({"probe": json.loads(doc)}, threads)


def cat_file(path, times=3):
    """Reads the file `times` times with cat to /dev/null (the page cache warm after the first);
    returns {"cat_ms": [wall ms], "cat_cpu_ms": [CPU ms], "cat_median_ms": median wall ms}."""
    wall, cpu = [], []
    for _ in range(times):
        t, c = time.monotonic(), children_cpu_s()
        subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)
        wall.append(round(1000 * (time.monotonic() - t), 1))
        cpu.append(round(1000 * (children_cpu_s() - c), 1))
    return {"cat_ms": wall, "cat_cpu_ms": cpu, "cat_median_ms": statistics.median(wall)}


def dllm_bench(dllm, path, canvas, rows, reps, threads):
    """dllm bench's JSON, with the reads of the file by cat made just before (cat_file) and
    load_ms over their median (load_vs_cat: the issue's target is at most 2)."""
    cat = cat_file(path)
    doc, _, _ = run([dllm, "bench", "-m", path, "--canvas", str(canvas), "--rows", str(rows),
                     "--reps", str(reps), "--threads", str(threads), "--json"])
    d = json.loads(doc)
    d.update(cat)
    m = cat["cat_median_ms"]
    d["load_vs_cat"] = round(d["load_ms"] / m, 2) if m else None
    d["loadavg"] = loadavg()
    return d


def drop_cache(path):
    """Asks the kernel to drop the file's pages from the page cache (posix_fadvise
    POSIX_FADV_DONTNEED: the clean pages no process maps), so that its next read is from disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def part_load_cold(dllm, paths, threads):
    """Loads from disk, reported beside a read of the file from disk (the issue sets no target):
    for each model the file is dropped from the page cache (drop_cache) and read once by cat,
    then dropped again and loaded by `dllm bench --canvas 16 --rows 1 --reps 1` (its load_ms)."""
    out = []
    for name, path in paths.items():
        rec = {"model": name}
        try:
            drop_cache(path)
            cat = cat_file(path, times=1)
            rec["cold_cat_ms"] = cat["cat_ms"][0]
            drop_cache(path)
            doc, _, _ = run([dllm, "bench", "-m", path, "--canvas", "16", "--rows", "1",
                             "--reps", "1", "--threads", str(threads), "--json"])
            d = json.loads(doc)
            rec.update({"cold_load_ms": d["load_ms"], "kernel": d["kernel"],
                        "load_vs_cat": round(d["load_ms"] / rec["cold_cat_ms"], 2)})
        except RunError as e:
            rec["error"] = str(e)
        out.append(rec)
    return out


def bracket_probes(bench_gemm, threads, measure):
    """measure() between two int8 peak probes: its result and [probe before, probe after] in
    GOPS (None for a probe that failed). The machine's speed swings within minutes; a probe
    a second away from the passes shows the speed they ran at better than one taken minutes
    before (bench/table.py gates a run on its lowest probe)."""
    def one():
        try:
            return probe(bench_gemm, threads)
        except RunError:
            return None
    before = one()
    result = measure()
    return result, [before, one()]


def part_forward(dllm, bench_gemm, paths, threads, reps, peak, canvases):
    out = []
    for name, path in paths.items():
        for canvas in canvases:
            try:
                d, probes = bracket_probes(
                    bench_gemm, threads, lambda: dllm_bench(dllm, path, canvas, 32, reps, threads))
                d["probes_gops"] = probes
                d["pct_int8_peak"] = round(100 * d["gops"] / peak, 1) if peak else None
            except RunError as e:
                d = {"canvas": canvas, "error": str(e)}
            d["model"] = name
            out.append(d)
    return out


PHASES = ("gemm", "attention", "norms_rope", "output")


def part_phases(dllm, bench_gemm, threads, paths, reps, rounds, canvas=160):
    """Each phase of a pass on 1 and on 2 threads: `rounds` runs of `dllm bench` per model, each
    timing both (--threads A --threads-sweep B), the first thread count alternating from run to
    run (1 then 2, 2 then 1, ...) so that a drift in the machine's speed falls on both sides;
    the passes of all rounds pooled, each phase's median, and the 2-thread time over the
    1-thread time (the issue's target: at most 0.6 for every phase), with each round's own
    ratio beside it to show the spread; each round between two int8 peak probes on `threads`
    threads, the run's (bracket_probes)."""
    out = []
    for name, path in paths.items():
        rec = {"model": name, "canvas": canvas, "rows": 32, "rounds": []}
        try:
            pooled = {1: [], 2: []}
            for r in range(rounds):
                first, second = (1, 2) if r % 2 == 0 else (2, 1)
                cmd = [dllm, "bench", "-m", path, "--canvas", str(canvas), "--rows", "32",
                       "--reps", str(reps), "--threads", str(first), "--threads-sweep",
                       str(second), "--json"]
                (doc, _, _), probes = bracket_probes(bench_gemm, threads, lambda: run(cmd))
                d = json.loads(doc)
                rec["kernel"] = d["kernel"]
                runs = {s["threads"]: s for s in [d] + d["threads_sweep"]}
                for t in (1, 2):
                    pooled[t].append(runs[t])
                rec["rounds"].append({"order": [first, second], "probes_gops": probes,
                                      "ratio": phase_ratios(runs[1], runs[2])})
            for t in (1, 2):
                passes = [p for s in pooled[t] for p in s["pass_ms"]]
                phases = [x for s in pooled[t] for x in s["phases_ms"]]
                rec["threads_%d" % t] = {
                    "median_ms": statistics.median(passes), "pass_ms": passes,
                    "cpu_ms": [c for s in pooled[t] for c in s["cpu_ms"]],
                    "phases_median_ms": {p: statistics.median(x[p] for x in phases)
                                         for p in PHASES}}
            rec["ratio"] = phase_ratios(rec["threads_1"], rec["threads_2"])
        except RunError as e:
            rec["error"] = str(e)
        rec["loadavg"] = loadavg()
        out.append(rec)
    return out


def phase_ratios(one, two):
    """Each phase's median 2-thread time over its 1-thread time, and the pass's, from two
    `dllm bench` timings (their phases_ms, or the phases_median_ms pooled from several)."""
    def med(s, p):
        if p == "pass":
            return s["median_ms"]
        if "phases_median_ms" in s:
            return s["phases_median_ms"][p]
        return statistics.median(x[p] for x in s["phases_ms"])
    return {p: round(med(two, p) / med(one, p), 3) for p in PHASES + ("pass",)
            if med(one, p) > 0}


def part_moe(dllm, bench_gemm, paths, threads, rounds, reps):
    """The MoE step against the dense one it is meant to undercut, alternating per round."""
    rec = {"canvas": 160, "rows": 32, "threads": threads, "rounds": []}
    for _ in range(rounds):
        r = {}
        for name in ("llada-moe", "llada"):
            d = dllm_bench(dllm, paths[name], 160, 32, reps, threads)
            r[name] = {k: d[k] for k in ("median_ms", "pass_ms", "cpu_ms", "gops", "load_ms",
                                         "peak_rss_mb", "kernel")}
        rec["rounds"].append(r)
    moe = statistics.median(r["llada-moe"]["median_ms"] for r in rec["rounds"])
    dense = statistics.median(r["llada"]["median_ms"] for r in rec["rounds"])
    rec.update(moe_median_ms=moe, dense_median_ms=dense, ratio=moe / dense, target_ratio=1 / 3)
    rec["note"] = ("random routers spread tokens evenly over the experts: the best case for "
                   "balancing them over threads")
    doc, _, _ = run([bench_gemm, "--threads", str(threads), "--rows", "20", "--types",
                     "Q4_K,Q6_K", "--shapes", GEMM_SHAPES["llada-moe"], "--reps", str(reps)])
    rec["expert_gemm"] = json.loads(doc)
    rec["rnd1"] = rnd1_pass(dllm, threads, reps, os.path.dirname(paths["llada"]))
    return rec


def mem_available_gb():
    with open("/proc/meminfo") as f:
        return int(re.search(r"MemAvailable:\s+(\d+)", f.read()).group(1)) * 1024 / 1e9


def rnd1_pass(dllm, threads, reps, cache):
    """The RND1-30B-A3B shape's pass, when this machine has the memory for it."""
    need = RND1_WEIGHTS_GB + RND1_BUFFERS_GB
    avail = mem_available_gb()
    rec = {"need_gb": need, "mem_available_gb": round(avail, 1)}
    if avail < need + 2:
        rec["skipped"] = "MemAvailable %.1f GB is below the need %.1f GB + 2 GB" % (avail, need)
        return rec
    path = synth_models(dllm, cache, ["rnd1"])["rnd1"]
    rec["file_gb"] = round(os.path.getsize(path) / 1e9, 2)
    try:
        d = dllm_bench(dllm, path, 160, 32, reps, threads)
        rec.update({k: d[k] for k in ("median_ms", "pass_ms", "cpu_ms", "gops", "load_ms",
                                      "peak_rss_mb", "kernel")})
    except RunError as e:
        rec["error"] = str(e)
    return rec


def generate_once(dllm, path, threads, threshold, dream, tokens=128):
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.jsonl")
        cmd = [dllm, "run", "-m", path, "-p", PROMPT, "--max-tokens", str(tokens), "--steps",
               str(min(32, tokens)),
               "--block-length", "32", "--threads", str(threads), "--json", "--trace", trace,
               "--verbose"]
        if threshold:
            cmd += ["--threshold", str(threshold)]
            # Dream's default confidence (entropy) is no probability: take the top-1 one.
            if dream:
                cmd += ["--alg", "maskgit_plus"]
        doc, err, wall = run(cmd)
        with open(trace) as f:
            steps = [json.loads(line) for line in f if line.strip()]
    d = json.loads(doc)
    m = re.search(r"prompt (\d+) tokens, canvas (\d+)", err)
    fwd = sum(s["forward_ms"] for s in steps)
    smp = sum(s["sample_ms"] for s in steps)
    return {
        "threshold": threshold,
        "prompt_tokens": int(m.group(1)) if m else None,
        "canvas": int(m.group(2)) if m else None,
        "steps": d["steps"],
        "stopped_early": d["stopped_early"],
        "generated_tokens": tokens,
        "load_ms": d["load_ms"],
        "total_ms": d["total_ms"],
        "ms_per_step": d["total_ms"] / max(d["steps"], 1),
        "median_step_ms": statistics.median(d["step_ms"]) if d["step_ms"] else None,
        "tokens_per_s": tokens / (d["total_ms"] / 1000),
        "forward_ms": fwd,
        "sample_ms": smp,
        "sample_share_pct": 100 * smp / (fwd + smp) if fwd + smp else None,
        "outside_forward_pct": 100 * (d["total_ms"] - fwd) / d["total_ms"],
        "peak_rss_mb": d["peak_rss_mb"],
        "settings": d["settings"],
        "wall_s": wall,
    }


def part_generate(dllm, paths, threads, threshold_tokens):
    out = []
    for name, path in paths.items():
        for threshold in (None, 0.9):
            tokens = threshold_tokens if threshold else 128
            try:
                g = generate_once(dllm, path, threads, threshold, name == "dream", tokens)
            except RunError as e:
                g = {"threshold": threshold, "generated_tokens": tokens, "error": str(e)}
            g["model"] = name
            out.append(g)
    return out


# The sampling part's settings per model (the CPU speed issue's list).
SAMPLING_SETTINGS = {
    "llada": [("defaults", []), ("threshold 0.9", ["--threshold", "0.9"])],
    "dream": [("defaults", []), ("temperature 1", ["--temperature", "1"]),
              ("threshold 0.9, maskgit_plus", ["--threshold", "0.9", "--alg", "maskgit_plus"])],
}


def raw_prompt(dllm, path, n, env=None):
    """Text that `dllm run --no-chat` feeds as exactly n tokens (a word repeated, BOS
    included where the model adds one); dllm runs in env (by default this process's)."""
    k = n
    for _ in range(4):
        text = " a" * k
        out, _, _ = run([dllm, "tokenize", "-m", path, "--no-chat", "-p", text], env=env)
        got = len(out.split())
        if got == n:
            return text
        k += n - got
    raise RunError("no prompt of %d tokens: ' a' x %d gives %d" % (n, k, got))


def first_steps(cmd, trace, steps, timeout=3600):
    """Runs cmd, a dllm run writing --trace to trace, until the trace holds `steps` lines (or
    the run ends), then interrupts it as Ctrl+C does; returns those lines."""
    log(" ".join(cmd))
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         errors="replace")
    end = time.monotonic() + timeout
    while p.poll() is None and time.monotonic() < end:
        if os.path.exists(trace):
            with open(trace) as f:
                if sum(1 for line in f if line.endswith("\n")) >= steps:
                    break
        time.sleep(0.1)
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=600)
    if p.returncode not in (0, 130):
        lines = [l for l in err.splitlines() if l.strip()]
        raise RunError("dllm exited %d: %s" % (p.returncode, lines[-1] if lines else "no output"))
    with open(trace) as f:
        lines = [json.loads(line) for line in f if line.endswith("\n")]
    return lines[:steps]


def part_sampling(dllm, paths, threads, steps, canvases):
    out = []
    for name, path in paths.items():
        for canvas in canvases:
            prompt = raw_prompt(dllm, path, canvas - 128)
            for label, extra in SAMPLING_SETTINGS.get(name, []):
                rec = {"model": name, "settings": label, "canvas": canvas}
                with tempfile.TemporaryDirectory() as tmp:
                    trace = os.path.join(tmp, "trace.jsonl")
                    cmd = [dllm, "run", "-m", path, "--no-chat", "-p", prompt, "--max-tokens",
                           "128", "--no-early-stop", "--threads", str(threads), "--trace",
                           trace] + extra
                    try:
                        lines = first_steps(cmd, trace, steps)
                    except (RunError, OSError, ValueError) as e:
                        rec["error"] = str(e)
                        out.append(rec)
                        continue
                fwd = sum(l["forward_ms"] for l in lines)
                smp = sum(l["sample_ms"] for l in lines)
                # older builds write no elapsed_ms: their bookkeeping share is left out
                elapsed = lines[-1].get("elapsed_ms", 0.0) if lines else 0.0
                rec.update({"steps": len(lines), "forward_ms": fwd, "sample_ms": smp,
                            "sample_ms_per_step": smp / len(lines) if lines else None,
                            "sample_share_pct": 100 * smp / (fwd + smp) if fwd + smp else None,
                            "elapsed_ms": elapsed,
                            "bookkeeping_pct": 100 * (elapsed - fwd) / elapsed
                            if elapsed else None})
                out.append(rec)
    return out


CACHE_MODES = ("none", "prefix", "dual")


def cache_once(dllm, path, threads, mode, dream, threshold=None, tokens=128):
    """One dllm run of the cache protocol (128 tokens, 32 steps, block 32, no early stop) with
    --cache MODE: the sum of its step_ms, the refresh steps and positions computed per step."""
    cmd = [dllm, "run", "-m", path, "-p", PROMPT, "--max-tokens", str(tokens), "--steps",
           str(min(32, tokens)),
           "--block-length", "32", "--no-early-stop", "--threads", str(threads), "--json",
           "--cache", mode, "--verbose"]
    if threshold:
        cmd += ["--threshold", str(threshold)]
        if dream:
            cmd += ["--alg", "maskgit_plus"]
    cpu = {}
    doc, err, wall = run(cmd, cpu=cpu)
    d = json.loads(doc)
    m = re.search(r"prompt (\d+) tokens, canvas (\d+)", err)
    return {"mode": mode, "threshold": threshold, "generated_tokens": tokens,
            "prompt_tokens": int(m.group(1)) if m else None,
            "canvas": int(m.group(2)) if m else None,
            "steps": d["steps"], "sum_step_ms": sum(d["step_ms"]),
            "refresh_steps": d["refresh_steps"], "step_computed": d["step_computed"],
            "cache_bytes": d["cache_bytes"], "peak_rss_mb": d["peak_rss_mb"],
            "tokens": d["tokens"], "process_cpu_s": cpu["s"], "wall_s": wall}


def cache_summary(runs):
    """Per mode: the median of the rounds' summed step times, the speed-up over none, the
    bound on it that counting computed positions (GEMM rows) gives, and the share of tokens
    equal to none's run of the same round."""
    out = {}
    none = [r for r in runs if r["mode"] == "none"]
    for mode in CACHE_MODES:
        rs = [r for r in runs if r["mode"] == mode]
        if not rs:
            continue
        med = statistics.median(r["sum_step_ms"] for r in rs)
        agree = []
        for r, n in zip(rs, none):
            same = sum(a == b for a, b in zip(r["tokens"], n["tokens"]))
            agree.append(same / max(len(n["tokens"]), len(r["tokens"]), 1))
        out[mode] = {"median_sum_step_ms": med,
                     "speedup": statistics.median(r["sum_step_ms"] for r in none) / med
                     if none else None,
                     "row_bound": sum(none[0]["step_computed"]) / sum(rs[0]["step_computed"])
                     if none else None,
                     "token_agreement_with_none": statistics.median(agree) if agree else None,
                     "cache_bytes": rs[0]["cache_bytes"],
                     "peak_rss_mb": max(r["peak_rss_mb"] for r in rs)}
    return out


def part_cache(dllm, paths, threads, rounds, threshold_tokens):
    """The cache protocol: none, prefix and dual alternating for `rounds` rounds on each model,
    then one round of each with --threshold 0.9 over threshold_tokens tokens (random weights
    are rarely 0.9 confident, so such a run takes about a step per token)."""
    out = []
    for name, path in paths.items():
        for threshold in (None, 0.9):
            runs = []
            for rnd in range(rounds if threshold is None else 1):
                for mode in CACHE_MODES:
                    try:
                        r = cache_once(dllm, path, threads, mode, name == "dream", threshold,
                                       threshold_tokens if threshold else 128)
                    except RunError as e:
                        r = {"mode": mode, "threshold": threshold, "error": str(e)}
                    r["round"] = rnd
                    runs.append(r)
            ok = [r for r in runs if "error" not in r]
            out.append({"model": name, "threshold": threshold, "runs": runs,
                        "summary": cache_summary(ok)})
    return out


def divergence_once(dllm, path, threads, mode, dream):
    """One cache-protocol run with --cache-check: the cached rows of every step that read the
    cache against the exact pass over the same canvas, summarised, and the answer's tokens."""
    cmd = [dllm, "run", "-m", path, "-p", PROMPT, "--max-tokens", "128", "--steps", "32",
           "--block-length", "32", "--no-early-stop", "--threads", str(threads), "--json",
           "--cache", mode]
    if mode != "none":
        cmd.append("--cache-check")
    doc, _, _ = run(cmd)
    d = json.loads(doc)
    checks = d.get("cache_checks", [])
    rows = sum(c["rows"] for c in checks)
    return {"mode": mode, "tokens": d["tokens"], "checked_steps": len(checks),
            "cos_min": min((c["cos_min"] for c in checks), default=None),
            "cos_median_of_step_min": statistics.median(c["cos_min"] for c in checks)
            if checks else None,
            "rel_max": max((c["rel_max"] for c in checks), default=None),
            "rel_median_of_step_max": statistics.median(c["rel_max"] for c in checks)
            if checks else None,
            "argmax_agreement": sum(c["argmax_same"] for c in checks) / rows if rows else None}


def part_divergence(dllm, paths, threads, fixtures):
    """The cached steps' logits against exact passes over the same canvases (--cache-check),
    per mode, on the fixture models and the synth shapes; and whole-run token agreement with
    none. Random weights are not a trained model: see the README for what this can tell."""
    models = fixture_models(fixtures)
    models += [(MODELS[name]["label"], path) for name, path in paths.items()]
    out = []
    for label, path in models:
        dream = "dream" in os.path.basename(path)
        try:
            none = divergence_once(dllm, path, threads, "none", dream)
            for mode in ("prefix", "dual"):
                r = divergence_once(dllm, path, threads, mode, dream)
                same = sum(a == b for a, b in zip(r["tokens"], none["tokens"]))
                r["token_agreement_with_none"] = same / max(len(r["tokens"]),
                                                            len(none["tokens"]), 1)
                r["model"] = label
                del r["tokens"]
                out.append(r)
        except RunError as e:
            out.append({"model": label, "error": str(e)})
    return out


def fixture_models(fixtures):
    """(name, path) of the fixture models of the four architectures, sorted."""
    models = []
    if fixtures and os.path.isdir(os.path.join(fixtures, "models")):
        for fn in sorted(os.listdir(os.path.join(fixtures, "models"))):
            if fn.endswith(".gguf") and fn.startswith(("llada-tiny", "dream-tiny",
                                                       "llada-moe-tiny", "rnd1-tiny")):
                models.append((fn[:-5], os.path.join(fixtures, "models", fn)))
    return models


def kv_f16_summary(runs):
    """One model's bench_kv_f16 runs summarised per window over the steps that read a stale
    cache (step 0 follows the refresh on an unchanged canvas: float32 is exact there). own =
    the mean over those steps of the float32 rows' mean relative L2 error against the exact
    pass; extra = the same for float16 minus own; direct = the mean error of the float16 rows
    against the float32 ones; rule_f16 = extra <= 0.1 own."""
    out = {}
    for window in ("dual", "prefix"):
        steps = [s[window] for r in runs for s in r["steps"] if s["step"] > 0]
        if not steps:
            continue
        own = statistics.mean(s["f32"]["rel_l2_mean"] for s in steps)
        f16 = statistics.mean(s["f16"]["rel_l2_mean"] for s in steps)
        direct = statistics.mean(s["f16_vs_f32"]["rel_l2_mean"] for s in steps)
        out[window] = {
            "steps": len(steps), "own": own, "f16": f16, "extra": f16 - own,
            "extra_share": (f16 - own) / own if own else None, "direct": direct,
            "direct_share": direct / own if own else None,
            "own_max": max(s["f32"]["rel_l2_max"] for s in steps),
            "f16_max": max(s["f16"]["rel_l2_max"] for s in steps),
            "direct_max": max(s["f16_vs_f32"]["rel_l2_max"] for s in steps),
            "rule_f16": f16 - own <= 0.1 * own,
            "step0_f16": statistics.mean(s[window]["f16"]["rel_l2_mean"] for r in runs
                                         for s in r["steps"] if s["step"] == 0),
        }
    return out


def part_kv_f16(bench, paths, threads, fixtures, synth_steps):
    """bench_kv_f16 on every case of the fixture models (a block of at most 32 after the
    prompt, 4 steps) and on the synth shapes (64 random prompt ids, canvas 192, block 32,
    synth_steps steps)."""
    out = []
    jobs = []
    for name, path in fixture_models(fixtures):
        with open(os.path.join(fixtures, "logits", name + ".cases.json")) as f:
            cases = json.load(f)
        jobs.append((name, [[bench, path, "--ids", ",".join(map(str, c["ids"])), "--prompt",
                             str(c["prompt_len"]), "--steps", "4"] for c in cases
                            if len(c["ids"]) - c["prompt_len"] >= 4]))
    for name, path in paths.items():
        jobs.append((MODELS[name]["label"], [[bench, path, "--prompt", "64", "--canvas", "192",
                                              "--steps", str(synth_steps)]]))
    for label, cmds in jobs:
        try:
            runs = [json.loads(run(cmd + ["--block", "32", "--threads", str(threads)])[0])
                    for cmd in cmds]
            out.append({"model": label, "cases": len(runs), **kv_f16_summary(runs),
                        "runs": runs})
        except RunError as e:
            out.append({"model": label, "error": str(e)})
    return out


def llama_diffusion(binary, path, arch, canvas, threads):
    """llama-diffusion-cli over a canvas of `canvas` tokens: its printed time per step, and
    each step's time from the timestamps (M.SS.mmm.uuu) of its progress lines."""
    cmd = [binary, "-m", path, "-p", "Hi", "-ub", str(canvas), "-b", str(canvas), "-c",
           str(canvas), "-t", str(threads), "-tb", str(threads), "--temp", "0", "--load-mode",
           "none",
           "--diffusion-steps", "5"]
    # LLaDA's blocks (5 of 32 at canvas 160, one step each), Dream's timestep schedule.
    cmd += (["--diffusion-block-length", "32"] if arch in ("llada", "llada-moe")
            else ["--diffusion-eps", "0.001"])
    cpu = {}
    out, err, wall = run(cmd, cpu=cpu)
    m = re.search(r"time per step: ([0-9.]+)ms, sampling time per step: ([0-9.]+)ms", out + err)
    if not m:
        raise RunError("no 'time per step' in llama-diffusion-cli's output")
    stamps = [60e3 * int(a) + 1e3 * int(b) + int(c) + int(d) / 1e3 for a, b, c, d in
              re.findall(r"(\d+)\.(\d+)\.(\d+)\.(\d+) I \s*(?:diffusion step: \d+/\d+|$)",
                         err, re.M)]
    stamps = stamps[:6]  # the 5 steps' starts, then the end of the last
    steps = [b - a for a, b in zip(stamps, stamps[1:])]
    return {"ms_per_step": float(m.group(1)), "sampling_ms_per_step": float(m.group(2)),
            "step_ms": steps if len(steps) == 5 else None, "process_cpu_s": cpu["s"],
            "wall_s": wall}


def llama_bench(binary, path, canvas, threads, extra=()):
    """llama-bench -p canvas -n 0 (and the extra arguments): the mean time of a causal prefill
    of that many tokens."""
    out, _, _ = run([binary, "-m", path, "-p", str(canvas), "-n", "0", "-t", str(threads), "-r",
                     "2", "-o", "json"] + list(extra))
    rows = json.loads(out)
    return {"ms": rows[0]["avg_ns"] / 1e6, "samples_ms": [s / 1e6 for s in rows[0]["samples_ns"]],
            "build_commit": rows[0].get("build_commit")}


# The autoregressive architecture each diffusion architecture's tensors and keys match, named
# with as many letters, so that a copy is renamed in place.
AR_ARCH = {"llada": "llama", "dream": "qwen2"}


def gguf_header_bytes(path):
    """The length of a GGUF v3 file's metadata and tensor infos (GGUF's layout: counts, then
    key, type, value per entry; name, dims, type, offset per tensor)."""
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    with open(path, "rb") as f:
        def take(fmt):
            return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))[0]

        def skip_value(t):
            if t == 8:
                f.seek(take("Q"), 1)
            elif t == 9:
                et, n = take("I"), take("Q")
                if et in sizes:
                    f.seek(sizes[et] * n, 1)
                else:
                    for _ in range(n):
                        skip_value(et)
            else:
                f.seek(sizes[t], 1)

        if f.read(4) != b"GGUF" or take("I") != 3:
            raise RunError("%s: not a GGUF v3 file" % path)
        n_tensors, n_kv = take("Q"), take("Q")
        for _ in range(n_kv):
            f.seek(take("Q"), 1)
            skip_value(take("I"))
        for _ in range(n_tensors):
            f.seek(take("Q"), 1)
            f.seek(8 * take("I") + 4 + 8, 1)
        return f.tell()


def ar_arch_copy(path, arch):
    """A copy of a synth file (once, beside it) that llama.cpp forks without the diffusion
    architectures load: general.architecture and the "<arch>." key prefixes renamed to AR_ARCH's
    name of the same length, and LLaDA's pre-tokenizer name 'llada-moe' to 'llama-bpe'. The
    tensors are the same bytes."""
    ar = AR_ARCH[arch]
    out = path.replace(".gguf", "-as-%s.gguf" % ar)
    if os.path.exists(out):
        return out
    with open(path, "rb") as f:
        head = bytearray(f.read(gguf_header_bytes(path)))  # metadata and tensor infos
    key = b"general.architecture"
    i = head.find(key + (8).to_bytes(4, "little") + len(arch).to_bytes(8, "little") + arch.encode())
    if i < 0:
        raise RunError("%s: no general.architecture %s" % (path, arch))
    end = i + len(key) + 12 + len(arch)
    head[end - len(arch):end] = ar.encode()
    head = head.replace(arch.encode() + b".", ar.encode() + b".").replace(b"llada-moe",
                                                                          b"llama-bpe")
    tmp = out + ".part"
    with open(path, "rb") as src, open(tmp, "wb") as dst:
        dst.write(head)
        src.seek(len(head))
        while True:
            chunk = src.read(1 << 24)
            if not chunk:
                break
            dst.write(chunk)
    os.replace(tmp, out)
    return out


def part_compare(dllm, llama_dir, ik_dir, ik_args, paths, threads, rounds, canvas):
    diff_cli = os.path.join(llama_dir, "llama-diffusion-cli") if llama_dir else ""
    lbench = os.path.join(llama_dir, "llama-bench") if llama_dir else ""
    ik_bench = os.path.join(ik_dir, "llama-bench") if ik_dir else None
    out = []
    for name, path in paths.items():
        rec = {"model": name, "canvas": canvas, "threads": threads, "dllm_ms": [],
               "llama_diffusion_ms_per_step": [], "llama_bench_prefill_ms": [],
               "ik_bench_prefill_ms": []}
        try:
            ik = (ik_bench, ar_arch_copy(path, MODELS[name]["arch"]), ik_args) if ik_bench else None
            compare_rounds(rec, dllm, diff_cli, lbench, ik, name, path, threads, rounds, canvas)
        except RunError as e:
            rec["error"] = str(e)
        out.append(rec)
    return out


def compare_rounds(rec, dllm, diff_cli, lbench, ik, name, path, threads, rounds, canvas):
    """Fills rec with the alternating runs of one model and the speedups; ik is
    (ik_llama.cpp's llama-bench, the renamed copy of path, its extra arguments) or None."""
    for _ in range(rounds):
        d = dllm_bench(dllm, path, canvas, canvas, 2, threads)
        rec["dllm_ms"].append(d["median_ms"])
        rec["dllm_kernel"] = d["kernel"]
        rec["dllm_min_ms"] = min(d["pass_ms"] + [rec.get("dllm_min_ms", 1e30)])
        if os.access(diff_cli, os.X_OK):
            ld = llama_diffusion(diff_cli, path, MODELS[name]["arch"], canvas, threads)
            rec["llama_diffusion_ms_per_step"].append(ld["ms_per_step"])
            rec.setdefault("llama_diffusion_runs", []).append(ld)
        if os.access(lbench, os.X_OK):
            b = llama_bench(lbench, path, canvas, threads)
            rec["llama_bench_prefill_ms"].append(b["ms"])
            rec["llama_cpp_commit"] = b["build_commit"]
        if ik:
            b = llama_bench(ik[0], ik[1], canvas, threads, ik[2])
            rec["ik_bench_prefill_ms"].append(b["ms"])
            rec["ik_llama_commit"] = b["build_commit"]
            rec["ik_args"] = ik[2]
    dm = statistics.median(rec["dllm_ms"])
    rec["dllm_median_ms"] = dm
    if rec["llama_diffusion_ms_per_step"]:
        lm = statistics.median(rec["llama_diffusion_ms_per_step"])
        rec["llama_diffusion_median_ms"] = lm
        rec["speedup_vs_diffusion_cli"] = lm / dm
        # The least disturbed figures of each side, for a machine others are using too.
        steps = [t for r in rec["llama_diffusion_runs"] for t in r["step_ms"] or []]
        if steps:
            rec["llama_diffusion_min_step_ms"] = min(steps)
            rec["speedup_min_vs_min"] = min(steps) / rec["dllm_min_ms"]
    if rec["llama_bench_prefill_ms"]:
        pm = statistics.median(rec["llama_bench_prefill_ms"])
        rec["llama_bench_median_ms"] = pm
        rec["speedup_vs_llama_bench"] = pm / dm
    if rec["ik_bench_prefill_ms"]:
        pm = statistics.median(rec["ik_bench_prefill_ms"])
        rec["ik_bench_median_ms"] = pm
        rec["speedup_vs_ik_bench"] = pm / dm


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dllm", help="the dllm program (default: build*/src/dllm of this checkout)")
    ap.add_argument("--bench-gemm", help="bench_gemm (default: bench/bench_gemm of dllm's build)")
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/dllm-bench"),
                    help="where the synth models are kept (default ~/.cache/dllm-bench)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"),
                    help="folder of the result files (default bench/results)")
    ap.add_argument("--parts", default="gemm,forward,generate",
                    help="comma-separated: gemm, forward, generate, sampling, cache, divergence, "
                         "kvf16, moe, compare")
    ap.add_argument("--models", default="llada,dream",
                    help="comma-separated: llada, dream, llada-moe, rnd1, llada-q3km, "
                         "llada-q2k (forward and phases); '' (divergence: the "
                         "fixture models only)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3, help="timed passes per figure (default 3)")
    ap.add_argument("--threshold-tokens", type=int, default=128,
                    help="tokens of the --threshold 0.9 runs (default 128; random weights "
                         "commit one a step, so 32 takes a quarter of the time)")
    ap.add_argument("--llama-cpp", help="folder with llama-diffusion-cli and llama-bench")
    ap.add_argument("--ik-llama", help="folder with ik_llama.cpp's llama-bench (compare)")
    ap.add_argument("--ik-rtr", action="store_true",
                    help="run ik_llama.cpp's llama-bench with -rtr 1 (its run-time repack)")
    ap.add_argument("--rounds", type=int, default=2,
                    help="alternating rounds for compare, cache, moe and phases (default 2)")
    ap.add_argument("--compare-canvas", type=int, default=160)
    ap.add_argument("--forward-canvas", default="160,512",
                    help="the canvases of the forward part (default 160,512)")
    ap.add_argument("--kvf16-steps", type=int, default=4,
                    help="steps of the kvf16 part on the synth shapes (default 4; the fixture "
                         "cases take 4)")
    ap.add_argument("--sampling-steps", type=int, default=4,
                    help="steps timed per run of the sampling part (default 4)")
    ap.add_argument("--sampling-canvas", default="160,512",
                    help="the canvases of the sampling part (default 160,512)")
    ap.add_argument("--note", help="a remark stored with the results")
    a = ap.parse_args()
    parts = a.parts.split(",")
    names = [n for n in a.models.split(",") if n]
    if set(parts) - {"gemm", "forward", "phases", "generate", "sampling", "cache", "divergence",
                     "kvf16", "moe", "compare"} or \
            set(names) - set(MODELS):
        ap.error("unknown part or model")
    if "compare" in parts and not (a.llama_cpp or a.ik_llama):
        ap.error("compare needs --llama-cpp DIR, --ik-llama DIR or both")
    if a.ik_rtr and not a.ik_llama:
        ap.error("--ik-rtr needs --ik-llama DIR")
    dllm = find_program(a.dllm, ["build/src/dllm", "build-bench/src/dllm"])
    build = os.path.dirname(os.path.dirname(dllm))

    res = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "machine": machine(), "threads": a.threads, "loadavg_start": loadavg(),
           "dllm_version": run([dllm, "--version"])[0].strip(), **commit_of(dllm)}
    if a.note:
        res["note"] = a.note
    res["method"] = {
        "gemm": "bench_gemm: y = x . W^T with the activation conversion, random valid blocks, "
                "median of --reps after a warm-up; gops = 2 N K L / time; int8 peak from a "
                "register-only VPDPBUSD loop",
        "forward": "dllm bench: canvas of L tokens (L-128 prompt ids, 128 masks), logits for the "
                   "last 32 rows, median of --reps passes; gops = 2 x (block weights x L + "
                   "output weights x 32) / median",
        "generate": "dllm run --json --trace, prompt '%s' through the chat template, 128 tokens, "
                    "32 steps, block 32, early stop on (--threshold-tokens for the threshold "
                    "runs); ms per step = total / steps; tokens/s = "
                    "tokens / total; sampling share = sum sample_ms / sum (forward_ms + "
                    "sample_ms) from the trace" % PROMPT,
        "sampling": "dllm run --no-chat --trace, a prompt of L-128 tokens (' a' repeated), 128 "
                    "tokens, no early stop, the model's default steps; the first %d steps, "
                    "then SIGINT; sample share = sum sample_ms / sum (forward_ms + sample_ms); "
                    "bookkeeping = (elapsed_ms of the last step - sum forward_ms) / elapsed_ms"
                    % a.sampling_steps,
        "cache": "dllm run --json --cache MODE, prompt '%s' through the chat template, 128 "
                 "tokens, 32 steps, block 32, no early stop; none, prefix and dual alternate "
                 "per round; the figure is the sum of step_ms, median over rounds; speedup = "
                 "none's / the mode's; row_bound = positions none computes / positions the "
                 "mode computes (summed step_computed), the speed-up if time followed GEMM rows; "
                 "token agreement = share of answer tokens equal to none's of the same round; "
                 "threshold runs once each, over --threshold-tokens tokens" % PROMPT,
        "divergence": "dllm run --cache MODE --cache-check, the cache protocol: at each step that "
                      "read the cache, the cached candidate rows against an exact pass over the "
                      "same canvas (cosine, relative L2 error |cached - exact| / |exact|, "
                      "argmax agreement over all checked rows); token agreement = share of "
                      "answer tokens equal to none's",
        "kvf16": "bench_kv_f16: one block after the prompt, refreshed, then committed over 4 "
                 "steps (the synth shapes: %d) (left to right, the exact pass's argmax); at each step the candidate "
                 "rows of the exact pass against a cached step (dual and prefix windows) reading "
                 "the refresh's K/V as float32 and rounded to float16; relative L2 error "
                 "|cached - exact| / |exact| per row; summaries over the steps after the first"
                 % a.kvf16_steps,
        "moe": "dllm bench --canvas 160 --rows 32 --reps N on the LLaDA-MoE-7B-A1B and "
               "LLaDA-8B synth files (Q4_K_M, random weights and routers), alternating per "
               "round; ratio = median over rounds of the MoE pass / the dense pass (target at "
               "most 1/3); GOPS counts the 8 experts a token uses; bench_gemm of one expert's "
               "gate/up (1024 x 2048) and down (2048 x 1024) at 20 rows",
        "compare": "runs alternate per round: dllm bench with logits for all L rows (the work "
                   "llama.cpp does), llama-diffusion-cli -ub/-b/-c L --load-mode none (weights "
                   "read at load, not paged in during the steps), 5 steps: its time per step "
                   "(one non-causal pass and its sampling) and each step's time from the "
                   "timestamps of its progress lines; llama-bench -p L -n 0 -r 2 (a causal "
                   "prefill, as a proxy); with --ik-llama, ik_llama.cpp's llama-bench the same way "
                   "on a copy of the file renamed to llama/qwen2 (with ik_args: -rtr 1 repacks its "
                   "weights at load); medians over rounds; speedup = their ms / dllm ms",
    }
    os.makedirs(a.out, exist_ok=True)
    stamp = res["date"][:16].replace(":", "")  # 2026-11-30T0243: one file per run
    out = os.path.join(a.out, "%s-%s-%s.json" % (stamp, res["commit"], "-".join(parts)))

    def save():
        """Writes what was measured so far: a later part's failure loses nothing."""
        res["loadavg_end"] = loadavg()
        with open(out, "w") as f:
            json.dump(res, f, indent=2)
            f.write("\n")

    paths = synth_models(dllm, a.cache, names) if set(parts) - {"gemm", "moe"} else {}
    bg = os.path.abspath(a.bench_gemm or os.path.join(build, "bench", "bench_gemm"))
    if "gemm" in parts:
        try:
            res["gemm"] = part_gemm(bg, [n for n in names if n in GEMM_SHAPES], a.threads,
                                    a.reps, best_probe(a.out, res["machine"], a.threads))
        except RunError as e:
            res["gemm_error"] = str(e)
        mca = mix_bound.find_mca(None)
        try:
            res["gemm_mix_bound"] = mix_bound.measure(build, mca) if mca else \
                {"skipped": "no llvm-mca (Debian's llvm-19 has one)"}
        except (RuntimeError, subprocess.CalledProcessError) as e:
            res["gemm_mix_bound"] = {"error": str(e)}
        res["gemm_ports"] = part_ports(os.path.join(build, "bench", "bench_ports"))
        save()
    if "gemm" not in parts and {"forward", "phases"} & set(parts):
        try:
            res["probe_gops"] = probe(bg, a.threads)
            best = best_probe(a.out, res["machine"], a.threads)
            if best and res["probe_gops"] < 0.9 * best:
                log("the int8 probe read %.0f GOPS, below 90%% of the best on this CPU (%.0f): "
                    "the machine is busy or throttled, and bench/table.py will pass over this "
                    "run's forward and phases figures" % (res["probe_gops"], best))
        except RunError as e:
            res["probe_error"] = str(e)
    peak = int8_peak(res.get("gemm"), a.threads) or latest_peak(a.out, res["machine"], a.threads)
    res["int8_peak_gops"] = peak
    if "phases" in parts:
        res["phases"] = part_phases(dllm, bg, a.threads, paths, a.reps, a.rounds)
        save()
    if "forward" in parts:
        res["forward"] = part_forward(dllm, bg, paths, a.threads, a.reps, peak,
                                      [int(c) for c in a.forward_canvas.split(",")])
        res["load_cold"] = part_load_cold(dllm, paths, a.threads)
        save()
    if "generate" in parts:
        res["generate"] = part_generate(dllm, paths, a.threads, a.threshold_tokens)
        save()
    if "sampling" in parts:
        res["sampling"] = part_sampling(dllm, paths, a.threads, a.sampling_steps,
                                        [int(c) for c in a.sampling_canvas.split(",")])
        save()
    if "cache" in parts:
        res["cache"] = part_cache(dllm, paths, a.threads, a.rounds, a.threshold_tokens)
        save()
    if "divergence" in parts:
        res["divergence"] = part_divergence(dllm, paths, a.threads, os.environ.get(
            "DLLM_FIXTURES", os.path.join(HERE, "..", "..", "shared", "fixtures")))
        save()
    if "kvf16" in parts:
        res["kvf16"] = part_kv_f16(os.path.join(build, "bench", "bench_kv_f16"), paths,
                                   a.threads, os.environ.get(
                                       "DLLM_FIXTURES",
                                       os.path.join(HERE, "..", "..", "shared", "fixtures")),
                                   a.kvf16_steps)
        save()
    if "moe" in parts:
        bg = os.path.abspath(a.bench_gemm or os.path.join(build, "bench", "bench_gemm"))
        try:
            res["moe"] = part_moe(dllm, bg, synth_models(dllm, a.cache, ["llada-moe", "llada"]),
                                  a.threads, a.rounds, a.reps)
        except RunError as e:
            res["moe"] = {"error": str(e)}
        save()
    if "compare" in parts:
        ik_args = ["-rtr", "1"] if a.ik_rtr else []
        res["compare"] = part_compare(dllm, a.llama_cpp, a.ik_llama, ik_args, paths, a.threads,
                                      a.rounds, a.compare_canvas)
        save()
    log("wrote " + out)


def latest_peak(folder, cpu, threads):
    """The int8 peak of the newest result file that measured one on this CPU, for the forward
    part."""
    return max(recorded_peaks(folder, cpu, threads), default=(None, None))[1]


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""One entry of tests/gpu/run.sh's bench stage, added to its result document.

usage: bench_doc.py --entries FILE --device gpu|cpu --bundle DIR --out OUT.json
                    --arch A --preset P --mode default|resident --model FILE --canvas N
                    [--run RUN.json] [--trace TRACE.jsonl] [--bench BENCH.json]
                    [--mem MEM.txt] [--idle MIB] [--error TEXT]

The entry (a model, a mode, a canvas) is made from what the stage's programs left: the median
step_ms after the first of `dllm run --json` (RUN.json) and its canvas (prompt tokens plus
max_tokens), with the medians of the same steps' forward_ms and sample_ms from its --trace
(TRACE.jsonl: where a step's time goes beside the pass `dllm bench` times), the `dllm bench
--json` document (BENCH.json), the GPU memory nvidia-smi sampled during the bench (MEM.txt, one
MiB figure a line: its peak) and before it (--idle). What is missing or unreadable is null, and
a bench document that is not there names the failure, so that one failure neither stops the
stage nor spoils the document. The entry is appended to FILE (one JSON object a line) and the
document rewritten whole (through a temporary file beside it, so that a stage cut short leaves
the last whole document): the date, the commit the bundle was built from (BUNDLE/commit, written
by prepare.sh), the GPU's name, driver and memory (nvidia-smi; device gpu) with the host as
bench/run.py describes it, and the entries so far. Copied into bench/results/ as
DATE-COMMIT-gpu.json, its "gpu" section becomes the README's GPU table (bench/table.py).
"""
import argparse, datetime, json, os, statistics, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import run  # bench/run.py: machine(), the host's description every result file carries


def load_json(path):
    """The JSON document at path, or None where there is none."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def median_after_first(values):
    """The median of a step's figures after the first step (the warm-up), or None."""
    return statistics.median(values[1:]) if len(values) > 1 else None


def median_step(run):
    """The median step_ms of a dllm run document after its first step."""
    return median_after_first((run or {}).get("step_ms") or [])


def run_canvas(run):
    """The canvas of a dllm run document: its prompt's tokens and the tokens it generates."""
    try:
        return run["prompt_tokens"] + run["settings"]["max_tokens"]
    except (TypeError, KeyError):
        return None


def median_traced(path, key):
    """The median of key over the steps after the first in a dllm run --trace file, or None."""
    try:
        with open(path) as f:
            return median_after_first([json.loads(line)[key] for line in f if line.strip()])
    except (OSError, ValueError, KeyError):
        return None


def peak_mib(path):
    """The highest whole number of the lines of path (nvidia-smi's samples), or None."""
    try:
        with open(path) as f:
            values = [int(line) for line in f if line.strip().isdigit()]
    except OSError:
        return None
    return max(values) if values else None


def gpu_facts():
    """The first GPU's name, driver version and memory in MiB, as nvidia-smi reports them."""
    try:
        out = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=name,driver_version,"
                              "memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30).stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    fields = [f.strip() for f in out[0].split(",")] if out else []
    if len(fields) != 3:
        return {}
    return {"gpu": fields[0], "driver": fields[1],
            "gpu_memory_mib": int(fields[2]) if fields[2].isdigit() else None}


def commit(bundle):
    """The bundle's commit and whether its tree had uncommitted changes."""
    try:
        with open(os.path.join(bundle, "commit")) as f:
            words = f.read().split()
    except OSError:
        words = []
    return {"commit": words[0] if words else "unknown", "dirty": "dirty" in words[1:]}


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1])
    for name in ("entries", "device", "bundle", "out", "arch", "preset", "mode", "model"):
        ap.add_argument("--" + name, required=True)
    ap.add_argument("--canvas", type=int, required=True)
    ap.add_argument("--run")
    ap.add_argument("--trace")
    ap.add_argument("--bench")
    ap.add_argument("--mem")
    ap.add_argument("--idle")
    ap.add_argument("--error")
    a = ap.parse_args()
    bench = load_json(a.bench) if a.bench else None
    run_doc = load_json(a.run) if a.run else None
    error = a.error or (None if bench or not a.bench else "dllm bench failed")
    entry = {"arch": a.arch, "preset": a.preset, "mode": a.mode, "device": a.device,
             "file_bytes": os.path.getsize(a.model) if os.path.isfile(a.model) else None,
             "step_ms": median_step(run_doc), "step_canvas": run_canvas(run_doc),
             "forward_ms": median_traced(a.trace, "forward_ms") if a.trace else None,
             "sample_ms": median_traced(a.trace, "sample_ms") if a.trace else None,
             "canvas": a.canvas, "bench": bench,
             "gpu_peak_mib": peak_mib(a.mem) if a.mem else None,
             "gpu_idle_mib": int(a.idle) if (a.idle or "").isdigit() else None, "error": error}
    with open(a.entries, "a") as f:
        f.write(json.dumps(entry) + "\n")
    with open(a.entries) as f:
        entries = [json.loads(line) for line in f if line.strip()]
    machine = run.machine()
    if a.device == "gpu":
        machine.update(gpu_facts())
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           **commit(a.bundle), "device": a.device, "machine": machine, "gpu": entries}
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the result document of tests/gpu/run.sh's bench stage from its entries so far.

usage: bench_doc.py ENTRIES DEVICE BUNDLE OUT.json

ENTRIES holds JSON objects one after another (a model, a mode, a canvas: see run.sh). The document
adds what bench/table.py needs to name where the figures come from: the date, the commit the
bundle was built from (BUNDLE/commit, written by prepare.sh), the GPU's name, driver and
memory (nvidia-smi; DEVICE gpu) and the CPU. Copied into bench/results/ as
DATE-COMMIT-gpu.json, its "gpu" section becomes the README's GPU table. run.sh calls this
after every entry, so that a stage cut short by its time limit still brings back what it
measured.
"""
import datetime, json, os, subprocess, sys


def gpu_facts():
    """The first GPU's name, driver version and memory in MiB, as nvidia-smi reports them."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=30).stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    fields = [f.strip() for f in out[0].split(",")] if out else []
    if len(fields) != 3:
        return {}
    return {"gpu": fields[0], "driver": fields[1],
            "gpu_memory_mib": int(fields[2]) if fields[2].isdigit() else None}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def commit(bundle):
    """The bundle's commit and whether its tree had uncommitted changes."""
    try:
        with open(os.path.join(bundle, "commit")) as f:
            words = f.read().split()
    except OSError:
        words = []
    return {"commit": words[0] if words else "unknown", "dirty": "dirty" in words[1:]}


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__.strip().splitlines()[2])
    entries_path, device, bundle, out = sys.argv[1:]
    with open(entries_path) as f:
        text = f.read()
    entries, at, decoder = [], 0, json.JSONDecoder()
    while text[at:].strip():
        entry, end = decoder.raw_decode(text, at + len(text[at:]) - len(text[at:].lstrip()))
        entries.append(entry)
        at = end
    machine = {"cpu": cpu_name(), "cores": os.cpu_count()}
    if device == "gpu":
        machine.update(gpu_facts())
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           **commit(bundle), "device": device, "machine": machine, "gpu": entries}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

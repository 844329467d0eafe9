#!/usr/bin/env python3
"""Every fixture model's forward pass on a device against the float64 reference logits.

usage: logits_check.py DLLM FIXTURES DEVICE OUT.json

For each case of FIXTURES/logits/*.cases.json (the realvocab model excepted: it is not in the
GPU bundle) runs `DLLM logits --device DEVICE` over the case's ids, for all rows and for the
odd rows alone (a pass then computes its last layer for those rows only), and holds every
row to tests/test_forward.c's bar: relative error at most llama.cpp's worst row + 5%, the
median (of all rows) at most llama.cpp's + 5%, 1 - cosine at most llama.cpp's worst x
1.05^2. On a GPU a mixture-of-experts model must be refused (exit 1, naming --device cpu).
Writes the figures to OUT.json; exits 1 when a case fails. DLLM_LIBS, when set, is put first
on DLLM's LD_LIBRARY_PATH (the bundle's libraries, for dllm alone).
"""
import json, math, os, struct, subprocess, sys, tempfile

MARGIN = 1.05


def row_error(a, b):
    """Row a against the reference row b: their cosine and the relative error |a - b| / |b|;
    a row of zeros or with a NaN as far from b as can be (0 and infinity), not a crash."""
    ab = aa = bb = dd = 0.0
    for x, y in zip(a, b):
        ab += x * y
        aa += x * x
        bb += y * y
        dd += (x - y) * (x - y)
    if not (aa * bb > 0 and math.isfinite(aa + dd)):
        return 0.0, math.inf
    return ab / math.sqrt(aa * bb), math.sqrt(dd / bb)


def read_rows(path, n, v):
    data = open(path, "rb").read()
    assert len(data) == 4 * n * v, "%s: %d bytes, want %d" % (path, len(data), 4 * n * v)
    return [struct.unpack_from("<%df" % v, data, 4 * v * r) for r in range(n)]


def dllm_env():
    """The environment to run DLLM in: DLLM_LIBS first on LD_LIBRARY_PATH, when set."""
    env = dict(os.environ)
    if env.get("DLLM_LIBS"):
        env["LD_LIBRARY_PATH"] = env["DLLM_LIBS"] + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def check_case(dllm, fix, device, env, case, rows):
    """One case's run over the positions rows (None: all of them), held to the bar."""
    model = os.path.join(fix, "models", case["model"] if case["model"].endswith(".gguf")
                         else case["model"] + ".gguf")
    n, v = case["n_tokens"], case["n_vocab"]
    picked = list(range(n)) if rows is None else rows
    with tempfile.NamedTemporaryFile(suffix=".f32") as tmp:
        p = subprocess.run([dllm, "logits", "-m", model, "--tokens",
                            ",".join(map(str, case["ids"])), "--rows",
                            "all" if rows is None else ",".join(map(str, rows)),
                            "--out", tmp.name, "--device", device],
                           capture_output=True, text=True, env=env)
        moe = "moe" in case["name"] or "rnd1" in case["name"]
        r = {"case": case["name"] + ("" if rows is None else " (odd rows)"), "device": device,
             "exit": p.returncode}
        if device != "cpu" and moe:
            r["ok"] = (p.returncode == 1 and "mixture-of-experts" in p.stderr
                       and "use --device cpu" in p.stderr)
            r["note"] = "MoE refused on the GPU: " + p.stderr.strip()
        elif p.returncode != 0:
            r["ok"], r["note"] = False, p.stderr.strip()
        else:
            got = read_rows(tmp.name, len(picked), v)
            ref = read_rows(os.path.join(fix, "logits", case["name"] + ".f64ref.f32"), n, v)
            errs = [row_error(a, ref[i]) for a, i in zip(got, picked)]
            rel = sorted(e[1] for e in errs)
            k = len(rel)
            med = rel[k // 2] if k % 2 else 0.5 * (rel[k // 2 - 1] + rel[k // 2])
            bar = case["llamacpp_vs_f64"]
            r.update(cos_min=min(e[0] for e in errs), rel_max=rel[-1], rel_median=med,
                     llamacpp=bar)
            # a subset's median is no bar's: its rows are held to the worst-row bars alone
            r["ok"] = (rel[-1] <= MARGIN * bar["rel_max"] and
                       (rows is not None or med <= MARGIN * bar["rel_median"]) and
                       1 - r["cos_min"] <= MARGIN * MARGIN * (1 - bar["cos_min"]))
    return r


def main():
    dllm, fix, device, out = sys.argv[1:5]
    env = dllm_env()
    results, failed = [], 0
    for name in sorted(os.listdir(os.path.join(fix, "logits"))):
        if not name.endswith(".cases.json") or "realvocab" in name:
            continue
        for case in json.load(open(os.path.join(fix, "logits", name))):
            moe = "moe" in case["name"] or "rnd1" in case["name"]
            odd = list(range(1, case["n_tokens"], 2))
            for rows in [None] if device != "cpu" and moe else [None, odd]:
                r = check_case(dllm, fix, device, env, case, rows)
                failed += not r["ok"]
                results.append(r)
                print("%-4s %-44s %s" % ("ok" if r["ok"] else "FAIL", r["case"],
                      r.get("note") or "cos_min %.7f rel_max %.5f rel_median %.5f "
                      "(llama.cpp %.5f)" % (r["cos_min"], r["rel_max"], r["rel_median"],
                                            r["llamacpp"]["rel_max"])), flush=True)
    json.dump({"device": device, "cases": results, "failed": failed}, open(out, "w"), indent=2)
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main())

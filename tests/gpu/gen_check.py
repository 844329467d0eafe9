#!/usr/bin/env python3
"""Generation on a device, teacher-forced against the CPU's run step by step.

usage: gen_check.py DLLM FIXTURES DEVICE OUT.json

For a tiny LLaDA and a tiny Dream model in F16 (`DLLM synth --preset tiny --type F16`, made
in a temporary folder), `DLLM run --device cpu --trace` generates 16 tokens in 8 steps at
temperature 0 (LLaDA in one block with low_confidence remasking, Dream with --alg
maskgit_plus), and each step's canvas (the prompt, the tokens committed before that step,
masks) is replayed: `DLLM logits` over it on the CPU and on DEVICE gives each masked
position's confidence (the largest softmax probability of its logits row; Dream's row p - 1
predicts position p) and token (that row's argmax). The CPU replay must commit what the run
committed (the quota highest confidences, the quota being what the run committed then). A
step is comparable when the CPU confidence gap at the quota boundary is at least 4x the
largest |DEVICE - CPU| confidence difference over the masked rows; a comparable step must
commit the same positions and tokens on DEVICE, and at least 80% of the steps must be
comparable. F16 weights because random weights give flat rows whose gaps are smaller than the
CPU's own rounding of quantized products (its int8 activations): with the Q4_K_M fixtures a
third of the steps or fewer are comparable. Writes the figures to OUT.json; exits 1 when a
model fails. DLLM_LIBS, when set, is put first on DLLM's LD_LIBRARY_PATH. FIXTURES is unused
(the models are made), kept so that both checks take the same arguments.
"""
import json, math, os, struct, subprocess, sys, tempfile

from logits_check import dllm_env

PROMPT = "The quick brown fox jumps over"
TOKENS, STEPS = 16, 8
# (architecture, its sampler's options, the shift from logits row to canvas position)
MODELS = [("llada", ["--block-length", str(TOKENS)], 0),
          ("dream", ["--alg", "maskgit_plus"], 1)]
GAP_FACTOR, MIN_COMPARABLE = 4.0, 0.8


ENV = dllm_env()


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd[:2]), p.returncode, p.stderr.strip()))
    return p.stdout


def metadata(dllm, model, key):
    doc = json.loads(run([dllm, "inspect", "--json", model]))
    return doc["metadata"][key]["value"]


def confidences(dllm, model, device, ids, masked, shift):
    """{position: (confidence, argmax)} of the masked positions over the canvas ids."""
    rows = [p - shift for p in masked]
    with tempfile.NamedTemporaryFile(suffix=".f32") as tmp:
        run([dllm, "logits", "-m", model, "--tokens", ",".join(map(str, ids)), "--rows",
             ",".join(map(str, rows)), "--out", tmp.name, "--device", device])
        data = open(tmp.name, "rb").read()
    v = len(data) // (4 * len(rows))
    out = {}
    for i, p in enumerate(masked):
        row = struct.unpack_from("<%df" % v, data, 4 * v * i)
        top = max(range(v), key=lambda t: (row[t], -t))
        s = sum(math.exp(x - row[top]) for x in row)
        out[p] = (1.0 / s, top)
    return out


def top(conf, quota):
    """The quota positions of highest confidence (the lower position first on a tie)."""
    order = sorted(conf, key=lambda p: (-conf[p][0], p))
    return order[:quota], order


def check_model(dllm, model, device, args, shift):
    mask = metadata(dllm, model, "tokenizer.ggml.mask_token_id")
    prompt = [int(t) for t in run([dllm, "tokenize", "-m", model, "--no-chat", "-p",
                                   PROMPT]).split()]
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as trace:
        doc = json.loads(run([dllm, "run", "-m", model, "--device", "cpu", "--no-chat", "-p",
                              PROMPT, "--max-tokens", str(TOKENS), "--steps", str(STEPS),
                              "--temperature", "0", "--no-early-stop", "--trace", trace.name,
                              "--json"] + args))
        steps = [json.loads(line) for line in open(trace.name) if line.strip()]
    assert doc["prompt_tokens"] == len(prompt), "the run's prompt is %d tokens, tokenize %d" % (
        doc["prompt_tokens"], len(prompt))
    ids = prompt + [mask] * TOKENS
    figures, comparable, failures = [], 0, []
    for st in steps:
        quota = len(st["committed"])
        masked = [p for p in range(len(prompt), len(ids)) if ids[p] == mask]
        cpu = confidences(dllm, model, "cpu", ids, masked, shift)
        dev = confidences(dllm, model, device, ids, masked, shift)
        want = sorted(c["pos"] for c in st["committed"])
        chosen, order = top(cpu, quota)
        if sorted(chosen) != want or any(cpu[c["pos"]][1] != c["token"] for c in st["committed"]):
            failures.append("step %d: the CPU replay commits %s, the run %s" % (
                st["step"], sorted(chosen), want))
        gap = cpu[order[quota - 1]][0] - cpu[order[quota]][0] if quota < len(order) else math.inf
        diff = max(abs(dev[p][0] - cpu[p][0]) for p in masked)
        ok_step = gap >= GAP_FACTOR * diff
        got, _ = top(dev, quota)
        same = sorted(got) == sorted(chosen) and all(dev[p][1] == cpu[p][1] for p in chosen)
        if ok_step:
            comparable += 1
            if not same:
                failures.append("step %d: %s commits %s, the CPU %s" % (
                    st["step"], device, sorted((p, dev[p][1]) for p in got),
                    sorted((p, cpu[p][1]) for p in chosen)))
        figures.append({"step": st["step"], "quota": quota, "gap": gap if gap != math.inf else None,
                        "max_conf_diff": diff, "comparable": ok_step, "same_commits": same})
        for c in st["committed"]:
            ids[c["pos"]] = c["token"]
    share = comparable / len(steps) if steps else 0.0
    if share < MIN_COMPARABLE:
        failures.append("%d of %d steps comparable, fewer than %d%%" % (
            comparable, len(steps), 100 * MIN_COMPARABLE))
    return {"model": os.path.basename(model), "device": device, "steps": figures,
            "comparable": share, "ok": not failures, "failures": failures}


def main():
    dllm, _fixtures, device, out = sys.argv[1:5]
    results = []
    tmp = tempfile.TemporaryDirectory()
    for arch, args, shift in MODELS:
        name = arch + "-tiny-f16.gguf"
        model = os.path.join(tmp.name, name)
        try:
            run([dllm, "synth", "--arch", arch, "--preset", "tiny", "--type", "F16", "--quiet",
                 "--out", model])
            r = check_model(dllm, model, device, args, shift)
        except (RuntimeError, AssertionError, KeyError, ValueError) as e:
            r = {"model": name, "device": device, "ok": False, "failures": [str(e)]}
        results.append(r)
        print("%-4s %-24s %s" % ("ok" if r["ok"] else "FAIL", name,
              "; ".join(r["failures"]) or "%d steps, %.0f%% comparable, the same commits" % (
                  len(r["steps"]), 100 * r["comparable"])), flush=True)
    failed = sum(not r["ok"] for r in results)
    json.dump({"device": device, "models": results, "failed": failed}, open(out, "w"), indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Paired evaluation: the same problems answered by `dllm run` under two sets of flags.

Each line of the data file is a JSON object {"id", "question", "answer"} (GSM8K's test split
has this shape once its lines are given ids). Every question goes to `dllm run --json` twice,
once with the flags of --a and once with those of --b (the two runs of a problem alternate),
with --flags added to both. The answer of a completion is the number after its last `#### `
when it has one, else its last number; the reference answer is read the same way, so GSM8K's
"... #### 72" gives 72. Numbers compare by value (commas and a trailing ".0" do not matter).

The two settings are compared problem by problem: the table of outcomes (both right, only A,
only B, neither), the difference in accuracy B - A with Newcombe's hybrid score interval for
paired proportions (method 10 of Newcombe 1998, Statistics in Medicine 17:2635-2650: the
Wilson score limits of the two accuracies combined with their estimated correlation), and
McNemar's exact two-sided test on the discordant problems (twice the smaller binomial tail
at p = 1/2). The result is written as JSON (--out, else stdout); progress goes to stderr.

  bench/eval.py --data gsm8k.jsonl -m MODEL --a "--cache none" --b "--cache dual" \
      --flags "--max-tokens 256 --steps 256 --block-length 32" --out result.json

Each run loads the model again (dllm run is one process per answer): with real weights,
budget that load beside the generation. Only python3's standard library is needed.
"""
import argparse
import json
import math
import os
import re
import shlex
import statistics
import subprocess
import sys
from decimal import Decimal, InvalidOperation
from fractions import Fraction

Z95 = statistics.NormalDist().inv_cdf(0.975)
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
MARK = "####"


def normalize(number):
    """A number's text without thousands separators, as its value prints: '1,000.0' -> '1000'."""
    try:
        d = Decimal(number.replace(",", ""))
    except InvalidOperation:
        return None
    if d == d.to_integral_value():
        return str(int(d))
    return format(d.normalize(), "f")


def extract_answer(text):
    """The first number after the last '####' of text, else its last number; None if none."""
    if MARK in text:
        found = NUMBER.findall(text.rsplit(MARK, 1)[1])
        if found:
            return normalize(found[0])
    found = NUMBER.findall(text)
    return normalize(found[-1]) if found else None


def wilson(x, n, z=Z95):
    """Wilson's score interval (no continuity correction) for x successes of n."""
    p = x / n
    centre = 2 * n * p + z * z
    half = z * math.sqrt(z * z + 4 * n * p * (1 - p))
    return (centre - half) / (2 * (n + z * z)), (centre + half) / (2 * (n + z * z))


def newcombe_paired(a, b, c, d, z=Z95):
    """Newcombe's method 10 for p1 - p2 of paired outcomes: a both, b first only, c second
    only, d neither. p1 = (a + b) / n and p2 = (a + c) / n have Wilson limits (l1, u1) and
    (l2, u2); phi is their correlation (ad - bc) / sqrt((a+b)(c+d)(a+c)(b+d)), 0 when that
    product is 0, with ad - bc replaced by max(ad - bc - n/2, 0) when ad > bc. Then
      lower = (p1 - p2) - sqrt((p1-l1)^2 - 2 phi (p1-l1)(u2-p2) + (u2-p2)^2)
      upper = (p1 - p2) + sqrt((u1-p1)^2 - 2 phi (u1-p1)(p2-l2) + (p2-l2)^2).
    Returns (p1 - p2, lower, upper)."""
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson(a + b, n, z)
    l2, u2 = wilson(a + c, n, z)
    prod = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    if cross > 0:
        cross = max(cross - n / 2, 0)
    phi = cross / math.sqrt(prod) if prod else 0.0
    lower = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    upper = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return p1 - p2, p1 - p2 - lower, p1 - p2 + upper


def mcnemar_exact(b, c):
    """McNemar's exact two-sided p for b and c discordant pairs: twice the binomial tail
    P(X <= min(b, c)) with X ~ Bin(b + c, 1/2), at most 1; 1 when there are none."""
    m = b + c
    if m == 0:
        return 1.0
    tail = Fraction(sum(math.comb(m, i) for i in range(min(b, c) + 1)), 2 ** m)
    return float(min(Fraction(1), 2 * tail))


def compare(outcomes):
    """The paired comparison of [(a_correct, b_correct), ...] as a JSON-ready dict."""
    both = sum(1 for x, y in outcomes if x and y)
    a_only = sum(1 for x, y in outcomes if x and not y)
    b_only = sum(1 for x, y in outcomes if y and not x)
    neither = len(outcomes) - both - a_only - b_only
    diff, lower, upper = newcombe_paired(both, b_only, a_only, neither)
    return {
        "n": len(outcomes),
        "table": {"both": both, "a_only": a_only, "b_only": b_only, "neither": neither},
        "accuracy_a": (both + a_only) / len(outcomes),
        "accuracy_b": (both + b_only) / len(outcomes),
        "difference_b_minus_a": diff,
        "ci95": [lower, upper],
        "ci_method": "Newcombe (1998) method 10, hybrid score interval for paired proportions",
        "mcnemar_exact_p": mcnemar_exact(a_only, b_only),
    }


def read_problems(path):
    """The problems of a JSONL file; exits 2 naming the line of a malformed one."""
    problems = []
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                p = json.loads(line)
                if not isinstance(p, dict) or not all(k in p for k in ("id", "question",
                                                                      "answer")):
                    raise ValueError("it needs the keys id, question and answer")
            except ValueError as e:
                sys.exit("eval.py: error: %s line %d: %s" % (path, no, e))
            problems.append(p)
    if not problems:
        sys.exit("eval.py: error: %s holds no problems" % path)
    return problems


def answer(dllm, model, flags, prompt):
    """The text and total_ms of one `dllm run --json` over prompt (given on stdin)."""
    cmd = [dllm, "run", "-p", "-", "--json"] + (["-m", model] if model else []) + flags
    r = subprocess.run(cmd, input=prompt, capture_output=True, text=True)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError("%s exited %d: %s" % (" ".join(map(shlex.quote, cmd)), r.returncode,
                                                last))
    doc = json.loads(r.stdout)
    return doc["text"], doc["total_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="JSONL file of {id, question, answer}")
    ap.add_argument("--a", required=True, help="flags of setting A, one string")
    ap.add_argument("--b", required=True, help="flags of setting B, one string")
    ap.add_argument("--flags", default="", help="flags both settings get")
    ap.add_argument("-m", "--model", help="the model, passed to dllm run as -m")
    ap.add_argument("--prompt", default="{question}",
                    help="the prompt, {question} replaced by the question (default: the question)")
    ap.add_argument("--limit", type=int, help="only the first N problems")
    ap.add_argument("--dllm", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   "..", "build", "src", "dllm"),
                    help="the dllm program (default: this checkout's build/src/dllm)")
    ap.add_argument("--out", help="the JSON result file (default: stdout)")
    a = ap.parse_args()
    if "{question}" not in a.prompt:
        ap.error("--prompt must contain {question}")
    problems = read_problems(a.data)[:a.limit]
    common = shlex.split(a.flags)
    settings = {"a": shlex.split(a.a) + common, "b": shlex.split(a.b) + common}
    rows, outcomes = [], []
    for i, p in enumerate(problems):
        expected = extract_answer(str(p["answer"]))
        row = {"id": p["id"], "expected": expected}
        prompt = a.prompt.replace("{question}", p["question"])
        for name in ("a", "b") if i % 2 == 0 else ("b", "a"):
            try:
                text, ms = answer(a.dllm, a.model, settings[name], prompt)
            except (OSError, RuntimeError, ValueError, KeyError) as e:
                sys.exit("eval.py: error: problem %s, setting %s: %s" % (p["id"], name, e))
            got = extract_answer(text)
            row[name] = {"answer": got, "correct": expected is not None and got == expected,
                         "total_ms": ms, "text": text}
        outcomes.append((row["a"]["correct"], row["b"]["correct"]))
        rows.append(row)
        print("eval: %d/%d %s: A %s, B %s" % (i + 1, len(problems), p["id"],
              "right" if row["a"]["correct"] else "wrong",
              "right" if row["b"]["correct"] else "wrong"), file=sys.stderr)
    result = {"data": a.data, "model": a.model, "a": settings["a"], "b": settings["b"],
              "prompt": a.prompt}
    result.update(compare(outcomes))
    result["problems"] = rows
    text = json.dumps(result, indent=2) + "\n"
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()

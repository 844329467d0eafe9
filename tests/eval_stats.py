#!/usr/bin/env python3
"""bench/eval.py's statistics and answer extraction, against values it did not compute.

Reference values:
- Newcombe's interval: R 4.2.2 (Debian r-base-core 4.2.2.20221110-2), the Wilson limits of each
  marginal from R's own prop.test(x, n, correct = FALSE)$conf.int, combined in R by the
  formula of Newcombe (1998) method 10 (phi with ad - bc replaced by max(ad - bc - n/2, 0)
  when ad > bc, as in biostatUZH's confIntPairedProportion); printed to 10 decimals.
  Tables are (a, b, c, d): both, first only, second only, neither; the difference is
  p1 - p2 = (b - c) / n.
- McNemar's exact p: R's binom.test(b, b + c, 0.5)$p.value, and by hand as
  2 * sum_{i <= min(b, c)} C(b + c, i) / 2^(b + c), at most 1 (the sums are written out).
"""
import importlib.util
import os
import sys

HERE = os.environ.get("DLLM_TESTS_SRC", os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("dllm_eval", os.path.join(HERE, "..", "bench",
                                                                        "eval.py"))
ev = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ev)

failed = 0


def check(name, ok, detail=""):
    global failed
    print(("ok: " if ok else "FAIL: ") + name + ("" if ok else ": " + detail))
    failed += 0 if ok else 1


# (a, b, c, d) -> Wilson limits of p1 and p2, difference, lower, upper, McNemar p (R 4.2.2).
R_CASES = [
    ((36, 12, 2, 0), (0.8653990931, 0.9889611157), (0.6258731624, 0.8570260860),
     0.2, 0.0569295840, 0.3404276030, 0.01293945313),
    ((59, 6, 16, 80), (0.3310367548, 0.4809037593), (0.3904806320, 0.5427885827),
     -0.0621118012, -0.1186211956, -0.0046251139, 0.05247879028),
    ((1, 1, 7, 12), (0.0265187674, 0.2891413907), (0.2075101137, 0.5912134622),
     -0.2857142857, -0.5069202267, -0.0255591242, 0.0703125),
    ((10, 3, 5, 2), (0.4328542767, 0.8188081759), (0.5312991224, 0.8881382986),
     -0.1, -0.3573605539, 0.1762721016, 0.7265625),
    ((40, 9, 1, 50), (0.3942199893, 0.5865198807), (0.3186731302, 0.5079856995),
     0.08, 0.0170959149, 0.1411466214, 0.021484375),
    ((5, 0, 0, 5), (0.2365930905, 0.7634069095), (0.2365930905, 0.7634069095),
     0.0, -0.1665931571, 0.1665931571, 1.0),
    ((0, 3, 1, 0), (0.3006418426, 0.9544127392), (0.0455872608, 0.6993581574),
     0.5, -0.3987163148, 0.9088254784, 0.625),
    ((21, 14, 2, 63), (0.2636424824, 0.4474555670), (0.1584326588, 0.3215438302),
     0.12, 0.0423400691, 0.1972488472, 0.004180908203),
]
TOL = 1e-9  # R printed 10 decimals (McNemar: 10 significant digits)
for (a, b, c, d), w1, w2, diff, lower, upper, p in R_CASES:
    n = a + b + c + d
    got_w1, got_w2 = ev.wilson(a + b, n), ev.wilson(a + c, n)
    check("wilson %s" % ((a, b, c, d),),
          all(abs(x - y) < TOL for x, y in zip(got_w1 + got_w2, w1 + w2)), "%s %s" % (got_w1, got_w2))
    got = ev.newcombe_paired(a, b, c, d)
    check("newcombe %s" % ((a, b, c, d),),
          all(abs(x - y) < TOL for x, y in zip(got, (diff, lower, upper))), str(got))
    check("mcnemar %s" % ((a, b, c, d),), abs(ev.mcnemar_exact(b, c) - p) < 1e-9 * p,
          str(ev.mcnemar_exact(b, c)))

# McNemar by hand: (b, c) -> 2 * sum_{i <= min} C(b + c, i) / 2^(b + c).
HAND = [
    ((12, 2), 2 * (1 + 14 + 91) / 2 ** 14),       # 212/16384
    ((1, 5), 2 * (1 + 6) / 2 ** 6),               # 14/64
    ((0, 6), 2 * 1 / 2 ** 6),                     # 2/64
    ((2, 8), 2 * (1 + 10 + 45) / 2 ** 10),        # 112/1024
    ((3, 3), 1.0),                                # the tail is past 1/2: capped at 1
    ((0, 0), 1.0),                                # no discordant pairs
]
for (b, c), p in HAND:
    check("mcnemar by hand (%d, %d)" % (b, c), ev.mcnemar_exact(b, c) == p,
          str(ev.mcnemar_exact(b, c)))
check("mcnemar is symmetric", ev.mcnemar_exact(2, 8) == ev.mcnemar_exact(8, 2))

# compare(): outcomes (A right, B right) -> the table and B - A (Newcombe's p1 is B's).
outcomes = [(True, True)] * 36 + [(False, True)] * 12 + [(True, False)] * 2
r = ev.compare(outcomes)
check("compare table", r["table"] == {"both": 36, "a_only": 2, "b_only": 12, "neither": 0},
      str(r["table"]))
check("compare B - A", abs(r["difference_b_minus_a"] - 0.2) < 1e-12
      and abs(r["ci95"][0] - 0.0569295840) < TOL and abs(r["ci95"][1] - 0.3404276030) < TOL,
      str(r))
check("compare accuracies", r["accuracy_a"] == 38 / 50 and r["accuracy_b"] == 48 / 50, str(r))

# Extraction on hand-written completions.
EXTRACT = [
    ("Natalia sold 48/2 = 24 clips in May.\n48+24 = 72\n#### 72", "72"),
    ("She pays 3 * $4 = $12.\n#### $1,080", "1080"),
    ("The answer is 18.", "18"),
    ("First 5 apples, then 3 more: 8 apples in total", "8"),
    ("It costs $1,234.50 in all.", "1234.5"),
    ("#### 42\nThen I kept going and wrote 7.", "42"),
    ("The temperature fell to -5 degrees.", "-5"),
    ("So 12.0 liters.", "12"),
    ("#### 3\n... #### 4", "4"),
    ("I do not know.", None),
    ("#### unknown, but 9 maybe", "9"),
]
for text, want in EXTRACT:
    check("extract %r" % text[:30], ev.extract_answer(text) == want,
          "got %r, want %r" % (ev.extract_answer(text), want))
check("gsm8k reference", ev.extract_answer("Weng earns 12/60 = $0.2 per minute.\n#### 10") == "10")
check("values compare", ev.normalize("1,000.00") == ev.normalize("1000"))

print("%d failed" % failed)
sys.exit(1 if failed else 0)

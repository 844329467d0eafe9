#!/bin/sh
# bench/eval.py end to end on a fixture model: the plumbing only (three questions through
# dllm run under two settings, the JSON it writes, its errors). Its statistics and answer
# extraction are tested in tests/eval_stats.py.
. "$(dirname "$0")/lib.sh"
need_fixtures
need_python3 "bench/eval.py"
SRC=${DLLM_TESTS_SRC:-$(dirname "$0")}
EVAL="$SRC/../bench/eval.py"
L="$FIX/models/llada-tiny-q4km.gguf"
FLAGS="--max-tokens 16 --steps 8 --block-length 8 --threads 1"
cat >"$TMP/q.jsonl" <<'JSONL'
{"id": "add", "question": "What is 2 + 3?", "answer": "2 + 3 = 5\n#### 5"}
{"id": "eggs", "question": "A hen lays 4 eggs a day. How many in 3 days?", "answer": "4 * 3 = 12\n#### 12"}

{"id": "coins", "question": "I had 1,000 coins and spent 250. How many are left?", "answer": "#### 750"}
JSONL

run "none against dual" 0 python3 "$EVAL" --dllm "$DLLM" --data "$TMP/q.jsonl" -m "$L" \
    --a "--cache none" --b "--cache dual" --flags "$FLAGS" --out "$TMP/result.json"
expect_err "progress per problem" "eval: 3/3 coins: A (right|wrong), B (right|wrong)"
if python3 - "$TMP/result.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["table"]
assert d["n"] == 3 and sum(t.values()) == 3, d
assert [p["id"] for p in d["problems"]] == ["add", "eggs", "coins"]
assert [p["expected"] for p in d["problems"]] == ["5", "12", "750"]
assert d["a"][:2] == ["--cache", "none"] and d["b"][:2] == ["--cache", "dual"], d
for p in d["problems"]:
    for s in ("a", "b"):
        assert isinstance(p[s]["text"], str) and p[s]["total_ms"] > 0, p
        assert p[s]["correct"] == (p[s]["answer"] == p["expected"]), p
lo, hi = d["ci95"]
assert lo <= d["difference_b_minus_a"] <= hi and 0 <= d["mcnemar_exact_p"] <= 1, d
assert d["ci_method"].startswith("Newcombe (1998) method 10"), d
PY
then ok "the result file"; else not_ok "the result file"; fi

run "a setting dllm refuses" 1 python3 "$EVAL" --dllm "$DLLM" --data "$TMP/q.jsonl" -m "$L" \
    --a "--cache none" --b "--cache sideways" --flags "$FLAGS"
expect_err "names the problem and the setting" "eval.py: error: problem add, setting b: .* exited 2"
printf '{"id": 1, "question": "no answer"}\n' >"$TMP/bad.jsonl"
run "a line without an answer" 1 python3 "$EVAL" --dllm "$DLLM" --data "$TMP/bad.jsonl" \
    --a "" --b "--cache dual"
expect_err "names the line" "bad.jsonl line 1: it needs the keys id, question and answer"
printf '42\n' >"$TMP/bad.jsonl"
run "a line that is no object" 1 python3 "$EVAL" --data "$TMP/bad.jsonl" --a "" --b ""
expect_err "names that line" "bad.jsonl line 1: it needs the keys"
run "no --b" 2 python3 "$EVAL" --data "$TMP/q.jsonl" --a ""
finish

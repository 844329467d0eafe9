#!/usr/bin/env python3
"""A float64 forward pass of a dense LLaDA or Dream GGUF file, written apart from dllm's C code
as a second reference for the quantization types the fixtures' float64 logits do not cover
(Q2_K, Q3_K). Standard library only; slow (seconds for the tiny models), exact in intent:

  - each matrix is decoded to the float32 values ggml's dequantize_row_<type> gives (each
    product and difference rounded to float32, no fused multiply-add), F16 and F32 as stored;
  - everything after that in float64: RMSNorm, RoPE (LLaDA's adjacent pairs, Dream's NEOX
    halves), the biases, bidirectional grouped-query attention, SwiGLU, the output projection.

  f64_forward.py MODEL IDS OUT          logits of every position (IDS comma-separated) to OUT,
                                        float32 rows of n_vocab
  f64_forward.py --golden HEADER        decodes tests/golden_kquants.h's blocks and checks them
                                        against the values ggml gave, bit for bit
  f64_forward.py --compare GOT REF V MAX
                                        each row's relative L2 distance; exit 1 above MAX

tests/cli_f64.sh checks this file against the fixtures' float64 logits before it trusts it.
"""
import math
import os
import re
import struct
import sys
from array import array
from operator import mul

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "gpu")]
from gguf_split import read_gguf  # noqa: E402  (tests/: the GGUF reader of the split tests)
from logits_check import row_error  # noqa: E402  (tests/gpu/: the GPU check's row distance)

FLOAT32 = struct.Struct("<f")


def f32(x):
    """x rounded to the nearest float32, as a float."""
    return FLOAT32.unpack(FLOAT32.pack(x))[0]


def f32s(xs):
    """Each of xs rounded to the nearest float32 (array's conversion rounds to nearest)."""
    return array("f", xs).tolist()


def half(b, o):
    return struct.unpack_from("<e", b, o)[0]


def scale_min_k4(j, q):
    """Sub-block j's 6-bit scale and min from a Q4_K / Q5_K block's 12 scale bytes."""
    if j < 4:
        return q[j] & 63, q[j + 4] & 63
    return (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4)


def decode_q2_k(b, o):
    """Q2_K: scales[16] (scale low nibble, min high), qs[64] of 2-bit values, d, dmin."""
    sc, q, d, dmin = b[o:o + 16], b[o + 16:o + 80], half(b, o + 80), half(b, o + 82)
    y, i = [], 0
    for n in range(2):
        for shift in (0, 2, 4, 6):
            for h in range(2):
                dl, ml = f32(d * (sc[i] & 0xF)), f32(dmin * (sc[i] >> 4))
                i += 1
                p = f32s([dl * ((q[32 * n + 16 * h + l] >> shift) & 3) for l in range(16)])
                y += f32s([v - ml for v in p])
    return y


def decode_q3_k(b, o):
    """Q3_K: hmask[32] (each value's third bit), qs[64] (low two bits), 12 bytes of 16 6-bit
    scales biased by 32, d."""
    hm, q, d = b[o:o + 32], b[o + 32:o + 96], half(b, o + 108)
    a0, a1, a2 = struct.unpack_from("<3I", b, o + 96)
    k1, k2 = 0x03030303, 0x0F0F0F0F
    words = ((a0 & k2) | ((a2 & k1) << 4), (a1 & k2) | (((a2 >> 2) & k1) << 4),
             ((a0 >> 4) & k2) | (((a2 >> 4) & k1) << 4), ((a1 >> 4) & k2) | (((a2 >> 6) & k1) << 4))
    scales = struct.unpack("<16b", struct.pack("<4I", *words))
    y, i, m = [], 0, 1
    for n in range(2):
        for shift in (0, 2, 4, 6):
            for h in range(2):
                dl = f32(d * (scales[i] - 32))
                i += 1
                y += f32s([dl * (((q[32 * n + l] >> shift) & 3) - (0 if hm[l] & m else 4))
                           for l in range(16 * h, 16 * h + 16)])
            m <<= 1
    return y


def decode_q4_k(b, o):
    """Q4_K: d, dmin, 12 scale bytes, qs[128] of 4-bit values, 8 sub-blocks of 32."""
    d, dmin, s, q = half(b, o), half(b, o + 2), b[o + 4:o + 16], b[o + 16:o + 144]
    y = []
    for j in range(4):
        (s1, m1), (s2, m2) = scale_min_k4(2 * j, s), scale_min_k4(2 * j + 1, s)
        d1, n1, d2, n2 = f32(d * s1), f32(dmin * m1), f32(d * s2), f32(dmin * m2)
        y += f32s([v - n1 for v in f32s([d1 * (q[32 * j + l] & 0xF) for l in range(32)])])
        y += f32s([v - n2 for v in f32s([d2 * (q[32 * j + l] >> 4) for l in range(32)])])
    return y


def decode_q5_k(b, o):
    """Q5_K: Q4_K's layout with qh[32], each value's fifth bit, before the 4-bit values."""
    d, dmin, s = half(b, o), half(b, o + 2), b[o + 4:o + 16]
    qh, ql = b[o + 16:o + 48], b[o + 48:o + 176]
    y = []
    for j in range(4):
        (s1, m1), (s2, m2) = scale_min_k4(2 * j, s), scale_min_k4(2 * j + 1, s)
        d1, n1, d2, n2 = f32(d * s1), f32(dmin * m1), f32(d * s2), f32(dmin * m2)
        u1, u2 = 1 << (2 * j), 2 << (2 * j)
        p = f32s([d1 * ((ql[32 * j + l] & 0xF) + (16 if qh[l] & u1 else 0)) for l in range(32)])
        y += f32s([v - n1 for v in p])
        p = f32s([d2 * ((ql[32 * j + l] >> 4) + (16 if qh[l] & u2 else 0)) for l in range(32)])
        y += f32s([v - n2 for v in p])
    return y


def decode_q6_k(b, o):
    """Q6_K: ql[128] (low 4 bits), qh[64] (high 2 bits), 16 signed 8-bit scales, d."""
    ql, qh = b[o:o + 128], b[o + 128:o + 192]
    sc, d = struct.unpack_from("<16b", b, o + 192), half(b, o + 208)
    y = []
    for n in range(2):
        lo, hi = ql[64 * n:64 * n + 64], qh[32 * n:32 * n + 32]
        for k in range(4):  # the values 32 k .. 32 k + 31 of this half
            low = [lo[l + 32 * (k & 1)] >> (4 * (k >> 1)) & 0xF for l in range(32)]
            q = [low[l] | (((hi[l] >> (2 * k)) & 3) << 4) for l in range(32)]
            dl = [f32(d * sc[8 * n + l // 16 + 2 * k]) for l in (0, 16)]
            y += f32s([dl[l // 16] * (q[l] - 32) for l in range(32)])
    return y


# GGML type id: (bytes per block of 256, decoder)
K_QUANTS = {10: (84, decode_q2_k), 11: (110, decode_q3_k), 12: (144, decode_q4_k),
            13: (176, decode_q5_k), 14: (210, decode_q6_k)}


def load(path):
    """(metadata, {tensor name: (ne, type, data bytes)}) of a GGUF file."""
    _, _, _, tensors, meta = read_gguf(path)
    return meta, {name: (ne, t, blob) for name, ne, t, blob in tensors}


def tensor(model, name, required=True):
    """A tensor's values: a list (1-D) or a list of rows of ne[0] values; None when absent and
    not required."""
    tensors = model[1]
    if name not in tensors:
        if required:
            raise SystemExit("no tensor %s" % name)
        return None
    ne, t, d = tensors[name]
    n = math.prod(ne)
    if t == 0:
        v = list(struct.unpack("<%df" % n, d))
    elif t == 1:
        v = list(struct.unpack("<%de" % n, d))
    elif t in K_QUANTS:
        size, decode = K_QUANTS[t]
        v = [x for blk in range(n // 256) for x in decode(d, blk * size)]
    else:
        raise SystemExit("tensor %s: type %d is not one this reference decodes" % (name, t))
    return v if len(ne) == 1 else [v[r * ne[0]:(r + 1) * ne[0]] for r in range(n // ne[0])]


def linear(w, xs, bias=None):
    """Each row x of xs times the matrix w (rows of outputs), plus the bias."""
    out = [[sum(map(mul, row, x)) for row in w] for x in xs]
    return out if bias is None else [[a + b for a, b in zip(r, bias)] for r in out]


def rms_norm(x, g, eps):
    s = 1.0 / math.sqrt(sum(v * v for v in x) / len(x) + eps)
    return [v * s * w for v, w in zip(x, g)]


def rope(v, pos, head_dim, n_rot, base, neox):
    """Rotates each head of v at position pos: pairs (2i, 2i+1), or (i, i + n_rot/2) for NEOX."""
    out = list(v)
    for h0 in range(0, len(v), head_dim):
        for i in range(n_rot // 2):
            a, b = (h0 + i, h0 + i + n_rot // 2) if neox else (h0 + 2 * i, h0 + 2 * i + 1)
            theta = pos * base ** (-2.0 * i / n_rot)
            c, s = math.cos(theta), math.sin(theta)
            out[a], out[b] = v[a] * c - v[b] * s, v[a] * s + v[b] * c
    return out


def forward(path, ids):
    """The logits of every position of ids, bidirectional attention over all of them."""
    model = load(path)
    meta = model[0]
    arch = meta["general.architecture"]
    if arch not in ("llada", "dream"):
        raise SystemExit("%s: architecture %s; this reference runs llada and dream" % (path, arch))
    key = lambda k: meta["%s.%s" % (arch, k)]
    n_head, n_kv = key("attention.head_count"), key("attention.head_count_kv")
    head_dim = key("embedding_length") // n_head
    eps, base = key("attention.layer_norm_rms_epsilon"), key("rope.freq_base")
    n_rot, neox = key("rope.dimension_count"), arch == "dream"
    embd = tensor(model, "token_embd.weight")
    x = [list(embd[i]) for i in ids]
    n = len(ids)
    for il in range(key("block_count")):
        t = lambda name, required=True: tensor(model, "blk.%d.%s" % (il, name), required)
        a = [rms_norm(r, t("attn_norm.weight"), eps) for r in x]
        q = linear(t("attn_q.weight"), a, t("attn_q.bias", False))
        k = linear(t("attn_k.weight"), a, t("attn_k.bias", False))
        v = linear(t("attn_v.weight"), a, t("attn_v.bias", False))
        q = [rope(q[i], i, head_dim, n_rot, base, neox) for i in range(n)]
        k = [rope(k[i], i, head_dim, n_rot, base, neox) for i in range(n)]
        att = [[0.0] * (n_head * head_dim) for _ in range(n)]
        for h in range(n_head):
            g0 = h // (n_head // n_kv) * head_dim
            for i in range(n):
                qi = q[i][h * head_dim:(h + 1) * head_dim]
                s = [sum(map(mul, qi, k[j][g0:g0 + head_dim])) / math.sqrt(head_dim)
                     for j in range(n)]
                top = max(s)
                e = [math.exp(z - top) for z in s]
                total = sum(e)
                for c in range(head_dim):
                    att[i][h * head_dim + c] = sum(e[j] * v[j][g0 + c] for j in range(n)) / total
        o = linear(t("attn_output.weight"), att)
        x = [[p + r for p, r in zip(xr, orow)] for xr, orow in zip(x, o)]
        a = [rms_norm(r, t("ffn_norm.weight"), eps) for r in x]
        gate, up = linear(t("ffn_gate.weight"), a), linear(t("ffn_up.weight"), a)
        f = [[gv / (1.0 + math.exp(-gv)) * uv for gv, uv in zip(gr, ur)]
             for gr, ur in zip(gate, up)]
        down = linear(t("ffn_down.weight"), f)
        x = [[p + r for p, r in zip(xr, drow)] for xr, drow in zip(x, down)]
    out = tensor(model, "output.weight", False) or embd
    return linear(out, [rms_norm(r, tensor(model, "output_norm.weight"), eps) for r in x])


def golden(header):
    """Decodes the Q2_K and Q3_K blocks of tests/golden_kquants.h and counts the values that
    differ from ggml's; exit 1 when any does."""
    text = open(header).read()

    def array(name):
        m = re.search(r"%s\[[^\]]*\]\[[^\]]*\]\s*=\s*\{(.*?)\};" % name, text, re.S)
        if not m:
            raise SystemExit("%s: no array %s" % (header, name))
        return m.group(1)

    bad = 0
    for t, tid in (("q2_K", 10), ("q3_K", 11)):
        size, decode = K_QUANTS[tid]
        raw = bytes(int(h, 16) for h in re.findall(r"0x[0-9a-fA-F]+\b(?!\.|p)",
                                                   array("golden_%s_blocks" % t)))
        want = [float.fromhex(h) for h in re.findall(r"[-+]?0x[0-9a-fA-F]*\.?[0-9a-fA-F]*p[-+]?\d+",
                                                     array("golden_%s_values" % t))]
        got = [y for blk in range(len(raw) // size) for y in decode(raw, blk * size)]
        diff = sum(1 for a, b in zip(got, want) if a != b) + abs(len(got) - len(want))
        print("%s: %d values, %d differ from ggml's" % (t, len(want), diff))
        bad += diff
    sys.exit(1 if bad else 0)


def compare(got_path, ref_path, n_vocab, limit):
    """Each row's relative L2 distance of got from ref (float32 rows); exit 1 above limit."""
    def rows(p):
        b = open(p, "rb").read()
        v = struct.unpack("<%df" % (len(b) // 4), b)
        return [v[i:i + n_vocab] for i in range(0, len(v), n_vocab)]

    got, ref = rows(got_path), rows(ref_path)
    if len(got) != len(ref) or not ref:
        raise SystemExit("%d rows against %d" % (len(got), len(ref)))
    rel = [row_error(g, r)[1] for g, r in zip(got, ref)]
    agree = sum(g.index(max(g)) == r.index(max(r)) for g, r in zip(got, ref)) / len(ref)
    print("%d rows: relative L2 max %.3g, median %.3g (limit %.3g); argmax agrees in %.3f"
          % (len(rel), max(rel), sorted(rel)[len(rel) // 2], limit, agree))
    sys.exit(0 if max(rel) <= limit else 1)


def main(argv):
    if len(argv) == 3 and argv[1] == "--golden":
        golden(argv[2])
    elif len(argv) == 6 and argv[1] == "--compare":
        compare(argv[2], argv[3], int(argv[4]), float(argv[5]))
    elif len(argv) == 4:
        logits = forward(argv[1], [int(t) for t in argv[2].split(",")])
        with open(argv[3], "wb") as f:
            for r in logits:
                f.write(struct.pack("<%df" % len(r), *r))
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/env python3
"""The bound that the GEMM kernels' inner loops set by their instruction mix, from llvm-mca.

A kernel reaches the int8 peak only if its inner loop issues nothing but dot products
(VPDPBUSD; VPMADDUBSW without VNNI); every load, conversion, FMA and address computation
beside them competes for the same ports. For each matrix-kernel variant (avx512: VPDPBUSD on
zmm; avxvnni: the VEX form on ymm; avx2: VPMADDUBSW on ymm) this compiles the kernel file to
assembly with the build's own command (`make -n`), takes in each tile function (ktile_q4,
ktile_q5, ktile_q6: the K-quants; qtile_plain and qtile_sum: the 32-element blocks) its hot
path (hot_path: for a K-quant tile one 128-element step, its sub-block loop as often as the step
runs it), and hands it to llvm-mca for CPU models (znver3: AMD Zen 3;
znver4: AMD Zen 4; sapphirerapids: Intel Xeon 4th generation). The ports its dot products
alone would occupy (their reciprocal throughput as a block, in the same forms) over the
loop's cycles per iteration (simulated over 100 iterations, dependencies included) give the
share of the dot-product peak its mix allows: bound = dot_rthroughput / loop_cycles.
Branches inside the loop are dropped (llvm-mca times straight-line code), so the bound holds
for the loop's common path; the models are LLVM's, not measurements (LLVM 19's znver4 model,
for one, gives VPDPBUSD zmm a throughput of 1 a cycle with a memory operand and 1 every 2
with registers). For a Zen 5, which LLVM does not describe, the avx512 loops get a bound
from what bench/bench_ports measured on one instead (ZEN5 below): the dot products over the
instructions that take their pipes or over the vector loads, whichever is more. So do they for
an Intel Xeon of the Sapphire Rapids core (SPR below), whose two 512-bit VPDPBUSD a cycle LLVM's
model halves: the dot products over every instruction that takes one of their two pipes.

Usage: bench/mix_bound.py [--build DIR] [--mca PROGRAM]; prints the JSON that bench/run.py's
gemm part records as "mix_bound".
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

VPDPBUSD = re.compile(r"^(\{vex\}\s*)?vpdpbusd\b")
# A Zen 5, for which LLVM has no timings of its own (its znver5 is the Zen 4 model), as
# bench/bench_ports measured one (AMD EPYC, family 26 model 2, 2026-12-04): two 512-bit
# VPDPBUSD a cycle, on two pipes that FMA, VPDPWSSD, VPMADDWD and VPMULLD also take, and two
# vector loads a cycle, the dot products' broadcast operands among them (one of those
# instructions, or one load, per 4 dot products slowed them to 80%, an FMA and a load together
# to 79%: two limits, not one), while VCVTDQ2PS and register VPADDD cost nothing. Its bound is
# the dot products over the larger of the instructions on those pipes and the vector loads.
ZEN5 = "zen5 (bench_ports)"
ZEN5_PIPES = re.compile(r"^(vpdpbusd|vpdpwssd|vpmaddwd|vfn?m(add|sub)\w*ps|vmulps|vpmulld)\b")
# An Intel Xeon of the Sapphire Rapids core, as bench/bench_ports measured one (family 6 model
# 207, Emerald Rapids, 2026-12-06), for which LLVM 19's sapphirerapids model is wrong where it
# matters most: it issues one 512-bit VPDPBUSD a cycle, where this CPU issues two (its 2-thread
# probe, 1142-1405 GOPS, would otherwise need a 5 GHz clock). Every other 512-bit instruction
# that computes takes one of those two pipes: FMA, VPDPWSSD, VPMADDWD, VCVTDQ2PS, VPADDD from
# registers or memory (one per 4 dot products slowed them to 83-86%, the share a fifth
# instruction on their pipes leaves), VPMULLD two, and a VMOVQ from a general register (GCC's
# spills in the tiles) one; loads and broadcasts from memory, register copies and zeroing idioms
# cost nothing. Its bound is the dot products over the instructions on those pipes.
SPR = "sapphirerapids (bench_ports)"
SPR_LOAD = re.compile(r"^(vmov\w+|vpbroadcast[bwdq]|vbroadcast\w+)\s")  # free from memory
SPR_COPY = re.compile(r"^vmov(dq[au](8|16|32|64)?|ap[sd]|up[sd])\s")  # free between registers
ZERO_IDIOM = re.compile(r"^v(pxor[dq]?|xorp[sd])\s+(%\w+),\s*\2,\s*\2$")
# The matrix-kernel variants: their libtool library and source, their dot-product instruction
# (the one the int8 peak is measured with, bench_gemm) and the CPU models to ask about.
VARIANTS = {
    "avx512": ("engine/libkernels-avx512.la", "engine/kernels/matmul-avx512.c", VPDPBUSD,
               ["znver4", "sapphirerapids", ZEN5, SPR]),
    "avxvnni": ("engine/libkernels-avxvnni.la", "engine/kernels/matmul-avxvnni.c", VPDPBUSD,
                ["znver4", "sapphirerapids"]),
    "avx2": ("engine/libkernels-avx2.la", "engine/kernels/matmul-avx2.c",
             re.compile(r"^vpmaddubsw\b"), ["znver3"]),
}
# The tile functions and the weight types each multiplies.
FUNCTIONS = {
    "ktile_q4": ["Q4_K"],
    "ktile_q5": ["Q5_K"],
    "ktile_q6": ["Q6_K"],
    "qtile_plain": ["Q8_0"],
    "qtile_sum": ["Q4_0", "Q4_1", "Q5_0", "Q5_1"],
}
LABEL = re.compile(r"^(\.L\w+):")
JUMP = re.compile(r"^\s+j\w+\s+(\.L\w+)")
FUNC = re.compile(r"^([A-Za-z_][\w.]*):")


def find_mca(given):
    for name in ([given] if given else ["llvm-mca-19", "llvm-mca-18", "llvm-mca-17",
                                        "llvm-mca-16", "llvm-mca"]):
        path = shutil.which(name)
        if path:
            return path
    return None


def compile_command(build, lib, src, out):
    """The build's command for src (from `make -n`), made to write assembly to out.

    `-W src` (src taken as new) rather than `-B`: under -B make also remakes the included
    dependency files, even with -n, and automake's rule for them writes empty ones, after
    which the build no longer sees header changes."""
    dry = subprocess.run(["make", "-n", "-W", src, lib], cwd=build, capture_output=True,
                         text=True)
    line = next((l for l in dry.stdout.splitlines() if src in l and "--mode=compile" in l), None)
    if line is None:
        raise RuntimeError("make -n in %s shows no compile command for %s" % (build, src))
    words = shlex.split(line.split("--mode=compile", 1)[1].split("`", 1)[0])
    cmd, skip = [], 0
    for w in words:
        if skip:
            skip -= 1
        elif w in ("-MT", "-MF", "-o"):
            skip = 1
        elif w not in ("-MD", "-MP", "-c", "-g"):
            cmd.append(w)
    return cmd + ["-S", "-o", out, os.path.join(ROOT, src)]


def loops(lines, func):
    """The loops of func in the assembly: (first line, last line) of each back edge's range."""
    start = next(i for i, l in enumerate(lines) if l.startswith(func + ":"))
    end = next((i for i in range(start + 1, len(lines)) if FUNC.match(lines[i])), len(lines))
    labels = {}
    found = []
    for i in range(start, end):
        m = LABEL.match(lines[i])
        if m:
            labels[m.group(1)] = i
        m = JUMP.match(lines[i])
        if m and m.group(1) in labels:
            found.append((labels[m.group(1)], i))
    return found


def instructions(lines, first, last):
    """The instructions of lines[first..last], without labels, directives and branches."""
    out = []
    for l in lines[first:last + 1]:
        s = l.strip()
        if not l.startswith("\t") or not s or s.startswith(".") or s.startswith("#") or \
                re.match(r"j\w+\s", s):
            continue
        out.append(s)
    return out


def peeled(lines, outer, best):
    """The lines of outer that a jump straight to best's first line skips: an iteration GCC
    peeled off the sub-block loop for an odd count, which an even one jumps over (the 256-bit
    Q4_K tile's four sub-blocks a step, its loop unrolled twice). None when there is none."""
    label = LABEL.match(lines[best[0]])
    if not label:
        return None
    for i in range(outer[0], best[0]):
        m = JUMP.match(lines[i])
        if m and m.group(1) == label.group(1):
            return (i + 1, best[0] - 1)
    return None


def hot_path(lines, func, dot, per_h):
    """The instructions one pass of func's hot loop runs, as straight-line code. For a K-quant
    tile (per_h: the dot products of one 128-element step, 32 words times its rows times its
    panels): the innermost loop with the most dot products (the sub-block loop of the tile with
    the most panels; the one-panel tile's loops lie beside it) repeated as often as the loop
    around it (the 128-element step, with the mins and the scaling) runs it, followed by the rest
    of that loop once, less a peeled iteration the step jumps over where the counts say so.
    Else, or when the counts do not fit, the loop with the most dot products (the whole K-quant
    tile's code, its one-panel and two-panel paths together, would count both)."""
    def count(body):
        return sum(1 for s in body if dot.match(s))
    dots = {r: count(instructions(lines, *r)) for r in loops(lines, func)}
    found = [r for r in dots if dots[r]]
    if not found:
        return []
    def inside(a, b):  # loop a strictly within loop b
        return b[0] <= a[0] and a[1] <= b[1] and a != b
    inner = [r for r in found if not any(inside(o, r) for o in found)]
    best = max(inner, key=dots.get)
    around = [r for r in found if inside(best, r)]
    if per_h and around:
        outer = min(around, key=lambda r: r[1] - r[0])
        skip = peeled(lines, outer, best)
        bodies = [instructions(lines, *outer)]
        if skip:  # first: a step's sub-blocks are even in every tile
            bodies.insert(0, instructions(lines, outer[0], skip[0] - 1) +
                          instructions(lines, skip[1] + 1, outer[1]))
        for body in bodies:
            trips, rest = divmod(per_h - (count(body) - dots[best]), dots[best])
            if trips >= 1 and rest == 0:
                return body + instructions(lines, *best) * (trips - 1)
    return instructions(lines, *max(found, key=dots.get))


def tile_constant(src, name):
    """A tile constant (TT_K, KQ_PANELS) of the variant whose source is src: its own #define,
    else the shared 256-bit header's, else matmul-simd.h's default."""
    own = open(os.path.join(ROOT, src)).read()
    texts = [own] + [open(os.path.join(ROOT, "engine/kernels", h)).read()
                     for h in ("simd-ymm.h", "matmul-simd.h") if h == "matmul-simd.h" or h in own]
    for text in texts:
        m = re.search(r"^#define\s+%s\s+(\d+)" % name, text, re.M)
        if m:
            return int(m.group(1))
    raise RuntimeError("no #define %s for %s" % (name, src))


def mca(program, cpu, body):
    """llvm-mca's cycles per iteration (over 100) and block reciprocal throughput of body."""
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write("\n".join(body) + "\n")
    try:
        r = subprocess.run([program, "-mtriple=x86_64", "-mcpu=" + cpu, "-iterations=100",
                            f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if r.returncode != 0:
        raise RuntimeError("llvm-mca -mcpu=%s: %s" % (cpu, r.stderr.strip()[:200]))
    cycles = float(re.search(r"Total Cycles:\s+(\d+)", r.stdout).group(1)) / 100
    rthr = float(re.search(r"Block RThroughput:\s+([\d.]+)", r.stdout).group(1))
    return cycles, rthr


def operands(ins):
    """An instruction's (AT&T) operands, its destination last; commas inside a memory
    operand's parentheses do not split it."""
    return re.split(r",\s*(?![^()]*\))", ins.split(None, 1)[1]) if " " in ins else []


def vector_load(ins):
    """Whether an instruction (AT&T) reads a vector register's worth from memory: a memory
    operand that is not its last (the destination: a store)."""
    if not ins.startswith("v") or "(" not in ins:
        return False
    return "(" not in operands(ins)[-1]


def mca_bound(program, cpu, body, dots):
    """The bound llvm-mca's model of cpu gives a loop: the ports its dot products alone would
    occupy over the loop's cycles per iteration."""
    loop_cycles, loop_rthr = mca(program, cpu, body)
    _, dot_rthr = mca(program, cpu, dots)
    return {"loop_cycles": loop_cycles, "loop_rthroughput": loop_rthr,
            "dot_rthroughput": dot_rthr, "bound": round(dot_rthr / max(loop_cycles, loop_rthr), 3)}


def zen5_bound(program, cpu, body, dots):
    """The ZEN5 bound of a loop: its dot products over the larger of its instructions on their
    pipes and its vector loads, each two a cycle."""
    pipes = sum(1 for s in body if ZEN5_PIPES.match(s))
    loads = sum(1 for s in body if vector_load(s))
    return {"pipe_instructions": pipes, "vector_loads": loads,
            "bound": round(len(dots) / max(pipes, loads), 3)}


def spr_pipe_cost(ins):
    """The SPR pipe slots of one instruction: 0 for what is not vector work on them (scalar
    instructions, loads and broadcasts into a register, stores, register copies, zeroing
    idioms), 2 for VPMULLD, else 1."""
    if not ins.startswith("v") or ZERO_IDIOM.match(ins):
        return 0
    ops = operands(ins)
    if ops and "(" in ops[-1]:
        return 0  # a store
    if SPR_LOAD.match(ins) and vector_load(ins):
        return 0
    if SPR_COPY.match(ins) and all(o.startswith("%") and "mm" in o for o in ops):
        return 0
    return 2 if ins.startswith("vpmulld") else 1


def spr_bound(program, cpu, body, dots):
    """The SPR bound of a loop: its dot products over its instructions' slots on their two
    pipes."""
    pipes = sum(spr_pipe_cost(s) for s in body)
    return {"pipe_slots": pipes, "bound": round(len(dots) / pipes, 3)}


# How each CPU model's bound is found.
BOUNDS = {"znver3": mca_bound, "znver4": mca_bound, "sapphirerapids": mca_bound,
          ZEN5: zen5_bound, SPR: spr_bound}


def measure(build, program):
    """The bound of every variant's tile functions on every CPU model, as a JSON object."""
    version = subprocess.run([program, "--version"], capture_output=True, text=True).stdout
    out = {"llvm_mca": program, "llvm_version": (re.search(r"version ([\d.]+)", version) or
                                                 re.search(r"(\S+)", version)).group(1),
           "rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        for kernel, (lib, src, dot, cpus) in VARIANTS.items():
            per_h = 32 * tile_constant(src, "TT_K") * tile_constant(src, "KQ_PANELS")
            asm = os.path.join(tmp, kernel + ".s")
            cmd = compile_command(build, lib, src, asm)
            subprocess.run(cmd, cwd=build, check=True)
            out.setdefault("compiler", cmd[0])
            lines = open(asm).read().split("\n")
            for func, types in FUNCTIONS.items():
                if not any(l.startswith(func + ":") for l in lines):
                    continue
                body = hot_path(lines, func, dot, per_h if func.startswith("ktile") else None)
                dots = [s for s in body if dot.match(s)]
                if not dots:
                    continue
                for cpu in cpus:
                    row = {"kernel": kernel, "function": func, "types": types, "cpu": cpu,
                           "instructions": len(body), "dot_products": len(dots)}
                    row.update(BOUNDS[cpu](program, cpu, body, dots))
                    out["rows"].append(row)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="a configured build folder of this checkout (default build/)")
    ap.add_argument("--mca", help="the llvm-mca program (default: the newest found)")
    a = ap.parse_args()
    program = find_mca(a.mca)
    if not program:
        sys.exit("mix_bound.py: no llvm-mca found: install Debian's llvm-19 (or give --mca)")
    json.dump(measure(a.build, program), sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()

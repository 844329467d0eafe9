/*
 * bench_ports: which instructions of the K-quant tiles compete with the 512-bit VPDPBUSD for
 * the CPU's resources, measured, for CPUs whose timings no llvm-mca model describes (LLVM's
 * znver5 is its Zen 4 model). Prints one JSON document:
 *
 *   - "chains": VPDPBUSD a second with 1, 2, 4, 6, 8, 10, 12 and 16 independent accumulators:
 *     one chain gives the latency (the clock over its rate), many the throughput;
 *   - "mix": VPDPBUSD a second in a loop of 12 chains (broadcasting their activation operand
 *     from memory, as the tiles do) with one other instruction per 4 dot products, each kind
 *     the tiles use: FMA, VPDPWSSD, VPMADDWD, VPMULLD, VCVTDQ2PS, register VPADDD, VPADDD and
 *     VPBROADCASTD from memory, a 512-bit load, what GCC leaves beside them in the tiles (a
 *     register copy, a zeroing idiom, a VMOVQ from a general register), and an FMA with a load
 *     (whether pipes and loads are one limit or two). "shares" is true where the dot products
 *     slowed by more than a tenth: the instruction takes what the dot products need (a pipe, or
 *     a load slot).
 *
 *   bench_ports [--iters N]
 *
 * Each figure is the best of 3 runs of N iterations (default 20000000) on this thread; run it
 * on a quiet machine. Needs AVX512-VNNI; elsewhere it says so and exits 1.
 */
#include "config.h"

#include "bench_util.h"
#include "dot_chains.h"
#include "kernels/cpu.h"

#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TARGET __attribute__((target("avx512f,avx512vnni"), noinline))

/* The memory operands: 4-byte broadcasts and one 64-byte vector. */
static int32_t mem[32] __attribute__((aligned(64)));

/* One dot product into accumulator a, broadcasting the word at mem[o]. */
#define DOT_M(a, o) __asm__("vpdpbusd %1%{1to16%}, %2, %0" : "+v"(a) : "m"(mem[o]), "v"(u))

/* Dot products a second of iters x n independent chains (register form, dot_chains_zmm). */
static double chains(long iters, int n)
{
    const double t0 = clock_s(CLOCK_MONOTONIC);
    dot_chains_zmm(iters, n);
    return (double)iters * n / (clock_s(CLOCK_MONOTONIC) - t0);
}

/*
 * static double mix_<name>(long iters): dot products a second of iters x 12 chains broadcasting
 * from memory, with 3 instructions X(x) (one per 4 dot products) into three chains of their own.
 * The chains are summed and stored at the end: an empty asm statement taking them all as
 * operands instead made GCC 12 copy every accumulator through one register in the loop.
 */
#define MIX(name, X)                                                                               \
    TARGET static double mix_##name(long iters)                                                    \
    {                                                                                              \
        __m512i u = _mm512_set1_epi8(3);                                                           \
        __m512 f = _mm512_set1_ps(1.0f);                                                           \
        __m512i a0 = u, a1 = u, a2 = u, a3 = u, a4 = u, a5 = u, a6 = u, a7 = u;                    \
        __m512i a8 = u, a9 = u, a10 = u, a11 = u, x0 = u, x1 = u, x2 = u;                          \
        __asm__ volatile("" : "+v"(u), "+v"(f));                                                   \
        const double t0 = clock_s(CLOCK_MONOTONIC);                                                \
        for (long k = 0; k < iters; k++) {                                                         \
            DOT_M(a0, 0);                                                                          \
            DOT_M(a1, 1);                                                                          \
            DOT_M(a2, 2);                                                                          \
            DOT_M(a3, 3);                                                                          \
            X(x0);                                                                                 \
            DOT_M(a4, 4);                                                                          \
            DOT_M(a5, 5);                                                                          \
            DOT_M(a6, 6);                                                                          \
            DOT_M(a7, 7);                                                                          \
            X(x1);                                                                                 \
            DOT_M(a8, 8);                                                                          \
            DOT_M(a9, 9);                                                                          \
            DOT_M(a10, 10);                                                                        \
            DOT_M(a11, 11);                                                                        \
            X(x2);                                                                                 \
        }                                                                                          \
        const double t = clock_s(CLOCK_MONOTONIC) - t0;                                            \
        (void)f;                                                                                   \
        __m512i sum = _mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3));        \
        sum = _mm512_add_epi32(                                                                    \
            sum, _mm512_add_epi32(_mm512_add_epi32(a4, a5), _mm512_add_epi32(a6, a7)));            \
        sum = _mm512_add_epi32(                                                                    \
            sum, _mm512_add_epi32(_mm512_add_epi32(a8, a9), _mm512_add_epi32(a10, a11)));          \
        sum = _mm512_add_epi32(sum, _mm512_add_epi32(x0, _mm512_add_epi32(x1, x2)));               \
        _mm512_store_si512(mem + 16, sum);                                                         \
        return (double)iters * 12 / t;                                                             \
    }

#define X_NONE(x) (void)(x)
/* the FMA's float operands in integer-typed registers: the instruction does not care */
#define X_FMA(x)       __asm__ volatile("vfmadd231ps %1, %1, %0" : "+v"(x) : "v"(f))
#define X_DPWSSD(x)    __asm__ volatile("vpdpwssd %1, %1, %0" : "+v"(x) : "v"(u))
#define X_MADDWD(x)    __asm__ volatile("vpmaddwd %1, %0, %0" : "+v"(x) : "v"(u))
#define X_MULLD(x)     __asm__ volatile("vpmulld %1, %0, %0" : "+v"(x) : "v"(u))
#define X_CVT(x)       __asm__ volatile("vcvtdq2ps %1, %0" : "=v"(x) : "v"(u))
#define X_ADD_REG(x)   __asm__ volatile("vpaddd %1, %0, %0" : "+v"(x) : "v"(u))
#define X_ADD_MEM(x)   __asm__ volatile("vpaddd %1%{1to16%}, %0, %0" : "+v"(x) : "m"(mem[20]))
#define X_BCAST_MEM(x) __asm__ volatile("vpbroadcastd %1, %0" : "=v"(x) : "m"(mem[20]))
#define X_LOAD_MEM(x)                                                                              \
    __asm__ volatile("vmovdqa64 %1, %0" : "=v"(x) : "m"(*(const __m512i *)(mem + 16)))
/* what GCC leaves in the tiles beside them: register copies, zeroings, GPR spills to xmm */
#define X_MOV_REG(x)  __asm__ volatile("vmovdqa64 %1, %0" : "=v"(x) : "v"(u))
#define X_ZERO(x)     __asm__ volatile("vpxord %0, %0, %0" : "=v"(x))
#define X_MOVQ_GPR(x) __asm__ volatile("vmovq %1, %x0" : "=v"(x) : "r"(iters))
/* an FMA and a load: whether the pipes and the loads are one limit or two */
#define X_FMA_LOAD(x)                                                                              \
    do {                                                                                           \
        __m512i y;                                                                                 \
        X_FMA(x);                                                                                  \
        X_LOAD_MEM(y);                                                                             \
        x = _mm512_xor_si512(x, y);                                                                \
    } while (0)
MIX(none, X_NONE)
MIX(fma, X_FMA)
MIX(dpwssd, X_DPWSSD)
MIX(maddwd, X_MADDWD)
MIX(mulld, X_MULLD)
MIX(cvt, X_CVT)
MIX(add_reg, X_ADD_REG)
MIX(add_mem, X_ADD_MEM)
MIX(bcast_mem, X_BCAST_MEM)
MIX(load_mem, X_LOAD_MEM)
MIX(mov_reg, X_MOV_REG)
MIX(zero, X_ZERO)
MIX(movq_gpr, X_MOVQ_GPR)
MIX(fma_load, X_FMA_LOAD)

/* The instructions set beside the dot products, one per 4 of them (the first: none). */
static const struct {
    const char *name;
    double (*run)(long iters);
} extras[] = {
    {"none", mix_none},
    {"vfmadd231ps", mix_fma},
    {"vpdpwssd", mix_dpwssd},
    {"vpmaddwd", mix_maddwd},
    {"vpmulld", mix_mulld},
    {"vcvtdq2ps", mix_cvt},
    {"vpaddd (registers)", mix_add_reg},
    {"vpaddd (1to16 from memory)", mix_add_mem},
    {"vpbroadcastd (from memory)", mix_bcast_mem},
    {"vmovdqa64 (from memory)", mix_load_mem},
    {"vmovdqa64 (registers)", mix_mov_reg},
    {"vpxord (zeroing idiom)", mix_zero},
    {"vmovq (general register to xmm)", mix_movq_gpr},
    {"vfmadd231ps and vmovdqa64 (from memory)", mix_fma_load},
};

/* The best of 3 runs of a measurement, in G instructions a second. */
#define BEST3(expr)                                                                                \
    ({                                                                                             \
        double best_ = 0.0;                                                                        \
        for (int r_ = 0; r_ < 3; r_++) {                                                           \
            const double v_ = (expr);                                                              \
            best_ = v_ > best_ ? v_ : best_;                                                       \
        }                                                                                          \
        best_ / 1e9;                                                                               \
    })

int main(int argc, char **argv)
{
    long iters = 20000000L;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
            iters = atol(argv[++i]);
        } else {
            fprintf(stderr, "usage: bench_ports [--iters N]\n");
            return 2;
        }
    }
    if (iters < 1000) {
        fprintf(stderr, "bench_ports: --iters must be at least 1000\n");
        return 2;
    }
    const unsigned need = DLLM_CPU_AVX512F | DLLM_CPU_AVX512VNNI;
    if ((dllm_cpu_features() & need) != need) {
        fprintf(stderr, "bench_ports: this CPU has no AVX512-VNNI, whose VPDPBUSD it measures\n");
        return 1;
    }
    for (int i = 0; i < 16; i++) {
        mem[i] = 0x01020304 * (i + 1);
    }
    char cpu_model[128];
    read_line("/proc/cpuinfo", "model name\t: ", cpu_model, sizeof cpu_model);
    printf("{\n  \"what\": \"512-bit VPDPBUSD a second (G instructions): by independent chains, "
           "and beside one other instruction per 4 of them\",\n");
    printf("  \"cpu\": \"%s\",\n  \"iterations\": %ld,\n  \"chains\": {", cpu_model, iters);
    for (size_t i = 0; i < sizeof dot_chain_counts / sizeof dot_chain_counts[0]; i++) {
        const int n = dot_chain_counts[i];
        printf("%s\"%d\": %.3f", i ? ", " : "", n, BEST3(chains(iters, n)));
    }
    printf("},\n  \"mix\": [\n");
    const size_t n_extras = sizeof extras / sizeof extras[0];
    const double base = BEST3(extras[0].run(iters));
    for (size_t e = 0; e < n_extras; e++) {
        const double v = e == 0 ? base : BEST3(extras[e].run(iters));
        printf("    {\"beside\": \"%s\", \"dots_g_per_s\": %.3f, \"of_alone\": %.3f",
               extras[e].name, v, v / base);
        if (e > 0) {
            printf(", \"shares\": %s", v < 0.9 * base ? "true" : "false");
        }
        printf("}%s\n", e + 1 < n_extras ? "," : "");
    }
    printf("  ]\n}\n");
    return 0;
}

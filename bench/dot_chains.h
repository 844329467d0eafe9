/*
 * The register-only loop of 512-bit VPDPBUSD that bench_gemm's int8 peak and bench_ports'
 * latency and throughput figures both time.
 */
#ifndef DLLM_BENCH_DOT_CHAINS_H
#define DLLM_BENCH_DOT_CHAINS_H

/* The chain counts dot_chains_zmm runs. */
extern const int dot_chain_counts[8];

/*
 * Runs iters x n 512-bit VPDPBUSD in n independent chains (n one of dot_chain_counts, else 16),
 * each dot product written as its instruction in place on its accumulator. Needs AVX512-VNNI.
 */
void dot_chains_zmm(long iters, int n);

#endif

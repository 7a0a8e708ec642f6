// The contract between the harness (read-only) and the candidate (gemm.cc): one function.
//
//   C = A * B, single precision, row-major, no leading-dimension padding:
//     A is M x K (A[i*K + k]), B is K x N (B[k*N + j]), C is M x N (C[i*N + j]).
//   C is overwritten (its prior contents are garbage: the harness fills it with NaN before each call).
//   A and B must not be modified. M, N, K >= 1.
//
// Uses: harness.cc calls it in `check` (against a double-precision reference) and in `bench`.
#pragma once

void gemm(int M, int N, int K, const float* A, const float* B, float* C);

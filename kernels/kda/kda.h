/* kda/kda.h: the C API of our KDA (Kimi Delta Attention) forward, FLA `chunk_kda` semantics.
 *
 * Uses: the CUDA implementation exports kda_fwd and kda_fwd_workspace_size (device pointers, a
 * cudaStream_t passed as void*); kda_cpu.cc exports kda_fwd_cpu with the same parameters and contract
 * on host pointers (the reference backend for tests and for the Python module). The helpers
 * (kda_fwd_params_*, kda_status_string, kda_last_error) live in kda_api.cc, in library kda_cpu, which
 * the CUDA library links too. Plain C, so that ctypes can call it and nothing builds against torch.
 *
 * Semantics, per sequence n and head h, S = initial_state[n,h] (or 0), S is [K,V]:
 *   q_t, k_t <- x / sqrt(sum x^2 + 1e-6)                       if KDA_FLAG_L2NORM_QK
 *   g_t      <- the gate activation below (natural-log decay, <= 0)
 *   b_t      <- sigmoid(beta_t), or 2 sigmoid(beta_t) with KDA_FLAG_ALLOW_NEG_EIGVAL,
 *               if KDA_FLAG_BETA_SIGMOID; else beta_t as given
 *   S <- Diag(exp(g_t)) S;  S <- S + b_t k_t (v_t - S^T k_t)^T;  o_t = scale S^T q_t
 *   final_state[n,h] = S
 *
 * Shapes and strides. Strides are in elements; the innermost dimension (K or V) is contiguous.
 *   q, k, g  [B,T,H,K]  strides {b, t, h}        (e.g. contiguous: {T*H*K, H*K, K})
 *   v        [B,T,H,V]  strides {b, t, h}
 *   beta     [B,T,H]    strides {b, t, h}        (contiguous: {T*H, H, 1})
 *   o        [B,T,H,V]  strides {b, t, h}        written
 *   A_log    [H]        fp32, contiguous, optional (in-kernel gates)
 *   dt_bias  [H,K]      fp32, contiguous, optional (in-kernel gates; absent = 0)
 *   initial_state, final_state  [N,H,K,V] fp32, contiguous, optional; with KDA_FLAG_STATE_V_FIRST
 *            both are [N,H,V,K] instead (FLA's state_v_first, the layout of FLA's layer and FlashKDA)
 * Varlen: num_seqs = N > 0 and cu_seqlens = N+1 offsets (0 = cu[0] <= ... <= cu[N] = T) with B == 1;
 * chunks never cross a sequence boundary. num_seqs = 0: B sequences of length T.
 */
#ifndef LONGHAUL_KERNELS_KDA_KDA_H_
#define LONGHAUL_KERNELS_KDA_KDA_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kda_status {
  KDA_OK = 0,
  KDA_ERR_INVALID = 1,      /* malformed parameters (shape, pointer, stride, cu_seqlens, ...) */
  KDA_ERR_UNSUPPORTED = 2,  /* well-formed, but not supported by this backend (e.g. K = 96 on GPU) */
  KDA_ERR_WORKSPACE = 3,    /* workspace missing or smaller than kda_fwd_workspace_size says */
  KDA_ERR_CUDA = 4,         /* a CUDA runtime error (launch, memory) */
} kda_status;

typedef enum kda_dtype {
  KDA_DTYPE_F32 = 0,
  KDA_DTYPE_BF16 = 1,
} kda_dtype;

/* How g becomes the log decay. x = g + dt_bias[h,:] (dt_bias absent: 0). */
typedef enum kda_gate_mode {
  KDA_GATE_LOG_DECAY = 0,            /* g is the natural-log decay itself (the caller keeps it <= 0) */
  KDA_GATE_LOWER_BOUND_SIGMOID = 1,  /* lower_bound * sigmoid(exp(A_log[h]) * x), or
                                        lower_bound * sigmoid(x) when A_log is NULL;
                                        g in [lower_bound, 0) */
  KDA_GATE_SOFTPLUS = 2,             /* -exp(A_log[h]) * softplus(x)  (A_log NULL: -softplus(x)) */
} kda_gate_mode;

enum {
  KDA_FLAG_L2NORM_QK = 1u << 0,        /* L2-normalise q and k over K in the kernel */
  KDA_FLAG_BETA_SIGMOID = 1u << 1,     /* beta <- sigmoid(beta) in the kernel */
  KDA_FLAG_ALLOW_NEG_EIGVAL = 1u << 2, /* with BETA_SIGMOID: beta <- 2 sigmoid(beta) */
  KDA_FLAG_STATE_V_FIRST = 1u << 3,    /* states are [N,H,V,K] rather than [N,H,K,V] */
};

typedef struct kda_fwd_params {
  int32_t B, T, H, K, V;

  /* Varlen (see above). cu_seqlens lives where the tensors live (device memory for kda_fwd);
   * cu_seqlens_host, optional for kda_fwd, is a host copy that spares the launcher a sync. */
  int32_t num_seqs;
  const int64_t* cu_seqlens;
  const int64_t* cu_seqlens_host;

  /* Element types: q, k, v share in_dtype; g_dtype and beta_dtype may differ (FLA's g is often
   * fp32); o is written as out_dtype. */
  kda_dtype in_dtype, g_dtype, beta_dtype, out_dtype;

  const void* q;    int64_t q_stride[3];     /* {b, t, h} */
  const void* k;    int64_t k_stride[3];
  const void* v;    int64_t v_stride[3];
  const void* g;    int64_t g_stride[3];
  const void* beta; int64_t beta_stride[3];
  void* o;          int64_t o_stride[3];

  const float* A_log;          /* [H] or NULL */
  const float* dt_bias;        /* [H*K] or NULL */
  const float* initial_state;  /* [N,H,K,V] or NULL (zeros) */
  float* final_state;          /* [N,H,K,V] or NULL (not written) */

  float scale;                 /* <= 0: 1/sqrt(K) */
  float lower_bound;           /* KDA_GATE_LOWER_BOUND_SIGMOID only; < 0 (the GPU needs >= -5) */
  kda_gate_mode gate;
  uint32_t flags;              /* KDA_FLAG_* */
  int32_t chunk_size;          /* 0: the backend's default (64). The CPU backend takes any
                                  multiple of 16 (or 1..16); the GPU backend what it supports */

  /* Scratch for the chunk-parallel preparation's outputs, device memory for kda_fwd; ignored by
   * the CPU backend. Size it with kda_fwd_workspace_size; NULL with 0 bytes is fine when that is 0. */
  void* workspace;
  size_t workspace_bytes;
} kda_fwd_params;

/* Fills *p with the defaults: contiguous strides are NOT filled (they depend on the shape; see
 * kda_fwd_params_set_contiguous), everything else zero / NULL, dtypes BF16 in and out, g and beta
 * F32, lower_bound -5, gate KDA_GATE_LOG_DECAY. */
void kda_fwd_params_init(kda_fwd_params* p);

/* Sets every stride of q, k, v, g, beta and o to the contiguous layout for p's B, T, H, K, V. */
void kda_fwd_params_set_contiguous(kda_fwd_params* p);

/* Bytes of workspace kda_fwd needs for p. Exported by the CUDA library (kda_fwd_cpu needs none). */
kda_status kda_fwd_workspace_size(const kda_fwd_params* p, size_t* bytes);

/* The forward on the GPU, asynchronous on stream (a cudaStream_t; NULL = the default stream).
 * Exported by the CUDA library. */
kda_status kda_fwd(const kda_fwd_params* p, void* stream);

/* The same forward on the CPU, synchronous, float64 inside (the chunked reference); stream is
 * ignored. Exported by kda_cpu. */
kda_status kda_fwd_cpu(const kda_fwd_params* p, void* stream);

/* sizeof(kda_fwd_params), so that a binding (the ctypes module) can check its copy of the layout. */
size_t kda_fwd_params_bytes(void);

/* A static sentence for a status, and the last error's detail on this thread ("" if none). */
const char* kda_status_string(kda_status s);
const char* kda_last_error(void);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* LONGHAUL_KERNELS_KDA_KDA_H_ */

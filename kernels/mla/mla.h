/* mla/mla.h: the C API of our absorbed MLA attention (DeepSeek-V2/V3 decode form; causal prefill
 * through the same call with s_q = S).
 *
 * Uses: the CUDA implementation (mla_cuda.cu, library libmla_cuda.so) exports mla_fwd and
 * mla_fwd_workspace_size (device pointers, a cudaStream_t passed as void*); mla_cpu.cc exports
 * mla_fwd_cpu with the same parameters and contract on host pointers (the float64 reference: the
 * backend of tests and of the Python module). The helpers (mla_fwd_params_*, mla_status_string,
 * mla_last_error) live in mla_api.cc, in library mla_cpu, which the CUDA library links too. Plain C.
 *
 * Semantics, per entry b, query position i (0 <= i < s_q), head h (see mla/reference.h):
 *   n   = number of keys query i sees: causal (MLA_FLAG_CAUSAL): S_b - s_q + i + 1 clamped to
 *         [0, S_b] (the s_q queries are the LAST s_q positions of the sequence); else S_b
 *   s_t = scale * q[b,i,h,0:576] . kv[b,t,0:576]        (512 latent + 64 rope; one KV row per token
 *                                                        shared by all heads)
 *   o[b,i,h,:]  = softmax_t(s)_{t<n} . kv[b,t,0:512]     (V = the first 512 columns of the cache)
 *   lse[b,i,h]  = ln sum_{t<n} exp(s_t)                  NATURAL log (FlashMLA's convention; base-2
 *                                                        users multiply by log2(e))
 *   n = 0: o = 0, lse = -inf.
 *   scale <= 0 means 1/sqrt(192) (the pre-absorption q.k dim 128 + 64; pass DeepSeek's YaRN-scaled
 *   value explicitly).
 *
 * Shapes and strides (in elements; the innermost dimension contiguous):
 *   q     [B, s_q, H, 576]   q_stride {b, s, h}       contiguous: {s_q*H*576, H*576, 576}
 *   kv    contiguous (block_table NULL): [B, S_max, 576], kv_stride {b, t}: {S_max*576, 576}
 *         paged: [num_pages, 64, 576] (pages of 64 tokens), kv_stride {page, t}: {64*576, 576};
 *         token t of entry b is row t%64 of page block_table[b*block_table_stride + t/64]
 *   block_table int32 [B, max_pages] (row stride block_table_stride >= max_pages) or NULL
 *   seqlens     int32 [B]: S_b, 0 <= S_b <= S_max (contiguous) or max_pages*64 (paged)
 *   o     [B, s_q, H, 512]   o_stride {b, s, h}       written
 *   lse   fp32 [B, s_q, H]   lse_stride {b, s, h}     written; optional (NULL: not written)
 * Rows of the cache past S_b and unused pages are never read into the result (NaN there is fine).
 *
 * Split-KV. The GPU backend runs a split kernel (partials in the workspace) and a combine kernel;
 * the split schedule is mla/schedule.h's rule. The workspace depends on the shape only (B, s_q, H,
 * the SM count, num_parts), not on seqlens, so one allocation serves every step of a decode loop and
 * the launch can be captured in a CUDA graph.
 */
#ifndef LONGHAUL_KERNELS_MLA_MLA_H_
#define LONGHAUL_KERNELS_MLA_MLA_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mla_status {
  MLA_OK = 0,
  MLA_ERR_INVALID = 1,      /* malformed parameters (shape, pointer, stride, seqlens, pages) */
  MLA_ERR_UNSUPPORTED = 2,  /* well-formed, but not supported by this backend */
  MLA_ERR_WORKSPACE = 3,    /* workspace missing or smaller than mla_fwd_workspace_size says */
  MLA_ERR_CUDA = 4,         /* a CUDA runtime error (launch, memory) */
} mla_status;

typedef enum mla_dtype {
  MLA_DTYPE_F32 = 0,
  MLA_DTYPE_BF16 = 1,
} mla_dtype;

enum {
  MLA_FLAG_CAUSAL = 1u << 0, /* causal masking (matters only for s_q > 1) */
};

typedef struct mla_fwd_params {
  int32_t B, s_q, H;

  /* The cache. Contiguous: S_max tokens per entry. Paged: block_table not NULL, num_pages pages,
   * max_pages entries per block-table row. */
  int32_t S_max;
  int32_t num_pages, max_pages;
  const int32_t* block_table;
  int64_t block_table_stride;

  /* Sequence lengths where the tensors live (device memory for mla_fwd). seqlens_host, optional
   * for mla_fwd, is a host copy the launcher only validates. */
  const int32_t* seqlens;
  const int32_t* seqlens_host;

  /* q and kv share in_dtype; o is out_dtype; lse is fp32. The GPU backend: BF16 only, and the
   * latent (V, kv's first 512 columns) below 65504 in magnitude: split partials are fp16. */
  mla_dtype in_dtype, out_dtype;
  const void* q;  int64_t q_stride[3];   /* {b, s, h} */
  const void* kv; int64_t kv_stride[2];  /* {b, t} contiguous or {page, t} paged */
  void* o;        int64_t o_stride[3];   /* {b, s, h} */
  float* lse;     int64_t lse_stride[3]; /* {b, s, h}; lse may be NULL */

  float scale;     /* <= 0: 1/sqrt(192) */
  uint32_t flags;  /* MLA_FLAG_* */

  /* Schedule knobs (GPU backend; the CPU backend ignores them). num_sms 0: the device's SM count.
   * num_parts 0: the schedule's P (schedule.h, which may also split V's columns over two CTAs a
   * part); > 0 forces P, without that split (1 = one split per entry, no combine of partials). */
  int32_t num_sms;
  int32_t num_parts;

  /* Scratch for the split partials and the schedule, device memory for mla_fwd, 256-byte aligned;
   * ignored by the CPU backend. Size it with mla_fwd_workspace_size. */
  void* workspace;
  size_t workspace_bytes;
} mla_fwd_params;

/* Fills *p with the defaults: everything zero / NULL, dtypes BF16 in and out, flags CAUSAL. */
void mla_fwd_params_init(mla_fwd_params* p);

/* Sets q, o and lse strides to the contiguous layout for B, s_q, H, and kv_stride to the contiguous
 * cache ([B, S_max, 576]) or, when block_table is set, the paged one ([num_pages, 64, 576]). */
void mla_fwd_params_set_contiguous(mla_fwd_params* p);

/* Bytes of workspace mla_fwd needs for p's shape (B, s_q, H, num_sms, num_parts). CUDA library. */
mla_status mla_fwd_workspace_size(const mla_fwd_params* p, size_t* bytes);

/* The attention on the GPU, asynchronous on stream (a cudaStream_t; NULL = the default stream):
 * three launches (schedule, split, combine), no host sync, graph-capturable. CUDA library. */
mla_status mla_fwd(const mla_fwd_params* p, void* stream);

/* The same on the CPU, synchronous, float64 inside (mla/reference.h), o rounded to out_dtype
 * (bf16: round to nearest even); stream is ignored. Exported by mla_cpu. */
mla_status mla_fwd_cpu(const mla_fwd_params* p, void* stream);

/* sizeof(mla_fwd_params), so that a binding (the ctypes module) can check its copy of the layout. */
size_t mla_fwd_params_bytes(void);

/* A static sentence for a status, and the last error's detail on this thread ("" if none). */
const char* mla_status_string(mla_status s);
const char* mla_last_error(void);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* LONGHAUL_KERNELS_MLA_MLA_H_ */

// The cuBLASLt calls of LtLinear.cpp on the CPU emulation: descriptors keep what was set on them,
// the heuristic offers one algorithm that needs no workspace, and a matmul is a plain loop in f32
// (also for CUBLAS_COMPUTE_32F_FAST_TF32: the emulation is more exact than TF32) enqueued on its
// stream like a kernel, with the descriptors' values of the moment it was called (as a captured
// matmul keeps them).
#include "CudaEmulation.h"

#include <cublasLt.h>

#include <cmath>
#include <cstdint>

struct cublasLtContext {};

namespace {

struct Desc {
  cublasOperation_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bias = nullptr;
  cudaDataType_t biasType = CUDA_R_32F;
  bool biasTypeSet = false;
};

struct Layout {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
};

float load(const void *p, cudaDataType_t t, size_t i) {
  switch (t) {
  case CUDA_R_16F: return __half2float(static_cast<const __half *>(p)[i]);
  case CUDA_R_16BF: return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  default: return static_cast<const float *>(p)[i];
  }
}

void store(void *p, cudaDataType_t t, size_t i, float v) {
  switch (t) {
  case CUDA_R_16F: static_cast<__half *>(p)[i] = __float2half_rn(v); break;
  case CUDA_R_16BF: static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v); break;
  default: static_cast<float *>(p)[i] = v;
  }
}

// Element (r, c) of a column-major matrix, transposed or not.
float at(const void *p, const Layout &l, cublasOperation_t op, uint64_t r, uint64_t c) {
  return op == CUBLAS_OP_N ? load(p, l.type, size_t(c) * size_t(l.ld) + r) : load(p, l.type, size_t(r) * size_t(l.ld) + c);
}

float epilogue(cublasLtEpilogue_t e, float v) {
  if (e == CUBLASLT_EPILOGUE_RELU || e == CUBLASLT_EPILOGUE_RELU_BIAS)
    return v > 0.0f ? v : 0.0f;
  if (e == CUBLASLT_EPILOGUE_GELU || e == CUBLASLT_EPILOGUE_GELU_BIAS) // the tanh approximation
    return 0.5f * v * (1.0f + std::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  return v;
}

bool hasBias(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS;
}

} // namespace

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  *handle = new cublasLtContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}
const char *cublasLtGetStatusName(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_ERROR (emulated)";
}
const char *cublasLtGetStatusString(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS ? "success" : "error"; }

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc, cublasComputeType_t, cudaDataType_t) {
  *desc = reinterpret_cast<cublasLtMatmulDesc_t>(new Desc);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete reinterpret_cast<Desc *>(desc);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t bytes) {
  Desc &d = *reinterpret_cast<Desc *>(desc);
  switch (attr) {
  case CUBLASLT_MATMUL_DESC_TRANSA: std::memcpy(&d.transA, buf, bytes); break;
  case CUBLASLT_MATMUL_DESC_TRANSB: std::memcpy(&d.transB, buf, bytes); break;
  case CUBLASLT_MATMUL_DESC_EPILOGUE: std::memcpy(&d.epilogue, buf, bytes); break;
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER: std::memcpy(&d.bias, buf, bytes); break;
  case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: std::memcpy(&d.biasType, buf, bytes), d.biasTypeSet = true; break;
  default: return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  if (ld < int64_t(rows))
    return CUBLAS_STATUS_INVALID_VALUE;
  *layout = reinterpret_cast<cublasLtMatrixLayout_t>(new Layout{type, rows, cols, ld});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete reinterpret_cast<Layout *>(layout);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
  *pref = reinterpret_cast<cublasLtMatmulPreference_t>(new char[1]);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete[] reinterpret_cast<char *>(pref);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                                                    const void *, size_t) {
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatmulPreference_t, int requested,
                                              cublasLtMatmulHeuristicResult_t *results, int *found) {
  *found = 0;
  if (requested < 1)
    return CUBLAS_STATUS_INVALID_VALUE;
  results[0] = cublasLtMatmulHeuristicResult_t{};
  results[0].state = CUBLAS_STATUS_SUCCESS;
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t aDesc, const void *B, cublasLtMatrixLayout_t bDesc,
                              const void *beta, const void *C, cublasLtMatrixLayout_t cDesc, void *D,
                              cublasLtMatrixLayout_t dDesc, const cublasLtMatmulAlgo_t *, void *, size_t,
                              cudaStream_t stream) {
  const Desc d = *reinterpret_cast<const Desc *>(desc);
  const Layout a = *reinterpret_cast<const Layout *>(aDesc), b = *reinterpret_cast<const Layout *>(bDesc),
               c = *reinterpret_cast<const Layout *>(cDesc), out = *reinterpret_cast<const Layout *>(dDesc);
  const uint64_t m = d.transA == CUBLAS_OP_N ? a.rows : a.cols, k = d.transA == CUBLAS_OP_N ? a.cols : a.rows;
  const uint64_t kb = d.transB == CUBLAS_OP_N ? b.rows : b.cols, n = d.transB == CUBLAS_OP_N ? b.cols : b.rows;
  if (k != kb || out.rows != m || out.cols != n || c.rows != m || c.cols != n || (hasBias(d.epilogue) && !d.bias))
    return CUBLAS_STATUS_INVALID_VALUE;
  const float scale = *static_cast<const float *>(alpha), keep = *static_cast<const float *>(beta);
  const cudaDataType_t biasType = d.biasTypeSet ? d.biasType : out.type;
  llmc_emu::enqueue(stream, [=] {
    for (uint64_t j = 0; j < n; ++j)
      for (uint64_t i = 0; i < m; ++i) {
        float acc = 0.0f;
        for (uint64_t p = 0; p < k; ++p)
          acc += at(A, a, d.transA, i, p) * at(B, b, d.transB, p, j);
        float v = scale * acc + (keep != 0.0f ? keep * load(C, c.type, size_t(j) * size_t(c.ld) + i) : 0.0f);
        if (hasBias(d.epilogue))
          v += load(d.bias, biasType, i);
        store(D, out.type, size_t(j) * size_t(out.ld) + i, epilogue(d.epilogue, v));
      }
  });
  return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"

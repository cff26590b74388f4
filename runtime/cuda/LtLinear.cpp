#include "LtLinear.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

namespace llmc::rt::cuda {
namespace {

cudaDataType_t dataType(Storage s) {
  return s == Storage::F32 ? CUDA_R_32F : s == Storage::F16 ? CUDA_R_16F : CUDA_R_16BF;
}

std::string failed(const char *what, cublasStatus_t st) {
  return std::string("cuBLASLt ") + what + ": " + cublasLtGetStatusName(st) + " (" + cublasLtGetStatusString(st) + ")";
}

// The M of each size class an algorithm is chosen for: decode (1), small and large batches.
std::vector<int64_t> sizeClasses(int64_t maxM) {
  std::vector<int64_t> classes;
  for (int64_t m : {int64_t(1), int64_t(16), int64_t(128), int64_t(1024)})
    if (m < maxM)
      classes.push_back(m);
  classes.push_back(maxM);
  return classes;
}

} // namespace

// Column-major view of the row-major product: yᵀ [N, M] = Wᵀ [N, K] · xᵀ [K, M], so W is
// cuBLASLt's A (a column-major N x K with leading dimension N, or K x N transposed with transB),
// x its B (K x M, leading dimension K) and y its D (N x M, leading dimension N); the bias then
// runs along D's rows, which is what CUBLASLT_EPILOGUE_BIAS adds.
struct LtLinear::Impl {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr;
  std::vector<int64_t> classes;
  std::vector<cublasLtMatmulAlgo_t> algos; // per size class
  size_t workspaceBytes = 0;

  ~Impl() {
    if (a)
      cublasLtMatrixLayoutDestroy(a);
    if (op)
      cublasLtMatmulDescDestroy(op);
  }
};

LtLinear::~LtLinear() = default;

static std::string layouts(const LinearSpec &s, int64_t M, cublasLtMatrixLayout_t &b, cublasLtMatrixLayout_t &d) {
  if (cublasStatus_t st = cublasLtMatrixLayoutCreate(&b, dataType(s.storage), uint64_t(s.K), uint64_t(M), s.K);
      st != CUBLAS_STATUS_SUCCESS)
    return failed("layout", st);
  if (cublasStatus_t st = cublasLtMatrixLayoutCreate(&d, dataType(s.storage), uint64_t(s.N), uint64_t(M), s.N);
      st != CUBLAS_STATUS_SUCCESS) {
    cublasLtMatrixLayoutDestroy(b);
    return failed("layout", st);
  }
  return {};
}

std::string LtLinear::create(void *handle, const LinearSpec &spec, size_t workspaceBytes, std::unique_ptr<LtLinear> &out) {
  if (spec.maxM < 1 || spec.N < 1 || spec.K < 1)
    return "linear: M, N and K must be positive";
  cublasLtEpilogue_t epilogue;
  if (spec.activation == "none")
    epilogue = spec.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  else if (spec.activation == "relu")
    epilogue = spec.bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  else if (spec.activation == "gelu_tanh")
    epilogue = spec.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  else
    return "linear: cuBLASLt has no '" + spec.activation + "' epilogue (run it as an elementwise kernel after)";
  auto lt = std::unique_ptr<LtLinear>(new LtLinear());
  lt->spec_ = spec;
  lt->impl_ = std::make_unique<Impl>();
  Impl &im = *lt->impl_;
  im.handle = static_cast<cublasLtHandle_t>(handle);
  im.workspaceBytes = workspaceBytes;
  const cublasComputeType_t compute =
      spec.storage == Storage::F32 && spec.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  if (cublasStatus_t st = cublasLtMatmulDescCreate(&im.op, compute, CUDA_R_32F); st != CUBLAS_STATUS_SUCCESS)
    return failed("matmul descriptor", st);
  const cublasOperation_t transA = spec.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(im.op, CUBLASLT_MATMUL_DESC_TRANSA, &transA, sizeof transA);
  cublasLtMatmulDescSetAttribute(im.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
  if (spec.bias) {
    const cudaDataType_t biasType = dataType(spec.storage);
    cublasLtMatmulDescSetAttribute(im.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType, sizeof biasType);
  }
  // W: N x K column-major (ld N), or stored K x N and transposed (transB: W is [N, K] row-major).
  const uint64_t rows = uint64_t(spec.transB ? spec.K : spec.N), cols = uint64_t(spec.transB ? spec.N : spec.K);
  if (cublasStatus_t st = cublasLtMatrixLayoutCreate(&im.a, dataType(spec.storage), rows, cols, int64_t(rows));
      st != CUBLAS_STATUS_SUCCESS)
    return failed("layout", st);
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes,
                                       sizeof workspaceBytes);
  std::string error;
  im.classes = sizeClasses(spec.maxM);
  for (int64_t m : im.classes) {
    cublasLtMatrixLayout_t b, d;
    if (error = layouts(spec, m, b, d); !error.empty())
      break;
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(im.handle, im.op, im.a, b, d, d, pref, 1, &result, &found);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(d);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
      error = st != CUBLAS_STATUS_SUCCESS ? failed("heuristic", st)
                                          : "cuBLASLt found no algorithm for M=" + std::to_string(m) + ", N=" +
                                                std::to_string(spec.N) + ", K=" + std::to_string(spec.K);
      break;
    }
    im.algos.push_back(result.algo);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  if (!error.empty())
    return error;
  out = std::move(lt);
  return {};
}

std::string LtLinear::run(const void *x, const void *w, const void *bias, void *y, int64_t M, void *workspace,
                          void *stream) const {
  const Impl &im = *impl_;
  if (M < 1 || M > spec_.maxM)
    return "linear: M = " + std::to_string(M) + " is outside 1.." + std::to_string(spec_.maxM);
  if (spec_.bias) {
    if (!bias)
      return "linear: the bias is missing";
    cublasLtMatmulDescSetAttribute(im.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  }
  size_t c = 0;
  while (im.classes[c] < M)
    ++c;
  cublasLtMatrixLayout_t b, d;
  if (std::string error = layouts(spec_, M, b, d); !error.empty())
    return error;
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t st = cublasLtMatmul(im.handle, im.op, &one, w, im.a, x, b, &zero, y, d, y, d, &im.algos[c], workspace,
                                     im.workspaceBytes, static_cast<cudaStream_t>(stream));
  if (st == CUBLAS_STATUS_NOT_SUPPORTED) // the size class's algorithm cannot take this M: let cuBLASLt choose
    st = cublasLtMatmul(im.handle, im.op, &one, w, im.a, x, b, &zero, y, d, y, d, nullptr, workspace,
                        im.workspaceBytes, static_cast<cudaStream_t>(stream));
  cublasLtMatrixLayoutDestroy(b);
  cublasLtMatrixLayoutDestroy(d);
  return st == CUBLAS_STATUS_SUCCESS ? std::string() : failed("matmul", st);
}

} // namespace llmc::rt::cuda

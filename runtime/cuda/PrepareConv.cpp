// Convolutions on the CUDA executor (PrepareOps.h). One group (every convolution of ResNet-50):
// im2col then a cuBLASLt GEMM, as the CPU kernel computes it, on tensor cores in 16-bit storage
// or with TF32; the GEMM's rows [images * positions, M] then go to [images, M, positions] by a
// tiled transpose. A 1x1 convolution of stride 1 without padding (36 of ResNet-50's 53) takes
// its rows by that transpose too, its image [C, positions] being their [positions, C]. Grouped
// ones (depthwise), and shapes cuBLASLt finds no algorithm for, on the direct kernel (a thread
// per output element, correct-first).
#include "LtLinear.h"
#include "PrepareOps.h"

#include <algorithm>

namespace llmc::rt::cuda::exec {

namespace {

// The most scratch one convolution may take (its im2col rows and the GEMM's output rows, in the
// arena's scratch slot): a batch beyond it goes in chunks of whole images. ResNet-50's largest at
// batch 1 (its first layer, f32): 10.6 MB.
constexpr size_t kConvScratchCap = size_t(64) << 20;

// Whether each output position reads its input position alone (a 1x1 kernel, stride 1, no padding).
bool pointwise(const Window &w) {
  for (int d = 0; d < w.spatial; ++d)
    if (w.kernel[d] != 1 || w.stride[d] != 1 || w.padBegin[d] != 0 || w.out[d] != w.in[d])
      return false;
  return true;
}

std::string directConv(Executor &e, const PlanOp &op, int type, bool bias, const std::vector<TensorRef> &t) {
  const Shape &x = t[size_t(op.inputs[0])].shape, &w = t[size_t(op.inputs[1])].shape;
  const Shape &y = t[size_t(op.outputs[0])].shape;
  Window win;
  if (std::string err = windowOf(op, x, y, w.dims + 2, win); !err.empty())
    return err;
  return conv(type, e.at(op.inputs[0]), e.at(op.inputs[1]), bias ? e.at(op.inputs[2]) : nullptr, e.at(op.outputs[0]),
              x.dims[0], x.dims[1], w.dims[0], op.attrs.getInt("group", 1), win, e.stream);
}

} // namespace

std::string windowOf(const PlanOp &op, const Shape &x, const Shape &y, const int64_t *kernel, Window &w) {
  w.spatial = x.rank - 2;
  if (w.spatial < 1 || w.spatial > 3 || y.rank != x.rank)
    return "needs 1 to 3 spatial dimensions";
  const std::vector<int64_t> pads = op.attrs.getInts("pads"), strides = op.attrs.getInts("strides"),
                             dilations = op.attrs.getInts("dilations");
  for (int d = 0; d < w.spatial; ++d) {
    w.in[d] = x.dims[d + 2], w.out[d] = y.dims[d + 2], w.kernel[d] = kernel[d];
    w.padBegin[d] = pads.size() == size_t(2 * w.spatial) ? pads[size_t(d)] : 0;
    w.padEnd[d] = pads.size() == size_t(2 * w.spatial) ? pads[size_t(d + w.spatial)] : 0;
    w.stride[d] = strides.size() == size_t(w.spatial) ? strides[size_t(d)] : 1;
    w.dilation[d] = dilations.size() == size_t(w.spatial) ? dilations[size_t(d)] : 1;
  }
  return {};
}

std::string prepareConv(Executor &ex, const PlanOp &op, PreparedOp &out, size_t &scratchBytes) {
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  const PlanValue &w = ex.plan->values[size_t(op.inputs[1])];
  const int biasAt = op.inputs.size() > 2 ? op.inputs[2] : -1;
  const int type = commonFloatType(ex, {op.inputs[0], op.inputs[1], biasAt, op.outputs[0]});
  if (!type || (op.attrs.find("auto_pad") && op.attrs.getString("auto_pad") != "NOTSET"))
    return "supports float inputs, weights and biases of one type and explicit pads";
  const bool bias = biasAt >= 0;
  out.launch = [&op, bias, type](Executor &e, const std::vector<TensorRef> &t) {
    return directConv(e, op, type, bias, t);
  };
  // The GEMM: rows im2col's (an image's output positions), the weight [M, C * kernel] as the
  // linear's [N, K]; its rows at most the output's capacity over M, and the scratch cap. Not for
  // doubles, which cuBLASLt's tensor-core paths do not take: those stay on the direct kernel.
  const int64_t M = w.shape.rank >= 3 ? w.shape.dims[0] : 0;
  if (!ex.convGemm || type == int(DType::F64) || op.attrs.getInt("group", 1) != 1 || w.kind != fb::ValueKind_Weight ||
      M <= 0)
    return {};
  const PlanValue &y = ex.plan->values[size_t(op.outputs[0])];
  const size_t elem = storageBytes(st);
  LinearSpec spec;
  spec.storage = st, spec.N = M, spec.K = w.shape.numel() / M, spec.transB = true, spec.bias = bias;
  spec.tf32 = ex.plan->tf32;
  const int64_t outputRows = int64_t(y.capacity / dtypeSize(y.dtype)) / M;
  const int64_t capRows = int64_t(kConvScratchCap / (size_t(spec.K + M) * elem));
  spec.maxM = std::max<int64_t>(1, std::min(outputRows, capRows));
  if (ex.convRows > 0)
    spec.maxM = std::min(spec.maxM, ex.convRows);
  const size_t colBytes = aligned(size_t(spec.maxM * spec.K) * elem);
  const size_t need = colBytes + aligned(size_t(spec.maxM * M) * elem);
  std::unique_ptr<LtLinear> linear;
  if (!ex.dry && !LtLinear::create(ex.lt, spec, ex.workspaceBytes, linear).empty())
    return {}; // no algorithm for these sizes: the direct kernel
  scratchBytes = std::max(scratchBytes, need);
  if (ex.dry)
    return {};
  const LtLinear *gemm = linear.get();
  ex.linears.push_back(std::move(linear));
  const int64_t K = spec.K, maxRows = spec.maxM;
  out.launch = [&op, bias, type, st, gemm, K, M, maxRows, colBytes, elem](Executor &e,
                                                                          const std::vector<TensorRef> &t) {
    const Shape &xs = t[size_t(op.inputs[0])].shape, &ws = t[size_t(op.inputs[1])].shape;
    const Shape &ys = t[size_t(op.outputs[0])].shape;
    Window win;
    if (std::string err = windowOf(op, xs, ys, ws.dims + 2, win); !err.empty())
      return err;
    const int64_t N = xs.dims[0], C = xs.dims[1], positions = productOf(win.out, win.spatial);
    if (positions > maxRows || C * productOf(win.kernel, win.spatial) != K) // an image's rows beyond the scratch
      return directConv(e, op, type, bias, t);
    // Whole images per launch, at most 65535 (transposeBatched's matrices).
    const int64_t perChunk = std::min<int64_t>(maxRows / positions, 65535), imageOut = M * positions;
    const int64_t imageIn = C * productOf(win.in, win.spatial);
    char *col = static_cast<char *>(e.arena), *rows = col + colBytes; // the scratch slot opens the arena
    const char *xp = static_cast<const char *>(e.at(op.inputs[0]));
    char *yp = static_cast<char *>(e.at(op.outputs[0]));
    const bool transposeOnly = pointwise(win);
    for (int64_t b = 0; b < N; b += perChunk) {
      const int64_t images = std::min(perChunk, N - b);
      const char *x = xp + size_t(b * imageIn) * elem;
      if (std::string err = transposeOnly ? transposeBatched(x, col, images, C, positions, int(elem), e.stream)
                                          : im2col(st, x, col, images, C, win, e.stream);
          !err.empty())
        return err;
      if (std::string err = gemm->run(col, e.at(op.inputs[1]), bias ? e.at(op.inputs[2]) : nullptr, rows,
                                       images * positions, e.workspace, e.stream);
          !err.empty())
        return err;
      // [images, positions, M] to [images, M, positions].
      if (std::string err = transposeBatched(rows, yp + size_t(b * imageOut) * elem, images, positions, M, int(elem),
                                             e.stream);
          !err.empty())
        return err;
    }
    return std::string();
  };
  return {};
}

} // namespace llmc::rt::cuda::exec

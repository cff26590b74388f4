// The CUDA executor's op dispatch, data movement, small ops, reductions, pooling and padding,
// prepared (PrepareOps.h).
#include "PrepareOps.h"
#include "KernelUtil.h"
#include "PlanShortcuts.h"

#include <algorithm>

namespace llmc::rt::cuda::exec {

namespace {

StridedCopy copyOf(const Shape &dims, int elemBytes) {
  StridedCopy c;
  c.rank = dims.rank, c.elemBytes = elemBytes;
  for (int d = 0; d < dims.rank; ++d)
    c.dims[d] = dims.dims[d];
  contiguousStrides(dims, c.dst);
  contiguousStrides(dims, c.src);
  return c;
}

// Whether `perm` keeps every axis but the last two, which it swaps.
bool swapsLastTwo(const std::vector<int64_t> &perm) {
  const size_t rank = perm.size();
  for (size_t d = 0; d + 2 < rank; ++d)
    if (perm[d] != int64_t(d))
      return false;
  return rank >= 2 && perm[rank - 2] == int64_t(rank - 1) && perm[rank - 1] == int64_t(rank - 2);
}

// The lines of `s` along op's "axis" (default `fallbackAxis`, negative from the end): [outer, n, inner].
std::string linesAlong(const PlanOp &op, const Shape &s, int64_t fallbackAxis, int64_t &outer, int64_t &n,
                       int64_t &inner) {
  const int axis = normalizeAxis(op.attrs.getInt("axis", fallbackAxis), s.rank);
  if (axis < 0 || axis >= s.rank)
    return "axis out of range";
  splitAround(s, axis, outer, n, inner);
  return {};
}

// The pieces of a split or a concat, launched together (kMaxCopies at a time): one launch where
// a piece each took one.
class CopyBatch {
public:
  CopyBatch(void *stream, bool overlap) : stream_(stream), overlap_(overlap) {}
  std::string add(const void *src, void *dst, const StridedCopy &c) {
    if (batch_.count == kMaxCopies)
      if (std::string err = flush(); !err.empty())
        return err;
    batch_.src[batch_.count] = src, batch_.dst[batch_.count] = dst, batch_.copy[batch_.count] = c;
    ++batch_.count;
    return {};
  }
  std::string flush() {
    std::string err = batch_.count ? stridedCopies(batch_, stream_) : std::string();
    batch_.count = 0;
    return err;
  }
  // The pieces left and a rotated one, in one launch.
  std::string flushWithRotary(Storage st, const RotaryArgs &rotary) {
    std::string err = stridedCopiesAndRotary(st, batch_, rotary, stream_, overlap_);
    batch_.count = 0;
    return err;
  }

private:
  StridedCopies batch_;
  void *stream_;
  bool overlap_; // the rotary launch's programmatic dependent launch (Executor::overlapLaunches)
};

// (The arena gives the output the input's bytes, so this launches nothing; see layoutArena.)
std::string prepareCopy(Executor &ex, const PlanOp &op, PreparedOp &out) {
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  out.launch = [&op](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    const size_t bytes = deviceBytesOf(e, op.outputs[0], t[size_t(op.outputs[0])].shape);
    if (bytes != deviceBytesOf(e, op.inputs[0], t[size_t(op.inputs[0])].shape))
      return "the output's size differs from the input's";
    if (bytes && e.at(op.outputs[0]) != e.at(op.inputs[0]))
      if (cudaError_t err = cudaMemcpyAsync(e.at(op.outputs[0]), e.at(op.inputs[0]), bytes, cudaMemcpyDeviceToDevice, e.stream);
          err != cudaSuccess)
        return cudaError("copy", err);
    return std::string();
  };
  return {};
}

std::string prepareDataMovement(Executor &ex, const PlanOp &op, PreparedOp &out, int index) {
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  const int elem = int(dtypeSize(onDevice(ex.plan->values[size_t(op.inputs[0])])));
  const std::string &k = op.kernel;
  std::vector<int64_t> starts = op.attrs.getInts("starts"); // a slice's; a dynamic_slice's where constant
  if (k == "transpose") {
    out.launch = [&op, elem](Executor &e, const std::vector<TensorRef> &t) {
      const Shape &in = t[size_t(op.inputs[0])].shape, &o = t[size_t(op.outputs[0])].shape;
      // The rows of a linked cache that their maker wrote where this transpose puts them
      // (chooseInPlace): nothing to move.
      if (!e.cacheRows.empty() && e.cacheRows[size_t(op.outputs[0])] >= 0)
        return std::string();
      const std::vector<int64_t> perm = permOf(op, in.rank);
      // Swapping the last two axes (an attention's keys to [..., D, S] where llmc-raise-attention
      // left it as matmuls): through 32 x 32 tiles, so that the writes go along rows too, as the
      // strided copy's do not there.
      if (swapsLastTwo(perm) && (elem == 2 || elem == 4) && rowsBefore(in, in.rank - 2) <= 65535)
        return transposeBatched(e.at(op.inputs[0]), e.at(op.outputs[0]), rowsBefore(in, in.rank - 2),
                                in.dims[in.rank - 2], in.dims[in.rank - 1], elem, e.stream);
      StridedCopy c = copyOf(o, elem);
      int64_t inStrides[kMaxRank];
      contiguousStrides(in, inStrides);
      for (int d = 0; d < o.rank; ++d)
        c.src[d] = inStrides[perm[size_t(d)]];
      return stridedCopy(e.at(op.inputs[0]), e.at(op.outputs[0]), c, e.stream);
    };
  } else if (k == "dynamic_slice" && !constantInts(*ex.plan, op.inputs[1], starts)) {
    // Starts that the device computes: the kernel reads them (a dynamic_slice's ends only decide
    // the output shape, which the plan's dimension expressions give).
    const PlanValue &startsValue = ex.plan->values[size_t(op.inputs[1])];
    const std::vector<int64_t> axes = op.attrs.getInts("axes"), steps = op.attrs.getInts("steps");
    if ((startsValue.dtype != DType::I64 && startsValue.dtype != DType::I32) || startsValue.shape.rank != 1 ||
        axes.size() > size_t(kMaxDims) || (!steps.empty() && steps.size() != axes.size()))
      return "needs 1-D int32 or int64 starts, one per axis, and as many steps as axes";
    out.launch = [&op, elem, axes, steps, int32 = startsValue.dtype == DType::I32](
                     Executor &e, const std::vector<TensorRef> &t) -> std::string {
      const Shape &in = t[size_t(op.inputs[0])].shape, &o = t[size_t(op.outputs[0])].shape;
      if (t[size_t(op.inputs[1])].numel() != int64_t(axes.size()))
        return "starts has " + std::to_string(t[size_t(op.inputs[1])].numel()) + " entries for " +
               std::to_string(axes.size()) + " axes";
      StridedCopy c = copyOf(o, elem);
      SliceStarts starts;
      starts.values = e.at(op.inputs[1]), starts.int32 = int32, starts.count = int(axes.size());
      int64_t inStrides[kMaxRank];
      contiguousStrides(in, inStrides);
      for (int d = 0; d < in.rank; ++d)
        c.src[d] = inStrides[d];
      for (size_t i = 0; i < axes.size(); ++i) {
        const int d = int(axes[i] < 0 ? axes[i] + in.rank : axes[i]);
        if (d < 0 || d >= in.rank)
          return std::string("an axis out of range");
        const int64_t step = steps.empty() ? 1 : steps[i];
        starts.axes[i] = d, starts.inDims[i] = in.dims[d], starts.inStrides[i] = inStrides[d], starts.steps[i] = step;
        c.src[d] = inStrides[d] * step;
      }
      return slicedCopy(e.at(op.inputs[0]), e.at(op.outputs[0]), c, starts, e.errorFlag, e.stream);
    };
  } else if (k == "slice" || k == "dynamic_slice") {
    out.launch = [&op, elem, starts](Executor &e, const std::vector<TensorRef> &t) -> std::string {
      const Shape &in = t[size_t(op.inputs[0])].shape, &o = t[size_t(op.outputs[0])].shape;
      const std::vector<int64_t> axes = op.attrs.getInts("axes"), steps = op.attrs.getInts("steps");
      if (!axes.empty() && axes.size() != starts.size())
        return std::string("starts and axes differ in length");
      StridedCopy c = copyOf(o, elem);
      int64_t inStrides[kMaxRank];
      contiguousStrides(in, inStrides);
      for (int d = 0; d < in.rank; ++d)
        c.src[d] = inStrides[d];
      for (size_t i = 0; i < starts.size(); ++i) {
        const int d = int(axes.empty() ? int64_t(i) : (axes[i] < 0 ? axes[i] + in.rank : axes[i]));
        const int64_t step = steps.empty() ? 1 : steps[i], dim = in.dims[d];
        int64_t begin = starts[i] < 0 ? starts[i] + dim : starts[i];
        begin = step > 0 ? std::clamp<int64_t>(begin, 0, dim) : std::clamp<int64_t>(begin, 0, dim - 1);
        c.srcBase += begin * inStrides[d];
        c.src[d] = inStrides[d] * step;
      }
      return stridedCopy(e.at(op.inputs[0]), e.at(op.outputs[0]), c, e.stream);
    };
  } else if (k == "concat") {
    // Two pieces along the leading axis (a cache and its new rows): the second piece's place,
    // the first's row count, comes from the length table (LengthFreeGraph.h).
    const PlanValue &first = ex.plan->values[size_t(op.inputs[0])];
    if (op.inputs.size() == 2 && first.shape.rank > 0 && axisOf(op, first.shape.rank) == 0) {
      out.lengthSlot = ex.lengthSlots++;
      out.length = [&op](const std::vector<TensorRef> &t) { return t[size_t(op.inputs[0])].shape.dims[0]; };
    }
    out.launch = [&op, elem, slot = out.lengthSlot](Executor &e, const std::vector<TensorRef> &t) -> std::string {
      const Shape &o = t[size_t(op.outputs[0])].shape;
      const int axis = axisOf(op, o.rank);
      int64_t outStrides[kMaxRank], at = 0;
      contiguousStrides(o, outStrides);
      // A linked cache's new rows that this concatenation makes (inPlaceOf: DeepSeek's latent row,
      // its normed part and its rotated part): written at the cache's end, in the rows' order, or
      // a batch's where the transposes after it would put them (chooseInPlace).
      const ShiftedOutput into = slot < 0 ? destinationOf(e, op.outputs[0], t) : ShiftedOutput{e.at(op.outputs[0])};
      CopyBatch batch(e.stream, e.overlapLaunches);
      for (size_t piece = 0; piece < op.inputs.size(); ++piece) {
        const int i = op.inputs[piece];
        const Shape &in = t[size_t(i)].shape;
        StridedCopy c = copyOf(in, elem);
        for (int d = 0; d < o.rank; ++d)
          c.dst[d] = outStrides[d];
        if (slot >= 0 && piece == 1) // after as many rows as the first piece has
          c.dstShift = e.lengths + slot, c.dstShiftStride = outStrides[0];
        else
          c.dstBase = at * outStrides[axis];
        if (into.shift)
          c.dstShift = into.shift, c.dstShiftStride = into.shiftStride;
        if (into.batchStride) // rows [B, (1,) S, W] placed by batch and token (chooseInPlace)
          c.dst[0] = into.batchStride, c.dst[o.rank - 2] = into.tokenStride;
        at += in.dims[axis];
        // A cache kept on the device: the past rows already lie where the present puts them, and
        // the new ones where their producer wrote them (inPlaceOf).
        if (e.at(i) == into.base && c.dstBase == 0 && !c.dstShift && std::equal(c.src, c.src + c.rank, c.dst))
          continue;
        if (piece == 1 && !e.cacheRows.empty() && e.cacheRows[size_t(i)] >= 0)
          continue;
        if (std::string err = batch.add(e.at(i), into.base, c); !err.empty())
          return err;
      }
      return batch.flush();
    };
  } else if (k == "split") {
    out.chainable = true;
    out.launch = [&op, elem, st, index](Executor &e, const std::vector<TensorRef> &t) -> std::string {
      if (const int linear = e.linearOfSplit.empty() ? -1 : e.linearOfSplit[size_t(index)]; linear >= 0)
        if (SmallLinearArgs a; smallLinearCall(e, linear, t, st, a) && a.pieces > 0)
          return std::string(); // the linear wrote the pieces (addOutputPieces)
      if (std::string err = flushChainedLinears(e); !err.empty())
        return err;
      const Shape &in = t[size_t(op.inputs[0])].shape;
      const int axis = axisOf(op, in.rank);
      int64_t inStrides[kMaxRank], at = 0;
      contiguousStrides(in, inStrides);
      // A piece that a rotary op turns (inPlaceOf): rotated here, from the input's rows.
      const Executor::SplitRotary fused = e.rotaryOfSplit.empty() ? Executor::SplitRotary() : e.rotaryOfSplit[size_t(index)];
      RotaryArgs rotaryPiece;
      CopyBatch batch(e.stream, e.overlapLaunches);
      for (int o : op.outputs) {
        const Shape &part = t[size_t(o)].shape;
        if (o == fused.piece) {
          if (std::string err = rotaryArgsOf(e, e.plan->ops[size_t(fused.rotary)], t, rotaryPiece); !err.empty())
            return err;
          rotaryPiece.x = static_cast<const char *>(e.at(op.inputs[0])) + at * elem;
          rotaryPiece.xRowStride = in.dims[in.rank - 1];
          at += part.dims[axis];
          continue;
        }
        StridedCopy c = copyOf(part, elem);
        for (int d = 0; d < in.rank; ++d)
          c.src[d] = inStrides[d];
        c.srcBase = at * inStrides[axis];
        at += part.dims[axis];
        const ShiftedOutput d = destinationOf(e, o, t);
        c.dstShift = d.shift, c.dstShiftStride = d.shiftStride;
        if (d.batchStride) // rows [B, S, W] placed by batch and token (chooseInPlace)
          c.dst[0] = d.batchStride, c.dst[1] = d.tokenStride;
        if (std::string err = batch.add(e.at(op.inputs[0]), d.base, c); !err.empty())
          return err;
      }
      return fused.rotary >= 0 ? batch.flushWithRotary(st, rotaryPiece) : batch.flush();
    };
  } else if (k == "expand") {
    out.launch = [&op, elem](Executor &e, const std::vector<TensorRef> &t) {
      const Shape &o = t[size_t(op.outputs[0])].shape;
      StridedCopy c = copyOf(o, elem);
      broadcastStridesTo(t[size_t(op.inputs[0])].shape, o, c.src);
      return stridedCopy(e.at(op.inputs[0]), e.at(op.outputs[0]), c, e.stream);
    };
  } else if (k == "trilu") {
    int64_t diagonal = 0; // k: a constant of the plan, or read by the kernel (an int64 input)
    bool kOnDevice = false;
    if (op.inputs.size() > 1 && op.inputs[1] >= 0) {
      std::vector<int64_t> ks;
      if (constantInts(*ex.plan, op.inputs[1], ks) && !ks.empty())
        diagonal = ks[0];
      else if (ex.plan->values[size_t(op.inputs[1])].dtype == DType::I64)
        kOnDevice = true;
      else
        return "needs k as an int64";
    }
    const bool upper = op.attrs.getInt("upper", 1) != 0;
    out.launch = [&op, elem, diagonal, upper, kOnDevice](Executor &e, const std::vector<TensorRef> &t) -> std::string {
      const Shape &in = t[size_t(op.inputs[0])].shape;
      if (in.rank < 2)
        return "needs rank 2 or more";
      if (kOnDevice && t[size_t(op.inputs[1])].numel() != 1)
        return "needs one k";
      return trilu(e.at(op.inputs[0]), e.at(op.outputs[0]), in.numel(), in.dims[in.rank - 2], in.dims[in.rank - 1],
                   diagonal, upper, elem, e.stream,
                   kOnDevice ? static_cast<const int64_t *>(e.at(op.inputs[1])) : nullptr);
    };
  } else if (k == "tile") {
    // Each axis of the output as [repeats, input's dim], the input read with a stride of 0 along
    // the repeats: one strided copy of twice the rank.
    out.launch = [&op, elem](Executor &e, const std::vector<TensorRef> &t) -> std::string {
      const Shape &in = t[size_t(op.inputs[0])].shape, &o = t[size_t(op.outputs[0])].shape;
      if (o.rank != in.rank || 2 * in.rank > kMaxDims)
        return "needs the input's rank, at most " + std::to_string(kMaxDims / 2);
      Shape split; // the output's axes, each as [repeats, input's dim]
      split.rank = 2 * in.rank;
      for (int d = 0; d < in.rank; ++d) {
        if (in.dims[d] == 0 ? o.dims[d] != 0 : o.dims[d] % in.dims[d] != 0)
          return std::string("output dimensions must be multiples of the input's");
        split.dims[2 * d] = in.dims[d] ? o.dims[d] / in.dims[d] : 0, split.dims[2 * d + 1] = in.dims[d];
      }
      StridedCopy c = copyOf(split, elem); // written in the output's order
      int64_t inStrides[kMaxRank];
      contiguousStrides(in, inStrides);
      for (int d = 0; d < in.rank; ++d)
        c.src[2 * d] = 0, c.src[2 * d + 1] = inStrides[d];
      return stridedCopy(e.at(op.inputs[0]), e.at(op.outputs[0]), c, e.stream);
    };
  } else {
    return "not a data-movement op";
  }
  return {};
}

std::string prepareElementwise(Executor &, const PlanOp &op, PreparedOp &out, int code) {
  if (op.kernel == "gelu" && op.attrs.getString("approximate") == "tanh")
    code = elementwiseOp("gelu_tanh");
  if (op.kernel == "mod" && op.attrs.getInt("fmod", 0) != 0)
    code = elementwiseOp("fmod");
  // The attributes' defaults are ONNX's, as the CPU kernels take them.
  double alpha = 0, beta = 0;
  if (op.kernel == "elu")
    alpha = op.attrs.getFloat("alpha", 1.0);
  else if (op.kernel == "leaky_relu")
    alpha = op.attrs.getFloat("alpha", 0.01);
  else if (op.kernel == "hard_sigmoid")
    alpha = op.attrs.getFloat("alpha", 0.2), beta = op.attrs.getFloat("beta", 0.5);
  if (int(op.inputs.size()) != elementwiseArity(code) || op.outputs.size() != 1)
    return "expects " + std::to_string(elementwiseArity(code)) + " inputs and one output";
  for (int i : op.inputs)
    if (i < 0)
      return "an absent input";
  out.launch = [&op, code, alpha, beta](Executor &e, const std::vector<TensorRef> &t) {
    const TensorRef &o = t[size_t(op.outputs[0])];
    ElementwiseArgs a;
    a.op = code, a.numInputs = int(op.inputs.size()), a.out = e.at(op.outputs[0]);
    a.alpha = alpha, a.beta = beta;
    a.outType = int(onDevice(e.plan->values[size_t(op.outputs[0])]));
    a.rank = o.shape.rank;
    for (int d = 0; d < o.shape.rank; ++d)
      a.dims[d] = o.shape.dims[d];
    for (size_t j = 0; j < op.inputs.size(); ++j) {
      const TensorRef &in = t[size_t(op.inputs[j])];
      a.in[j] = e.at(op.inputs[j]), a.inType[j] = int(onDevice(e.plan->values[size_t(op.inputs[j])]));
      broadcastStridesTo(in.shape, o.shape, a.inStrides[j]);
    }
    return elementwise(a, e.stream);
  };
  return {};
}

std::string prepareSmallOp(Executor &ex, const PlanOp &op, PreparedOp &out) {
  if (op.kernel == "shape") {
    out.launch = [&op](Executor &e, const std::vector<TensorRef> &t) {
      const Shape &s = t[size_t(op.inputs[0])].shape;
      int64_t start = op.attrs.getInt("start", 0), end = op.attrs.getInt("end", s.rank);
      start = std::clamp<int64_t>(start < 0 ? start + s.rank : start, 0, s.rank);
      end = std::clamp<int64_t>(end < 0 ? end + s.rank : end, 0, s.rank);
      return writeInt64s(e.at(op.outputs[0]), s.dims + start, int(std::max<int64_t>(0, end - start)), e.stream);
    };
  } else if (op.kernel == "range") {
    Storage st;
    if (std::string err = floatStorage(ex, op, st); !err.empty())
      return err;
    out.launch = [&op](Executor &e, const std::vector<TensorRef> &t) {
      const TensorRef &o = t[size_t(op.outputs[0])];
      return range(int(onDevice(e.plan->values[size_t(op.outputs[0])])), e.at(op.inputs[0]), e.at(op.inputs[2]), e.at(op.outputs[0]), o.numel(), e.stream);
    };
  } else if (op.kernel == "gather_nd") {
    const int indexBytes = indexTypeOf(ex, op.inputs[1]);
    if (!indexBytes)
      return "supports int32 and int64 indices";
    const int elem = int(dtypeSize(onDevice(ex.plan->values[size_t(op.inputs[0])])));
    const int b = int(op.attrs.getInt("batch_dims", 0));
    out.launch = [&op, elem, indexBytes, b](Executor &e, const std::vector<TensorRef> &t) {
      const Shape &data = t[size_t(op.inputs[0])].shape, &idx = t[size_t(op.inputs[1])].shape;
      if (idx.rank < 1 || b < 0 || b >= idx.rank || b + idx.dims[idx.rank - 1] > data.rank)
        return std::string("batch_dims and the index depth do not fit the data's rank");
      for (int d = 0; d < b; ++d)
        if (idx.dims[d] != data.dims[d])
          return std::string("the indices' batch dims differ from the data's");
      const int k = int(idx.dims[idx.rank - 1]);
      int64_t strides[kMaxRank];
      contiguousStrides(data, strides);
      const int64_t slice = elementsFrom(data, b + k), batches = rowsBefore(data, b);
      const int64_t tuples = t[size_t(op.inputs[1])].numel() / std::max(k, 1);
      return gatherNd(e.at(op.inputs[0]), e.at(op.inputs[1]), e.at(op.outputs[0]), tuples, k, data.dims + b,
                      strides + b, slice, elem, e.errorFlag, e.stream, indexBytes, batches, elementsFrom(data, b));
    };
  } else if (op.kernel == "gather_elements") {
    const int indexBytes = indexTypeOf(ex, op.inputs[1]);
    if (!indexBytes)
      return "supports int32 and int64 indices";
    const int elem = int(dtypeSize(onDevice(ex.plan->values[size_t(op.inputs[0])])));
    out.launch = [&op, elem, indexBytes](Executor &e, const std::vector<TensorRef> &t) -> std::string {
      const Shape &data = t[size_t(op.inputs[0])].shape, &idx = t[size_t(op.inputs[1])].shape;
      const int axis = normalizeAxis(op.attrs.getInt("axis", 0), data.rank);
      if (idx.rank != data.rank)
        return std::string("indices and data differ in rank");
      for (int d = 0; d < data.rank; ++d)
        if (d != axis && idx.dims[d] > data.dims[d])
          return std::string("indices reach outside the data");
      return gatherElements(e.at(op.inputs[0]), e.at(op.inputs[1]), e.at(op.outputs[0]), data.rank, axis, idx.dims,
                            data.dims, elem, e.errorFlag, e.stream, indexBytes);
    };
  } else if (op.kernel == "cumsum") {
    // The axis: a constant of the plan, checked here, or a scalar the device holds, read there.
    const PlanValue &x = ex.plan->values[size_t(op.inputs[0])];
    std::vector<int64_t> axis;
    const bool constant = constantInts(*ex.plan, op.inputs[1], axis);
    if (constant && (axis.size() != 1 || axis[0] < -x.shape.rank || axis[0] >= x.shape.rank))
      return "the axis must be one value within the input's rank";
    const int axisBytes = indexTypeOf(ex, op.inputs[1]);
    if (!constant && !axisBytes)
      return "the axis must be an int32 or int64 scalar";
    const int type = numericTypeOf(ex, op.inputs[0]);
    if (!type || numericTypeOf(ex, op.outputs[0]) != type)
      return "supports float, integer or bool elements, the output of the input's type";
    out.launch = [&op, type, constant, axis, axisBytes](Executor &e, const std::vector<TensorRef> &t) {
      const Shape &s = t[size_t(op.inputs[0])].shape;
      CumsumArgs a;
      a.rank = s.rank;
      std::copy(s.dims, s.dims + s.rank, a.dims);
      if (constant) {
        a.axis = int(axis[0]);
      } else {
        if (t[size_t(op.inputs[1])].numel() != 1)
          return std::string("the axis must be one value");
        a.axisValue = e.at(op.inputs[1]), a.axisInt32 = axisBytes == 4;
      }
      a.exclusive = op.attrs.getInt("exclusive", 0) != 0, a.reverse = op.attrs.getInt("reverse", 0) != 0;
      return cumsum(type, e.at(op.inputs[0]), e.at(op.outputs[0]), a, e.errorFlag, e.stream);
    };
  } else if (op.kernel == "constant_of_shape") {
    const int type = int(onDevice(ex.plan->values[size_t(op.outputs[0])]));
    const double value = op.attrs.getFloat("value", 0.0);
    out.launch = [&op, type, value](Executor &e, const std::vector<TensorRef> &t) {
      return fill(e.at(op.outputs[0]), type, value, t[size_t(op.outputs[0])].numel(), e.stream);
    };
  } else {
    return "not a small op";
  }
  return {};
}

// quantize_linear and dequantize_linear: the scale's layout (per tensor, per axis index, per
// block) from this run's shapes, as the CPU's ScaleIndex.
std::string prepareQuantize(Executor &ex, const PlanOp &op, PreparedOp &out) {
  if (op.inputs.size() < 2 || op.inputs[0] < 0 || op.inputs[1] < 0 || op.outputs.size() != 1)
    return "expects an input, a scale and one output";
  const bool quantize = op.kernel == "quantize_linear";
  auto typeOf = [&ex](int v) { return v < 0 ? 0 : int(onDevice(ex.plan->values[size_t(v)])); };
  QuantArgs types;
  types.xType = typeOf(op.inputs[0]), types.scaleType = typeOf(op.inputs[1]);
  types.zeroType = op.inputs.size() > 2 ? typeOf(op.inputs[2]) : 0, types.outType = typeOf(op.outputs[0]);
  out.launch = [&op, quantize, types](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    QuantArgs a = types;
    const Shape &x = t[size_t(op.inputs[0])].shape;
    a.x = e.at(op.inputs[0]), a.scale = e.at(op.inputs[1]), a.out = e.at(op.outputs[0]);
    a.zero = a.zeroType ? e.at(op.inputs[2]) : nullptr;
    a.n = x.numel(), a.count = t[size_t(op.inputs[1])].numel();
    if (a.zero && t[size_t(op.inputs[2])].numel() != a.count)
      return std::string("the zero point's shape differs from the scale's");
    if (a.count != 1) {
      int64_t outer;
      if (std::string err = linesAlong(op, x, 1, outer, a.dim, a.inner); !err.empty())
        return err;
      a.block = op.attrs.getInt("block_size", 0);
      if (a.block > 0 ? a.count != outer * ((a.dim + a.block - 1) / a.block) * a.inner : a.count != a.dim)
        return std::string("the scale's shape does not match the axis or its blocks");
    }
    return quantizeLinear(quantize, a, e.stream);
  };
  return {};
}

// scatter_nd and scatter_elements: the data copied to the output, then the updates in place.
std::string prepareScatter(Executor &ex, const PlanOp &op, PreparedOp &out) {
  const int indexBytes = op.inputs.size() == 3 ? indexTypeOf(ex, op.inputs[1]) : 0;
  if (!indexBytes)
    return "supports data, int32 or int64 indices and updates";
  const PlanValue &data = ex.plan->values[size_t(op.inputs[0])], &updates = ex.plan->values[size_t(op.inputs[2])];
  const DType type = onDevice(data);
  if (onDevice(updates) != type || onDevice(ex.plan->values[size_t(op.outputs[0])]) != type)
    return "the data, updates and output differ in element type on the device";
  const std::string reduction(op.attrs.getString("reduction"));
  out.launch = [&op, type, reduction, indexBytes](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    const Shape &data = t[size_t(op.inputs[0])].shape, &idx = t[size_t(op.inputs[1])].shape;
    if (void *dst = e.at(op.outputs[0]); dst != e.at(op.inputs[0]))
      if (cudaError_t err = cudaMemcpyAsync(dst, e.at(op.inputs[0]), deviceBytesOf(e, op.inputs[0], data),
                                            cudaMemcpyDeviceToDevice, e.stream);
          err != cudaSuccess)
        return cudaError("scatter's copy of the data", err);
    const void *indices = e.at(op.inputs[1]);
    if (op.kernel == "scatter_elements") {
      const int axis = normalizeAxis(op.attrs.getInt("axis", 0), data.rank);
      if (idx.rank != data.rank || axis < 0 || axis >= data.rank)
        return std::string("indices and data differ in rank, or the axis is out of range");
      for (int d = 0; d < data.rank; ++d)
        if (d != axis && idx.dims[d] > data.dims[d])
          return std::string("indices reach outside the data");
      return scatterElements(e.at(op.outputs[0]), indices, e.at(op.inputs[2]), data.rank, axis, idx.dims, data.dims,
                             int(type), reduction, e.errorFlag, e.stream, indexBytes);
    }
    const int k = idx.rank ? int(idx.dims[idx.rank - 1]) : 0;
    if (idx.rank < 1 || k > data.rank)
      return std::string("index tuples are longer than the data's rank");
    int64_t strides[kMaxRank];
    contiguousStrides(data, strides);
    const int64_t slice = elementsFrom(data, k);
    const int64_t tuples = t[size_t(op.inputs[1])].numel() / std::max(k, 1);
    if (t[size_t(op.inputs[2])].numel() != tuples * slice)
      return std::string("updates do not match the indices and the data");
    return scatterNd(e.at(op.outputs[0]), indices, e.at(op.inputs[2]), tuples, k, data.dims, strides, slice,
                     int(type), reduction, e.errorFlag, e.stream, indexBytes);
  };
  return {};
}

// arg_max / arg_min of a float or integer input along one axis (keepdims or not: the same bytes),
// int64 out.
std::string prepareArgReduce(Executor &ex, const PlanOp &op, PreparedOp &out) {
  const int type = numericTypeOf(ex, op.inputs[0]);
  if (!type || ex.plan->values[size_t(op.outputs[0])].dtype != DType::I64)
    return "supports a float, integer or bool input and an int64 output";
  const bool max = op.kernel == "arg_max", last = op.attrs.getInt("select_last_index", 0) != 0;
  out.launch = [&op, type, max, last](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    int64_t outer, n, inner;
    if (std::string err = linesAlong(op, t[size_t(op.inputs[0])].shape, 0, outer, n, inner); !err.empty())
      return err;
    return argReduce(type, max, e.at(op.inputs[0]), static_cast<int64_t *>(e.at(op.outputs[0])), outer, n, inner, last,
                     e.stream);
  };
  return {};
}

// top_k, as the CPU's: k the attribute, or (-1) the outputs' size along the axis, where the plan
// counts it from shapes (its second input, which the kernel does not read).
std::string prepareTopK(Executor &ex, const PlanOp &op, PreparedOp &out) {
  const int type = numericTypeOf(ex, op.inputs[0]);
  if (op.outputs.size() != 2 || !type || numericTypeOf(ex, op.outputs[0]) != type ||
      ex.plan->values[size_t(op.outputs[1])].dtype != DType::I64)
    return "supports float, integer or bool values and int64 indices";
  const int64_t k = op.attrs.getInt("k", -1);
  const bool largest = op.attrs.getInt("largest", 1) != 0;
  out.launch = [&op, type, k, largest](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    int64_t outer, n, inner, kept, unused;
    if (std::string err = linesAlong(op, t[size_t(op.inputs[0])].shape, -1, outer, n, inner); !err.empty())
      return err;
    if (k >= 0)
      kept = k;
    else if (std::string err = linesAlong(op, t[size_t(op.outputs[0])].shape, -1, unused, kept, unused); !err.empty())
      return err;
    return topK(type, e.at(op.inputs[0]), e.at(op.outputs[0]), static_cast<int64_t *>(e.at(op.outputs[1])), outer, n,
                inner, kept, largest, e.stream);
  };
  return {};
}

// softmax_top_k over the last axis (llmc-fuse-routing's router), as the CPU's.
std::string prepareSoftmaxTopK(Executor &ex, const PlanOp &op, PreparedOp &out) {
  Storage st;
  if (op.inputs.size() != 1 || op.outputs.size() != 2 || !isFloat(ex.plan->values[size_t(op.inputs[0])]) ||
      ex.plan->values[size_t(op.outputs[1])].dtype != DType::I64)
    return "needs float logits and int64 indices";
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  const int64_t k = op.attrs.getInt("k", -1);
  const bool normalize = op.attrs.getInt("normalize", 0) != 0;
  out.launch = [&op, st, k, normalize](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    const Shape &s = t[size_t(op.inputs[0])].shape;
    if (s.rank == 0)
      return std::string("needs logits of rank 1 or more");
    const int64_t n = s.dims[s.rank - 1];
    return softmaxTopK(st, e.at(op.inputs[0]), e.at(op.outputs[0]), static_cast<int64_t *>(e.at(op.outputs[1])),
                       n ? t[size_t(op.inputs[0])].numel() / n : 0, n, k, normalize, e.stream);
  };
  return {};
}

// grouped_top_k (llmc-fuse-routing's DeepSeek-V3 and ERNIE 4.5 routers), as the CPU's.
std::string prepareGroupedTopK(Executor &ex, const PlanOp &op, PreparedOp &out) {
  Storage st;
  if (op.inputs.size() != 2 || op.outputs.size() != 2 || !isFloat(ex.plan->values[size_t(op.inputs[0])]) ||
      ex.plan->values[size_t(op.outputs[1])].dtype != DType::I64)
    return "needs float logits and bias, and int64 indices";
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  GroupedTopKArgs a;
  a.k = op.attrs.getInt("k", -1);
  a.groups = op.attrs.getInt("groups", 0);
  a.keptGroups = op.attrs.getInt("kept_groups", 0);
  a.top = op.attrs.getInt("group_top", 2);
  a.fill = float(op.attrs.getFloat("fill", 0.0));
  a.epsilon = float(op.attrs.getFloat("epsilon", 0.0));
  a.scale = float(op.attrs.getFloat("scale", 1.0));
  a.normalize = op.attrs.getInt("normalize", 0);
  const std::string_view scores = op.attrs.getString("scores");
  if (!scores.empty() && scores != "sigmoid" && scores != "softmax")
    return "scores must be sigmoid or softmax, not " + std::string(scores);
  a.softmax = scores == "softmax";
  out.launch = [&op, st, a](Executor &e, const std::vector<TensorRef> &t) mutable -> std::string {
    const Shape &s = t[size_t(op.inputs[0])].shape;
    if (s.rank != 2 || t[size_t(op.inputs[1])].numel() != s.dims[1])
      return std::string("needs logits [rows, n] and a bias [n]");
    a.n = s.dims[1];
    return groupedTopK(st, e.at(op.inputs[0]), e.at(op.inputs[1]), e.at(op.outputs[0]),
                       static_cast<int64_t *>(e.at(op.outputs[1])), s.dims[0], a, e.stream);
  };
  return {};
}

std::string prepareReduce(Executor &ex, const PlanOp &op, PreparedOp &out) {
  const std::string kind = op.kernel.substr(strlen("reduce_"));
  const int type = numericTypeOf(ex, op.inputs[0]);
  if (!type || type != numericTypeOf(ex, op.outputs[0]) ||
      (kind != "sum" && kind != "mean" && kind != "max" && kind != "min" && kind != "l2" && kind != "sum_square" &&
       kind != "prod"))
    return "supports sum, mean, max, min, l2, sum_square and prod of float, integer or bool elements";
  if (op.inputs.size() > 1 && op.inputs[1] >= 0)
    return "axes given as a tensor";
  out.launch = [&op, kind, type](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    const Shape &s = t[size_t(op.inputs[0])].shape;
    const std::vector<int64_t> axes = op.attrs.getInts("axes");
    if (axes.empty() && op.attrs.getInt("noop_with_empty_axes", 0)) {
      const size_t bytes = deviceBytesOf(e, op.inputs[0], s);
      return bytes ? (cudaMemcpyAsync(e.at(op.outputs[0]), e.at(op.inputs[0]), bytes, cudaMemcpyDeviceToDevice, e.stream) ==
                              cudaSuccess
                          ? std::string()
                          : std::string("copy failed"))
                   : std::string();
    }
    bool reduced[kMaxRank] = {};
    for (int d = 0; d < s.rank; ++d)
      reduced[d] = axes.empty();
    for (int64_t a : axes)
      reduced[a < 0 ? a + s.rank : a] = true;
    return reduce(type, kind, e.at(op.inputs[0]), e.at(op.outputs[0]), s.rank, s.dims, reduced, e.stream);
  };
  return {};
}

std::string preparePoolPad(Executor &ex, const PlanOp &op, PreparedOp &out) {
  if (op.kernel == "max_pool" || op.kernel == "average_pool" || op.kernel == "max_pool_with_indices") {
    // A max of floats or integers (ONNX's MaxPool takes int8 and uint8), an average of floats.
    const bool average = op.kernel == "average_pool";
    const int type = average ? floatTypeOf(ex, op.inputs[0]) : numericTypeOf(ex, op.inputs[0]);
    if (!type || type != numericTypeOf(ex, op.outputs[0]) || DType(type) == DType::Bool)
      return average ? "supports float inputs" : "supports float and integer inputs";
    const bool withIndices = op.kernel == "max_pool_with_indices";
    if (op.outputs.size() != (withIndices ? 2u : 1u) ||
        (withIndices && ex.plan->values[size_t(op.outputs[1])].dtype != DType::I64))
      return withIndices ? "needs values and int64 indices" : "no indices output";
    out.launch = [&op, type, withIndices](Executor &e, const std::vector<TensorRef> &t) -> std::string {
      const Shape &x = t[size_t(op.inputs[0])].shape, &y = t[size_t(op.outputs[0])].shape;
      const std::vector<int64_t> kernel = op.attrs.getInts("kernel_shape");
      if (int(kernel.size()) != x.rank - 2)
        return "kernel_shape does not match the spatial rank";
      Window win;
      if (std::string err = windowOf(op, x, y, kernel.data(), win); !err.empty())
        return err;
      return pool(type, op.kernel != "average_pool", e.at(op.inputs[0]), e.at(op.outputs[0]), x.dims[0] * x.dims[1], win,
                  op.attrs.getInt("count_include_pad", 0) != 0, e.stream,
                  withIndices ? static_cast<int64_t *>(e.at(op.outputs[1])) : nullptr,
                  op.attrs.getInt("storage_order", 0) != 0);
    };
  } else { // pad
    const int type = numericTypeOf(ex, op.inputs[0]);
    if (!type || type != numericTypeOf(ex, op.outputs[0]))
      return "supports float, integer and bool inputs";
    const std::string mode(op.attrs.getString("mode"));
    if (!mode.empty() && mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
      return "unknown mode '" + mode + "'";
    const bool hasValue = op.inputs.size() > 1 && op.inputs[1] >= 0;
    double value = 0.0;
    if (hasValue && !constantScalar(ex.plan->values[size_t(op.inputs[1])], value))
      return "needs a constant padding value";
    out.launch = [&op, value, mode, type](Executor &e, const std::vector<TensorRef> &t) -> std::string {
      const Shape &x = t[size_t(op.inputs[0])].shape, &y = t[size_t(op.outputs[0])].shape;
      const std::vector<int64_t> pads = op.attrs.getInts("pads");
      if (pads.size() != size_t(2 * x.rank))
        return "pads must hold a begin and an end per dimension";
      for (int d = 0; d < x.rank; ++d)
        if (pads[size_t(d)] < 0 || pads[size_t(d + x.rank)] < 0)
          return "negative pads (cropping) are not supported";
      return pad(type, mode, e.at(op.inputs[0]), e.at(op.outputs[0]), x.rank, x.dims, y.dims, pads.data(), value, e.stream);
    };
  }
  return {};
}

} // namespace

// The op's CUDA kernel, prepared; or why it has none. An error names the op and its node.
std::string prepareOp(Executor &ex, int k, PreparedOp &p, size_t &scratch) {
  const PlanOp &op = ex.plan->ops[size_t(k)];
  p.name = op.kernel;
  std::string err;
  if (op.kernel == "rms_norm" || op.kernel == "layer_norm" || op.kernel == "add_rms_norm" || op.kernel == "add_layer_norm")
    err = prepareNorm(ex, op, k, p);
  else if (op.kernel == "group_norm" || op.kernel == "instance_norm" || op.kernel == "layer_norm_stats" ||
           op.kernel == "batch_norm")
    err = prepareGroupNorm(ex, op, p);
  else if (op.kernel == "softmax" || op.kernel == "log_softmax")
    err = prepareSoftmax(ex, op, p);
  else if (op.kernel == "gather")
    err = prepareGather(ex, op, p);
  else if (op.kernel == "linear")
    err = prepareLinear(ex, op, k, p, scratch);
  else if (op.kernel == "matmul")
    err = prepareMatmul(ex, op, p);
  else if (op.kernel == "gemm")
    err = prepareGemm(ex, op, p);
  else if (op.kernel == "einsum")
    err = prepareEinsum(ex, op, p);
  else if (op.kernel == "expert_linear")
    err = prepareExpertLinear(ex, op, p, scratch);
  else if (op.kernel == "fused_attention")
    err = prepareAttention(ex, op, p, k);
  else if (op.kernel == "rotary")
    err = prepareRotary(ex, op, p, k);
  else if (op.kernel == "fused_elementwise")
    err = prepareFusedElementwise(ex, op, p, k);
  else if (isCopyKernel(op.kernel))
    err = prepareCopy(ex, op, p);
  else if (op.kernel == "transpose" || op.kernel == "slice" || op.kernel == "dynamic_slice" || op.kernel == "concat" ||
           op.kernel == "split" || op.kernel == "expand" || op.kernel == "tile" || op.kernel == "trilu")
    err = prepareDataMovement(ex, op, p, k);
  else if (op.kernel == "shape" || op.kernel == "range" || op.kernel == "gather_nd" || op.kernel == "cumsum" ||
           op.kernel == "gather_elements" || op.kernel == "constant_of_shape")
    err = prepareSmallOp(ex, op, p);
  else if (op.kernel == "scatter_nd" || op.kernel == "scatter_elements")
    err = prepareScatter(ex, op, p);
  else if (op.kernel == "quantize_linear" || op.kernel == "dequantize_linear")
    err = prepareQuantize(ex, op, p);
  else if (op.kernel == "latent_attention")
    err = prepareLatentAttention(ex, op, p);
  else if (op.kernel == "attention")
    err = prepareOnnxAttention(ex, op, p);
  else if (op.kernel.rfind("reduce_", 0) == 0)
    err = prepareReduce(ex, op, p);
  else if (op.kernel == "arg_max" || op.kernel == "arg_min")
    err = prepareArgReduce(ex, op, p);
  else if (op.kernel == "softmax_top_k")
    err = prepareSoftmaxTopK(ex, op, p);
  else if (op.kernel == "grouped_top_k")
    err = prepareGroupedTopK(ex, op, p);
  else if (op.kernel == "top_k")
    err = prepareTopK(ex, op, p);
  else if (op.kernel == "conv")
    err = prepareConv(ex, op, p, scratch);
  else if (op.kernel == "max_pool" || op.kernel == "average_pool" || op.kernel == "max_pool_with_indices" ||
           op.kernel == "pad")
    err = preparePoolPad(ex, op, p);
  // (gelu_tanh and fmod are the kernel's names for a gelu and a mod with an attribute, no ops of a plan)
  else if (int code = elementwiseOp(op.kernel); code >= 0 && op.kernel != "gelu_tanh" && op.kernel != "fmod")
    err = prepareElementwise(ex, op, p, code);
  else
    err = "no CUDA kernel for this op yet";
  return err.empty() ? err : "op '" + op.kernel + "'" + (op.location.empty() ? "" : " (" + op.location + ")") + ": " + err;
}

// Without a device: `ex` for `plan` with every op prepared (as for sm_90a), the linears' scratch
// bytes in `scratch`; `missing(k, why)` hears of each op the executor has no kernel for.
void prepareWithoutDevice(Executor &ex, const llmc_plan_t &plan, size_t &scratch,
                          const std::function<void(size_t, const std::string &)> &missing) {
  attachPlan(ex, plan);
  ex.dry = true, ex.arch = "sm_90a";
  scratch = 0;
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    PreparedOp p;
    if (std::string err = prepareOp(ex, int(k), p, scratch); !err.empty())
      missing(k, err);
    ex.ops.push_back(std::move(p));
  }
}

} // namespace llmc::rt::cuda::exec

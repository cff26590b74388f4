// Result-type inference for every llmc op, dispatched on the op name. Dimensions that depend
// on runtime values stay dynamic; those that depend on constant operands are computed.
#include "Einsum.h"
#include "llmc/Dialect/LlmcDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>

using namespace mlir;

namespace llmc {
namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

struct Inference {
  MLIRContext *context;
  std::optional<Location> location;
  ValueRange operands;
  DictionaryAttr attrs;
  SmallVectorImpl<Type> &inferred;

  LogicalResult fail(const Twine &message) const {
    if (location)
      mlir::emitError(*location) << message;
    return failure();
  }
  RankedTensorType type(unsigned i) const { return cast<RankedTensorType>(operands[i].getType()); }
  ArrayRef<int64_t> shape(unsigned i) const { return type(i).getShape(); }
  Type elem(unsigned i) const { return type(i).getElementType(); }
  int64_t intAttr(StringRef name, int64_t fallback) const {
    if (auto a = attrs ? attrs.getAs<IntegerAttr>(name) : IntegerAttr())
      return a.getInt();
    return fallback;
  }
  double floatAttr(StringRef name, double fallback) const {
    if (auto a = attrs ? attrs.getAs<FloatAttr>(name) : FloatAttr())
      return a.getValueAsDouble();
    return fallback;
  }
  StringRef stringAttr(StringRef name, StringRef fallback) const {
    if (auto a = attrs ? attrs.getAs<StringAttr>(name) : StringAttr())
      return a.getValue();
    return fallback;
  }
  SmallVector<int64_t> arrayAttr(StringRef name) const {
    if (auto a = attrs ? attrs.getAs<DenseI64ArrayAttr>(name) : DenseI64ArrayAttr())
      return SmallVector<int64_t>(a.asArrayRef());
    return {};
  }
  LogicalResult result(ArrayRef<int64_t> dims, Type element) {
    inferred.push_back(RankedTensorType::get(dims, element));
    return success();
  }
  LogicalResult sameAs(unsigned i) {
    inferred.push_back(type(i));
    return success();
  }
  LogicalResult expectOperands(unsigned n) const {
    if (operands.size() < n)
      return fail("expects at least " + Twine(n) + " operands, got " + Twine(operands.size()));
    return success();
  }
};

LogicalResult checkIndices(Inference &in, unsigned i);

std::optional<double> constantScalar(Value v) {
  DenseElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)) || attr.getNumElements() != 1)
    return std::nullopt;
  Type t = attr.getElementType();
  if (isa<FloatType>(t))
    return (*attr.getValues<APFloat>().begin()).convertToDouble();
  if (t.isInteger())
    return double((*attr.getValues<APInt>().begin()).getSExtValue());
  return std::nullopt;
}

// numpy broadcasting of two shapes; fails on static sizes that differ and are not 1.
FailureOr<SmallVector<int64_t>> broadcast(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  const size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == 1)
      out[i] = y;
    else if (y == 1)
      out[i] = x;
    else if (x == kDyn)
      out[i] = y;
    else if (y == kDyn || x == y)
      out[i] = x;
    else
      return failure();
  }
  return out;
}

std::string shapeStr(ArrayRef<int64_t> s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? "x" : "") + (s[i] == kDyn ? std::string("?") : std::to_string(s[i]));
  return out + "]";
}

LogicalResult inferElementwise(Inference &in, unsigned numOperands, bool boolResult, unsigned typeFrom) {
  if (failed(in.expectOperands(numOperands)))
    return failure();
  SmallVector<int64_t> dims(in.shape(0));
  for (unsigned i = 1; i < numOperands; ++i) {
    auto b = broadcast(dims, in.shape(i));
    if (failed(b))
      return in.fail("operand shapes " + shapeStr(dims) + " and " + shapeStr(in.shape(i)) +
                     " are not broadcast compatible");
    dims = *b;
  }
  for (unsigned i = typeFrom + 1; i < numOperands; ++i)
    if (in.elem(i) != in.elem(typeFrom))
      return in.fail("operands have different element types");
  return in.result(dims, boolResult ? IntegerType::get(in.context, 1) : in.elem(typeFrom));
}

int64_t mulDims(int64_t a, int64_t b) { return a == kDyn || b == kDyn ? kDyn : a * b; }

LogicalResult inferMatMul(Inference &in) {
  ArrayRef<int64_t> a = in.shape(0), b = in.shape(1);
  if (a.empty() || b.empty())
    return in.fail("matmul operands must have rank >= 1");
  if (in.elem(0) != in.elem(1))
    return in.fail("matmul operands have different element types");
  SmallVector<int64_t> sa(a), sb(b);
  if (a.size() == 1)
    sa.insert(sa.begin(), 1);
  if (b.size() == 1)
    sb.push_back(1);
  int64_t k1 = sa.back(), k2 = sb[sb.size() - 2];
  if (k1 != kDyn && k2 != kDyn && k1 != k2)
    return in.fail("matmul contracting dimensions differ: " + shapeStr(a) + " x " + shapeStr(b));
  auto batch = broadcast(ArrayRef<int64_t>(sa).drop_back(2), ArrayRef<int64_t>(sb).drop_back(2));
  if (failed(batch))
    return in.fail("matmul batch dimensions do not broadcast: " + shapeStr(a) + " x " + shapeStr(b));
  SmallVector<int64_t> out = *batch;
  if (a.size() > 1)
    out.push_back(sa[sa.size() - 2]);
  if (b.size() > 1)
    out.push_back(sb.back());
  return in.result(out, in.elem(0));
}

LogicalResult inferGemm(Inference &in) {
  if (in.type(0).getRank() != 2 || in.type(1).getRank() != 2)
    return in.fail("gemm operands must be matrices");
  bool ta = in.intAttr("transA", 0), tb = in.intAttr("transB", 0);
  int64_t m = in.shape(0)[ta ? 1 : 0], k1 = in.shape(0)[ta ? 0 : 1];
  int64_t k2 = in.shape(1)[tb ? 1 : 0], n = in.shape(1)[tb ? 0 : 1];
  if (k1 != kDyn && k2 != kDyn && k1 != k2)
    return in.fail("gemm contracting dimensions differ");
  return in.result({m, n}, in.elem(0));
}

LogicalResult inferReduce(Inference &in) {
  ArrayRef<int64_t> s = in.shape(0);
  const int64_t rank = int64_t(s.size());
  SmallVector<int64_t> axes = in.arrayAttr("axes");
  if (axes.empty() && in.intAttr("noop_with_empty_axes", 0))
    return in.sameAs(0);
  SmallVector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    int64_t d = a < 0 ? a + rank : a;
    if (d < 0 || d >= rank)
      return in.fail("reduction axis " + Twine(a) + " is out of range for rank " + Twine(rank));
    reduced[d] = true;
  }
  const bool keep = in.intAttr("keepdims", 1);
  SmallVector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d])
      out.push_back(s[d]);
    else if (keep)
      out.push_back(1);
  return in.result(out, in.elem(0));
}

LogicalResult checkAxis(Inference &in, int64_t axis, int64_t rank, int64_t &normalized) {
  normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank)
    return in.fail("axis " + Twine(axis) + " is out of range for rank " + Twine(rank));
  return success();
}

LogicalResult inferNorm(Inference &in) {
  if (failed(in.expectOperands(2)))
    return failure();
  int64_t axis;
  if (failed(checkAxis(in, in.intAttr("axis", -1), in.type(0).getRank(), axis)))
    return failure();
  if (in.elem(1) != in.elem(0))
    return in.fail("scale element type differs from the input's");
  return in.sameAs(0);
}

LogicalResult inferLayerNormStats(Inference &in) {
  const int64_t rank = in.type(0).getRank();
  int64_t axis;
  if (failed(checkAxis(in, in.intAttr("axis", -1), rank, axis)))
    return failure();
  SmallVector<int64_t> dims(in.shape(0));
  for (int64_t d = axis; d < rank; ++d)
    dims[d] = 1;
  in.inferred.push_back(RankedTensorType::get(dims, in.elem(0)));
  return in.result(dims, in.elem(0));
}

// Output size of a sliding window along one axis (ONNX's rule, including ceil mode's "the last
// window must start inside the input or its begin padding").
int64_t windowCount(int64_t in, int64_t padBegin, int64_t padEnd, int64_t kernel, int64_t stride, int64_t dilation,
                    bool ceilMode) {
  if (in == kDyn)
    return kDyn;
  const int64_t span = in + padBegin + padEnd - dilation * (kernel - 1) - 1;
  if (span < 0)
    return 0;
  int64_t out = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

// Shared by conv and pooling: checks the window attributes and appends the spatial output sizes.
LogicalResult windowShape(Inference &in, ArrayRef<int64_t> kernel, bool ceilMode, SmallVectorImpl<int64_t> &out) {
  ArrayRef<int64_t> s = in.shape(0);
  const size_t n = s.size() - 2;
  SmallVector<int64_t> pads = in.arrayAttr("pads"), strides = in.arrayAttr("strides"),
                       dilations = in.arrayAttr("dilations");
  if (kernel.size() != n || pads.size() != 2 * n || strides.size() != n || dilations.size() != n)
    return in.fail("window attributes do not match " + Twine(n) + " spatial dimensions");
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] < 1 || dilations[i] < 1 || kernel[i] < 1 || pads[i] < 0 || pads[i + n] < 0)
      return in.fail("window attributes must be positive (pads non-negative)");
    out.push_back(windowCount(s[i + 2], pads[i], pads[i + n], kernel[i], strides[i], dilations[i], ceilMode));
  }
  return success();
}

LogicalResult inferConv(Inference &in) {
  ArrayRef<int64_t> x = in.shape(0), w = in.shape(1);
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size())
    return in.fail("conv needs input and weight of equal rank 3 to 5");
  const int64_t group = in.intAttr("group", 1);
  if (group < 1 || (w[0] != kDyn && w[0] % group != 0))
    return in.fail("conv group must divide the output channels");
  if (x[1] != kDyn && w[1] != kDyn && x[1] != w[1] * group)
    return in.fail("conv input has " + Twine(x[1]) + " channels, the weight expects " + Twine(w[1] * group));
  SmallVector<int64_t> out = {x[0], w[0]};
  if (failed(windowShape(in, w.drop_front(2), false, out)))
    return failure();
  return in.result(out, in.elem(0));
}

LogicalResult inferPool(Inference &in) {
  ArrayRef<int64_t> x = in.shape(0);
  if (x.size() < 3 || x.size() > 5)
    return in.fail("pooling needs an input of rank 3 to 5");
  SmallVector<int64_t> out = {x[0], x[1]};
  if (failed(windowShape(in, in.arrayAttr("kernel_shape"), in.intAttr("ceil_mode", 0), out)))
    return failure();
  return in.result(out, in.elem(0));
}

LogicalResult inferPad(Inference &in) {
  ArrayRef<int64_t> s = in.shape(0);
  SmallVector<int64_t> pads = in.arrayAttr("pads");
  if (pads.size() != 2 * s.size())
    return in.fail("pad needs a begin and an end amount for each of the " + Twine(s.size()) + " axes");
  SmallVector<int64_t> out;
  for (size_t d = 0; d < s.size(); ++d) {
    int64_t dim = s[d] == kDyn ? kDyn : s[d] + pads[d] + pads[d + s.size()];
    if (dim != kDyn && dim < 0)
      return in.fail("pad crops axis " + Twine(d) + " below zero");
    out.push_back(dim);
  }
  return in.result(out, in.elem(0));
}

LogicalResult inferArg(Inference &in) {
  ArrayRef<int64_t> s = in.shape(0);
  int64_t axis;
  if (failed(checkAxis(in, in.intAttr("axis", 0), int64_t(s.size()), axis)))
    return failure();
  SmallVector<int64_t> out(s);
  if (in.intAttr("keepdims", 1))
    out[axis] = 1;
  else
    out.erase(out.begin() + axis);
  return in.result(out, IntegerType::get(in.context, 64));
}

LogicalResult inferTopK(Inference &in) {
  ArrayRef<int64_t> s = in.shape(0);
  int64_t axis;
  if (failed(checkAxis(in, in.intAttr("axis", -1), int64_t(s.size()), axis)))
    return failure();
  int64_t k = in.intAttr("k", -1);
  if (in.operands.size() > 1) { // k counted from shapes: known once they are
    if (k != -1 || !in.type(1).hasStaticShape() || in.type(1).getNumElements() != 1 || !in.elem(1).isInteger())
      return in.fail("top_k's count must be one integer, with k = -1");
    auto count = constantInts(in.operands[1]);
    k = count ? (*count)[0] : kDyn;
  }
  if (k != kDyn && (k < 0 || (s[axis] != kDyn && k > s[axis])))
    return in.fail("top_k's k must be between 0 and the axis size");
  SmallVector<int64_t> out(s);
  out[axis] = k;
  in.inferred.push_back(RankedTensorType::get(out, in.elem(0)));
  return in.result(out, IntegerType::get(in.context, 64));
}

// grouped_top_k: logits [rows, n] and a bias [n], n a multiple of `groups`, k of the experts in
// the kept groups at most.
LogicalResult inferGroupedTopK(Inference &in) {
  ArrayRef<int64_t> s = in.shape(0), bias = in.shape(1);
  if (s.size() != 2 || bias.size() != 1 || in.elem(1) != in.elem(0))
    return in.fail("grouped_top_k takes logits [rows, n] and a bias [n] of their type");
  const int64_t n = s[1], k = in.intAttr("k", -1), groups = in.intAttr("groups", 0),
                kept = in.intAttr("kept_groups", 0), top = in.intAttr("group_top", 2);
  if (n == kDyn || (bias[0] != kDyn && bias[0] != n))
    return in.fail("grouped_top_k needs a static number of experts and a bias for each");
  if (groups <= 0 || n % groups != 0 || kept <= 0 || kept > groups || top <= 0 || top > n / groups)
    return in.fail("grouped_top_k's groups must divide the experts, and kept_groups and group_top fit them");
  if (k < 0 || k > n)
    return in.fail("grouped_top_k's k must be between 0 and the number of experts");
  in.inferred.push_back(RankedTensorType::get({s[0], k}, in.elem(0)));
  return in.result({s[0], k}, IntegerType::get(in.context, 64));
}

LogicalResult inferTile(Inference &in) {
  ArrayRef<int64_t> s = in.shape(0);
  SmallVector<int64_t> repeats = in.arrayAttr("repeats");
  if (repeats.size() != s.size())
    return in.fail("tile needs one repeat count per axis");
  SmallVector<int64_t> out;
  for (size_t d = 0; d < s.size(); ++d) {
    if (repeats[d] < 0)
      return in.fail("tile repeat counts must not be negative");
    out.push_back(mulDims(s[d], repeats[d]));
  }
  return in.result(out, in.elem(0));
}

LogicalResult inferScatter(Inference &in) {
  if (failed(checkIndices(in, 1)))
    return failure();
  if (in.elem(2) != in.elem(0))
    return in.fail("updates must have the data's element type");
  return in.sameAs(0);
}

LogicalResult inferEinsum(Inference &in) {
  auto equation = in.attrs ? in.attrs.getAs<StringAttr>("equation") : StringAttr();
  if (!equation)
    return in.fail("einsum needs an equation");
  std::vector<int> ranks;
  for (unsigned i = 0; i < in.operands.size(); ++i) {
    ranks.push_back(int(in.type(i).getRank()));
    if (in.elem(i) != in.elem(0))
      return in.fail("einsum operands have different element types");
  }
  rt::EinsumSpec spec;
  if (std::string err = rt::parseEinsum(equation.str(), ranks, spec); !err.empty())
    return in.fail("einsum: " + err);
  SmallVector<int64_t> out;
  for (char c : spec.output) {
    int64_t dim = 1;
    for (unsigned i = 0; i < in.operands.size(); ++i)
      for (size_t d = 0; d < spec.inputs[i].size(); ++d)
        if (spec.inputs[i][d] == c && in.shape(i)[d] != 1)
          dim = in.shape(i)[d];
    out.push_back(dim);
  }
  return in.result(out, in.elem(0));
}

LogicalResult inferQuantize(Inference &in) {
  auto type = in.attrs ? in.attrs.getAs<TypeAttr>("output_type") : TypeAttr();
  if (!type)
    return in.fail("quantize_linear needs an output_type");
  return in.result(in.shape(0), type.getValue());
}

// Shapes of the four attention results (see AttentionOps.td).
LogicalResult inferAttention(Inference &in) {
  ArrayRef<int64_t> q = in.shape(0), k = in.shape(1), v = in.shape(2), past = in.shape(4);
  if (q.size() != k.size() || q.size() != v.size() || (q.size() != 3 && q.size() != 4))
    return in.fail("attention needs q, k and v of one rank, 3 or 4");
  int64_t batch = q[0], hq, hkv, sq, skv, d, dv;
  if (q.size() == 4) {
    hq = q[1], hkv = k[1], sq = q[2], skv = k[2], d = q[3], dv = v[3];
  } else {
    hq = in.intAttr("q_num_heads", 0), hkv = in.intAttr("kv_num_heads", 0);
    if (hq <= 0 || hkv <= 0)
      return in.fail("3-D attention needs q_num_heads and kv_num_heads");
    sq = q[1], skv = k[1];
    d = q[2] == kDyn ? kDyn : q[2] / hq;
    dv = v[2] == kDyn ? kDyn : v[2] / hkv;
  }
  const int64_t pastLen = in.type(4).getNumElements() == 0 ? 0 : (past.size() == 4 ? past[2] : kDyn);
  const int64_t total = skv == kDyn || pastLen == kDyn ? kDyn : skv + pastLen;
  Type t = in.elem(0);
  if (q.size() == 4)
    in.inferred.push_back(RankedTensorType::get({batch, hq, sq, dv}, t));
  else
    in.inferred.push_back(RankedTensorType::get({batch, sq, mulDims(hq, dv)}, t));
  in.inferred.push_back(RankedTensorType::get({batch, hkv, total, d}, t));
  in.inferred.push_back(RankedTensorType::get({batch, hkv, total, dv}, t));
  in.inferred.push_back(RankedTensorType::get({batch, hq, sq, total}, t));
  return success();
}

LogicalResult inferShape(Inference &in) {
  int64_t rank = in.type(0).getRank();
  int64_t start = in.intAttr("start", 0), end = in.intAttr("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  return in.result({std::max<int64_t>(0, end - start)}, IntegerType::get(in.context, 64));
}

LogicalResult inferReshape(Inference &in) {
  ArrayRef<int64_t> s = in.shape(0);
  if (in.type(1).getRank() != 1 || !in.elem(1).isInteger(64))
    return in.fail("reshape's shape operand must be a 1-D i64 tensor");
  auto target = constantInts(in.operands[1]);
  if (!target) {
    int64_t n = in.shape(1)[0];
    if (n == kDyn)
      return in.fail("reshape's shape operand must have a static length");
    return in.result(SmallVector<int64_t>(n, kDyn), in.elem(0));
  }
  const bool allowZero = in.intAttr("allowzero", 0);
  SmallVector<int64_t> out;
  int inferAt = -1;
  for (size_t i = 0; i < target->size(); ++i) {
    int64_t d = (*target)[i];
    if (d == 0 && !allowZero) {
      if (i >= s.size())
        return in.fail("reshape copies dimension " + Twine(i) + " that the input does not have");
      d = s[i];
    } else if (d == -1) {
      if (inferAt >= 0)
        return in.fail("reshape's shape has more than one -1");
      inferAt = int(i);
      d = kDyn;
    } else if (d < 0) {
      return in.fail("reshape's shape has a negative dimension " + Twine(d));
    }
    out.push_back(d);
  }
  int64_t total = 1, known = 1;
  bool staticIn = true, staticOut = true;
  for (int64_t d : s)
    d == kDyn ? (void)(staticIn = false) : (void)(total *= d);
  for (size_t i = 0; i < out.size(); ++i)
    if (int(i) != inferAt)
      out[i] == kDyn ? (void)(staticOut = false) : (void)(known *= out[i]);
  if (inferAt >= 0 && staticIn && staticOut) {
    if (known == 0 || total % known != 0)
      return in.fail("cannot reshape " + shapeStr(s) + " to " + shapeStr(*target));
    out[inferAt] = total / known;
  } else if (inferAt < 0 && staticIn && staticOut && known != total) {
    return in.fail("cannot reshape " + shapeStr(s) + " (" + Twine(total) + " elements) to " + shapeStr(out));
  }
  return in.result(out, in.elem(0));
}

LogicalResult inferUnsqueeze(Inference &in) {
  ArrayRef<int64_t> s = in.shape(0);
  SmallVector<int64_t> axes = in.arrayAttr("axes");
  const int64_t rank = int64_t(s.size() + axes.size());
  SmallVector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    int64_t d = a < 0 ? a + rank : a;
    if (d < 0 || d >= rank || inserted[d])
      return in.fail("unsqueeze axis " + Twine(a) + " is out of range or repeated");
    inserted[d] = true;
  }
  SmallVector<int64_t> out;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d)
    out.push_back(inserted[d] ? 1 : s[next++]);
  return in.result(out, in.elem(0));
}

LogicalResult inferSqueeze(Inference &in) {
  ArrayRef<int64_t> s = in.shape(0);
  const int64_t rank = int64_t(s.size());
  SmallVector<int64_t> axes = in.arrayAttr("axes");
  SmallVector<bool> removed(rank, false);
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      removed[d] = s[d] == 1;
  for (int64_t a : axes) {
    int64_t d = a < 0 ? a + rank : a;
    if (d < 0 || d >= rank)
      return in.fail("squeeze axis " + Twine(a) + " is out of range");
    if (s[d] != 1 && s[d] != kDyn)
      return in.fail("squeeze axis " + Twine(a) + " has size " + Twine(s[d]) + ", not 1");
    removed[d] = true;
  }
  SmallVector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d)
    if (!removed[d])
      out.push_back(s[d]);
  return in.result(out, in.elem(0));
}

LogicalResult inferFlatten(Inference &in) {
  ArrayRef<int64_t> s = in.shape(0);
  int64_t axis = in.intAttr("axis", 1);
  if (axis < 0)
    axis += int64_t(s.size());
  if (axis < 0 || axis > int64_t(s.size()))
    return in.fail("flatten axis is out of range");
  int64_t a = 1, b = 1;
  for (int64_t d = 0; d < int64_t(s.size()); ++d)
    d < axis ? a = mulDims(a, s[d]) : b = mulDims(b, s[d]);
  return in.result({a, b}, in.elem(0));
}

LogicalResult inferTranspose(Inference &in) {
  ArrayRef<int64_t> s = in.shape(0);
  SmallVector<int64_t> perm = in.arrayAttr("perm");
  if (perm.empty())
    for (int64_t d = int64_t(s.size()) - 1; d >= 0; --d)
      perm.push_back(d);
  if (perm.size() != s.size())
    return in.fail("transpose perm has " + Twine(perm.size()) + " entries for rank " + Twine(s.size()));
  SmallVector<bool> seen(s.size(), false);
  SmallVector<int64_t> out;
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(s.size()) || seen[p])
      return in.fail("transpose perm is not a permutation");
    seen[p] = true;
    out.push_back(s[p]);
  }
  return in.result(out, in.elem(0));
}

LogicalResult inferConcat(Inference &in) {
  if (in.operands.empty())
    return in.fail("concat needs at least one operand");
  const int64_t rank = in.type(0).getRank();
  int64_t axis;
  if (failed(checkAxis(in, in.intAttr("axis", 0), rank, axis)))
    return failure();
  SmallVector<int64_t> out(in.shape(0));
  for (unsigned i = 1; i < in.operands.size(); ++i) {
    if (in.type(i).getRank() != rank || in.elem(i) != in.elem(0))
      return in.fail("concat operands differ in rank or element type");
    for (int64_t d = 0; d < rank; ++d) {
      int64_t x = out[d], y = in.shape(i)[d];
      if (d == axis)
        out[d] = x == kDyn || y == kDyn ? kDyn : x + y;
      else if (x == kDyn)
        out[d] = y;
      else if (y != kDyn && x != y)
        return in.fail("concat operands differ in dimension " + Twine(d));
    }
  }
  return in.result(out, in.elem(0));
}

LogicalResult inferSplit(Inference &in) {
  ArrayRef<int64_t> s = in.shape(0);
  int64_t axis;
  if (failed(checkAxis(in, in.intAttr("axis", 0), int64_t(s.size()), axis)))
    return failure();
  SmallVector<int64_t> sizes = in.arrayAttr("split");
  if (sizes.empty()) { // num_outputs equal parts, as ONNX Split without sizes
    const int64_t parts = in.intAttr("num_outputs", 0);
    if (parts <= 0)
      return in.fail("split needs the sizes of its parts or num_outputs");
    const int64_t dim = s[axis];
    const int64_t chunk = dim == kDyn ? kDyn : (dim + parts - 1) / parts;
    for (int64_t i = 0, left = dim; i < parts; ++i) {
      SmallVector<int64_t> out(s);
      out[axis] = dim == kDyn ? kDyn : std::max<int64_t>(0, std::min(chunk, left));
      if (dim != kDyn)
        left -= chunk;
      in.inferred.push_back(RankedTensorType::get(out, in.elem(0)));
    }
    return success();
  }
  int64_t total = 0;
  for (int64_t part : sizes) {
    if (part < 0)
      return in.fail("split sizes must not be negative");
    total += part;
    SmallVector<int64_t> out(s);
    out[axis] = part;
    in.inferred.push_back(RankedTensorType::get(out, in.elem(0)));
  }
  if (s[axis] != kDyn && total != s[axis])
    return in.fail("split sizes add up to " + Twine(total) + ", not " + Twine(s[axis]));
  return success();
}

LogicalResult inferSlice(Inference &in) {
  ArrayRef<int64_t> s = in.shape(0);
  const int64_t rank = int64_t(s.size());
  SmallVector<int64_t> starts = in.arrayAttr("starts"), ends = in.arrayAttr("ends");
  SmallVector<int64_t> axes = in.arrayAttr("axes"), steps = in.arrayAttr("steps");
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return in.fail("slice starts, ends, axes and steps must have the same length");
  SmallVector<int64_t> out(s);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t d;
    if (failed(checkAxis(in, axes[i], rank, d)))
      return failure();
    if (steps[i] == 0)
      return in.fail("slice step must not be 0");
    const int64_t dim = s[d];
    if (dim == kDyn) {
      out[d] = kDyn;
      continue;
    }
    int64_t b = starts[i], e = ends[i], st = steps[i];
    if (b < 0)
      b += dim;
    if (e < 0)
      e += dim;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      out[d] = e > b ? (e - b + st - 1) / st : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      out[d] = b > e ? (b - e - st - 1) / -st : 0;
    }
  }
  return in.result(out, in.elem(0));
}

LogicalResult inferDynamicSlice(Inference &in) {
  SmallVector<int64_t> out(in.shape(0)), axes = in.arrayAttr("axes"), steps = in.arrayAttr("steps");
  const int64_t rank = int64_t(out.size());
  for (unsigned i = 1; i < 3; ++i)
    if (in.type(i).getRank() != 1 || !in.elem(i).isInteger() || in.shape(i)[0] != int64_t(axes.size()))
      return in.fail("dynamic_slice starts and ends must be 1-D integer tensors with one entry per axis");
  if (steps.size() != axes.size())
    return in.fail("dynamic_slice axes and steps must have the same length");
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t d;
    if (failed(checkAxis(in, axes[i], rank, d)))
      return failure();
    if (steps[i] == 0)
      return in.fail("slice step must not be 0");
    out[d] = kDyn;
  }
  return in.result(out, in.elem(0));
}

LogicalResult checkIndices(Inference &in, unsigned i) {
  if (!in.elem(i).isInteger(64) && !in.elem(i).isInteger(32))
    return in.fail("indices must be i32 or i64");
  return success();
}

LogicalResult inferGather(Inference &in) {
  ArrayRef<int64_t> s = in.shape(0);
  int64_t axis;
  if (failed(checkIndices(in, 1)) || failed(checkAxis(in, in.intAttr("axis", 0), int64_t(s.size()), axis)))
    return failure();
  SmallVector<int64_t> out(s.begin(), s.begin() + axis);
  out.append(in.shape(1).begin(), in.shape(1).end());
  out.append(s.begin() + axis + 1, s.end());
  return in.result(out, in.elem(0));
}

LogicalResult inferGatherElements(Inference &in) {
  int64_t axis;
  if (failed(checkIndices(in, 1)) || failed(checkAxis(in, in.intAttr("axis", 0), in.type(0).getRank(), axis)))
    return failure();
  if (in.type(1).getRank() != in.type(0).getRank())
    return in.fail("gather_elements indices must have the data's rank");
  return in.result(in.shape(1), in.elem(0));
}

LogicalResult inferGatherNd(Inference &in) {
  if (failed(checkIndices(in, 1)))
    return failure();
  ArrayRef<int64_t> data = in.shape(0), idx = in.shape(1);
  const int64_t b = in.intAttr("batch_dims", 0);
  if (idx.empty() || idx.back() == kDyn)
    return in.fail("gather_nd indices need a static last dimension");
  const int64_t k = idx.back();
  if (b < 0 || b + k > int64_t(data.size()) || b >= int64_t(idx.size()))
    return in.fail("gather_nd index depth exceeds the data rank");
  SmallVector<int64_t> out(idx.begin(), idx.end() - 1);
  out.append(data.begin() + b + k, data.end());
  return in.result(out, in.elem(0));
}

LogicalResult inferExpand(Inference &in) {
  if (in.type(1).getRank() != 1 || !in.elem(1).isInteger(64))
    return in.fail("expand's shape operand must be a 1-D i64 tensor");
  auto target = constantInts(in.operands[1]);
  if (!target) {
    int64_t n = in.shape(1)[0];
    if (n == kDyn)
      return in.fail("expand's shape operand must have a static length");
    return in.result(SmallVector<int64_t>(std::max<int64_t>(n, in.type(0).getRank()), kDyn), in.elem(0));
  }
  auto out = broadcast(in.shape(0), *target);
  if (failed(out))
    return in.fail("cannot expand " + shapeStr(in.shape(0)) + " to " + shapeStr(*target));
  return in.result(*out, in.elem(0));
}

LogicalResult inferRange(Inference &in) {
  if (failed(in.expectOperands(3)))
    return failure();
  auto start = constantScalar(in.operands[0]), limit = constantScalar(in.operands[1]),
       delta = constantScalar(in.operands[2]);
  int64_t n = kDyn;
  if (start && limit && delta) {
    if (*delta == 0)
      return in.fail("range delta must not be 0");
    n = std::max<int64_t>(0, int64_t(std::ceil((*limit - *start) / *delta)));
  }
  return in.result({n}, in.elem(0));
}

LogicalResult inferConstantOfShape(Inference &in) {
  auto dtype = in.attrs ? in.attrs.getAs<TypeAttr>("dtype") : TypeAttr();
  if (!dtype)
    return in.fail("constant_of_shape needs a dtype");
  if (in.type(0).getRank() != 1)
    return in.fail("constant_of_shape's shape operand must be 1-D");
  if (auto dims = constantInts(in.operands[0])) {
    for (int64_t d : *dims)
      if (d < 0)
        return in.fail("constant_of_shape dimensions must not be negative");
    return in.result(*dims, dtype.getValue());
  }
  int64_t n = in.shape(0)[0];
  if (n == kDyn)
    return in.fail("constant_of_shape's shape operand must have a static length");
  return in.result(SmallVector<int64_t>(n, kDyn), dtype.getValue());
}

LogicalResult inferCast(Inference &in) {
  auto to = in.attrs ? in.attrs.getAs<TypeAttr>("to") : TypeAttr();
  if (!to)
    return in.fail("cast needs a target type");
  return in.result(in.shape(0), to.getValue());
}

LogicalResult inferConstant(Inference &in) {
  auto value = in.attrs ? in.attrs.getAs<TypedAttr>("value") : TypedAttr();
  auto type = value ? dyn_cast<RankedTensorType>(value.getType()) : RankedTensorType();
  if (!type)
    return in.fail("constant needs a ranked tensor value");
  in.inferred.push_back(type);
  return success();
}

LogicalResult inferSameAsFirst(Inference &in) {
  if (failed(in.expectOperands(1)))
    return failure();
  return in.sameAs(0);
}

LogicalResult inferSoftmax(Inference &in) {
  int64_t axis;
  if (failed(checkAxis(in, in.intAttr("axis", -1), in.type(0).getRank(), axis)))
    return failure();
  return in.sameAs(0);
}

LogicalResult inferLinear(Inference &in) {
  ArrayRef<int64_t> x = in.shape(0), w = in.shape(1);
  if (x.empty() || w.size() != 2)
    return in.fail("linear needs an input of rank >= 1 and a rank-2 weight");
  const bool transB = in.intAttr("transB", 0);
  const int64_t k = transB ? w[1] : w[0], n = transB ? w[0] : w[1];
  if (k != kDyn && x.back() != kDyn && k != x.back())
    return in.fail("linear contracting dimensions differ: " + shapeStr(x) + " x " + shapeStr(w));
  SmallVector<int64_t> out(x.drop_back());
  const bool swiglu = in.stringAttr("activation", "none") == "swiglu";
  if (swiglu && n != kDyn && n % 2 != 0)
    return in.fail("a swiglu linear needs an even output width");
  out.push_back(swiglu && n != kDyn ? n / 2 : n);
  for (unsigned i = 2; i < 5; ++i)
    if (in.elem(i) != in.elem(0))
      return in.fail("linear operands have different element types");
  return in.result(out, in.elem(0));
}

LogicalResult inferExpertLinear(Inference &in) {
  ArrayRef<int64_t> x = in.shape(0), w = in.shape(1), ids = in.shape(2);
  if (x.size() != 2 || w.size() != 3 || ids.empty() || ids.size() > 2 || (ids.size() == 2 && ids[1] != 1))
    return in.fail("expert_linear needs an input [T, K], a weight [E, M, K] and ids [N] or [N, 1]");
  if (!in.elem(2).isInteger(64) || in.elem(1) != in.elem(0))
    return in.fail("expert_linear needs int64 ids and a weight of the input's element type");
  const int64_t repeat = in.intAttr("repeat", 1);
  const StringRef activation = in.stringAttr("activation", "none");
  const bool swiglu = activation == "swiglu" || activation == "clamped_swiglu", none = activation == "none";
  if (repeat < 1 || (!swiglu && !none) || (swiglu && (w[1] == kDyn || w[1] % 2 != 0)))
    return in.fail("expert_linear takes a repeat of 1 or more and an activation \"none\", \"swiglu\" or "
                   "\"clamped_swiglu\" (of an even, static width)");
  if (activation == "clamped_swiglu" && !(in.floatAttr("limit", 0.0) > 0.0))
    return in.fail("expert_linear's clamped_swiglu needs a limit above 0");
  if ((w[2] != kDyn && x[1] != kDyn && w[2] != x[1]) ||
      (ids[0] != kDyn && x[0] != kDyn && ids[0] != x[0] * repeat))
    return in.fail("expert_linear operands do not agree: " + shapeStr(x) + ", " + shapeStr(w) + ", " + shapeStr(ids));
  const int64_t width = swiglu ? w[1] / 2 : w[1];
  if (in.operands.size() > 5)
    return in.fail("expert_linear takes at most a combine and a bias after its ids");
  if (in.operands.size() > 4) {
    ArrayRef<int64_t> bias = in.shape(4);
    if (bias.size() != 2 || bias[0] != w[0] || bias[1] != w[1] || in.elem(4) != in.elem(0))
      return in.fail("expert_linear's bias must be [E, M] of the input's type: " + shapeStr(bias));
  }
  // (An empty combine: none, before a bias.)
  if (in.operands.size() < 4 || (in.shape(3).size() == 1 && in.shape(3)[0] == 0))
    return in.result({ids[0], width}, in.elem(0));
  ArrayRef<int64_t> combine = in.shape(3);
  if (combine.size() != 2 || combine[1] == kDyn || in.elem(3) != in.elem(0) ||
      (combine[0] != kDyn && ids[0] != kDyn && combine[0] * combine[1] != ids[0]))
    return in.fail("expert_linear's combine must be [R, g] of the input's type, R * g ids: " + shapeStr(combine));
  return in.result({combine[0], width}, in.elem(0));
}

LogicalResult inferAddNorm(Inference &in) {
  if (failed(verifyCompatibleShape(in.type(0), in.type(1))) || in.elem(0) != in.elem(1))
    return in.fail("the residual's type " + shapeStr(in.shape(1)) + " differs from the input's " + shapeStr(in.shape(0)));
  int64_t axis;
  if (failed(checkAxis(in, in.intAttr("axis", -1), in.type(0).getRank(), axis)))
    return failure();
  in.inferred.push_back(in.type(0));
  in.inferred.push_back(in.type(0));
  return success();
}

LogicalResult inferFusedAttention(Inference &in) {
  ArrayRef<int64_t> q = in.shape(0), v = in.shape(2);
  const int64_t hq = in.intAttr("q_num_heads", 0), hkv = in.intAttr("kv_num_heads", 0);
  if (in.operands.size() > 6 && (in.shape(6).size() != 1 || (in.shape(6)[0] != hq && in.shape(6)[0] != kDyn) ||
                                 in.elem(6) != in.elem(0)))
    return in.fail("fused_attention's sinks must be [q_num_heads] of q's element type");
  if (in.intAttr("packed_qkv", 0)) { // q carries Q, K and V side by side
    if (q.size() != 3 || hq <= 0 || hkv <= 0 || hq % hkv != 0)
      return in.fail("packed fused_attention needs q [batch, seq, (q_heads + 2 * kv_heads) * head]");
    const int64_t d = q[2] == kDyn ? kDyn : q[2] / (hq + 2 * hkv);
    if (d != kDyn && d * (hq + 2 * hkv) != q[2])
      return in.fail("the packed width is not a multiple of q_num_heads + 2 * kv_num_heads");
    return in.result({q[0], q[1], mulDims(hq, d)}, in.elem(0));
  }
  const size_t kvRank = in.shape(1).size();
  if (q.size() != 3 || (kvRank != 3 && kvRank != 4) || v.size() != kvRank)
    return in.fail("fused_attention needs q of rank 3 [batch, seq, heads * head] and k, v the same or "
                   "[batch, kv_heads, seq, head]");
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
    return in.fail("q_num_heads must be a positive multiple of kv_num_heads");
  const int64_t dv = kvRank == 4 ? v[3] : v[2] == kDyn ? kDyn : v[2] / hkv;
  return in.result({q[0], q[1], mulDims(hq, dv)}, in.elem(0));
}

LogicalResult inferLatentAttention(Inference &in) {
  ArrayRef<int64_t> q = in.shape(0), cache = in.shape(1), uk = in.shape(2), uv = in.shape(3);
  const bool hasUk = uk.size() != 1 || uk[0] != 0, hasUv = uv.size() != 1 || uv[0] != 0;
  if (q.size() != 4 || cache.size() != 3 || (hasUk && uk.size() != 3) || (hasUv && uv.size() != 3))
    return in.fail("latent_attention needs q [batch, heads, seq, nope + rope], cache [seq_k, batch, latent + rope], "
                   "w_uk [heads, nope, latent] or empty, w_uv [heads, latent, v] or empty");
  if (q[1] == kDyn || q[3] == kDyn || cache[2] == kDyn)
    return in.fail("latent_attention needs static head counts and widths");
  const int64_t heads = q[1], rope = in.intAttr("rope_dim", -1), latent = cache[2] - rope;
  if (rope < 0 || latent <= 0)
    return in.fail("latent_attention's rope_dim must be within the cache width");
  if ((hasUk && (uk[0] != heads || uk[2] != latent || q[3] != uk[1] + rope)) || (!hasUk && q[3] != latent + rope) ||
      (hasUv && (uv[0] != heads || uv[1] != latent)))
    return in.fail("latent_attention operand widths do not agree");
  if (in.operands.size() > 5 && (in.shape(5).size() != 1 || in.shape(5)[0] != heads || in.elem(5) != in.elem(0)))
    return in.fail("latent_attention's sinks must be [heads] of q's element type");
  return in.result({q[0], q[1], q[2], hasUv ? uv[2] : latent}, in.elem(0));
}

LogicalResult inferBool(Inference &in) { return in.result(in.shape(0), IntegerType::get(in.context, 1)); }

} // namespace

std::optional<SmallVector<int64_t>> constantInts(Value v) {
  DenseElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)) || !attr.getElementType().isInteger())
    return std::nullopt;
  SmallVector<int64_t> values;
  for (const APInt &x : attr.getValues<APInt>())
    values.push_back(attr.getElementType().isInteger(1) ? int64_t(x.getZExtValue()) : x.getSExtValue());
  return values;
}

LogicalResult inferResultTypes(StringRef opName, MLIRContext *context, std::optional<Location> location,
                               ValueRange operands, DictionaryAttr attributes, SmallVectorImpl<Type> &inferred) {
  Inference in{context, location, operands, attributes, inferred};
  StringRef name = opName.drop_front(5); // "llmc."
  if (name == "constant")
    return inferConstant(in);
  for (Value v : operands)
    if (!isa<RankedTensorType>(v.getType()))
      return in.fail("operands must be ranked tensors");
  // The fewest operands each op reads in its inference function.
  const unsigned minOperands = llvm::StringSwitch<unsigned>(name)
                                   .Case("attention", 7)
                                   .Case("fused_attention", 6)
                                   .Case("latent_attention", 5)
                                   .Case("linear", 5)
                                   .Case("add_layer_norm", 4)
                                   .Case("add_rms_norm", 3)
                                   .Case("rotary", 4)
                                   .Case("expert_linear", 3)
                                   .Case("grouped_top_k", 2)
                                   .Case("batch_norm", 5)
                                   .Cases({"where", "range", "scatter_elements", "scatter_nd", "instance_norm", "dynamic_slice",
                                           "group_norm"},
                                          3)
                                   .Cases({"quantize_linear", "dequantize_linear"}, 2)
                                   .Cases({"matmul", "gemm", "layer_norm", "rms_norm", "cumsum", "reshape", "gather", "conv", "mod",
                                           "gather_elements", "gather_nd", "expand"},
                                          2)
                                   .Case("concat", 1)
                                   .Default(1);
  if (failed(in.expectOperands(minOperands)))
    return failure();
  // The fused ops (and ONNX's RotaryEmbedding, which allows no more): isFusedFloatType.
  if (llvm::is_contained({"linear", "add_layer_norm", "add_rms_norm", "fused_attention", "rotary", "expert_linear",
                          "softmax_top_k", "grouped_top_k"},
                         name) &&
      !isFusedFloatType(in.elem(0)))
    return in.fail(name + " takes f32, f16 or bf16 operands");
  using Fn = LogicalResult (*)(Inference &);
  Fn fn = llvm::StringSwitch<Fn>(name)
              .Cases({"add", "sub", "mul", "div", "pow", "max", "min", "mod"},
                     [](Inference &i) { return inferElementwise(i, 2, false, 0); })
              .Cases({"and", "or", "xor"}, [](Inference &i) { return inferElementwise(i, 2, false, 0); })
              .Cases({"equal", "less", "less_equal", "greater", "greater_equal"},
                     [](Inference &i) { return inferElementwise(i, 2, true, 0); })
              .Case("where", [](Inference &i) { return inferElementwise(i, 3, false, 1); })
              .Cases({"neg", "abs", "sqrt", "reciprocal", "exp", "log", "tanh", "erf", "sigmoid", "relu", "cos",
                      "sin", "floor", "ceil", "not", "gelu", "identity", "silu", "cumsum", "trilu", "sign", "softplus",
                      "hard_swish", "round", "rotary", "elu", "leaky_relu", "hard_sigmoid", "batch_norm", "instance_norm",
                      "group_norm"},
                     inferSameAsFirst)
              .Case("is_nan", inferBool)
              .Case("cast", inferCast)
              .Case("conv", inferConv)
              .Cases({"max_pool", "average_pool"}, inferPool)
              .Case("max_pool_with_indices",
                    [](Inference &i) {
                      if (failed(inferPool(i)))
                        return failure();
                      return i.result(cast<RankedTensorType>(i.inferred.front()).getShape(),
                                      IntegerType::get(i.context, 64));
                    })
              .Case("matmul", inferMatMul)
              .Case("gemm", inferGemm)
              .Cases({"softmax", "log_softmax"}, inferSoftmax)
              .Cases({"layer_norm", "rms_norm"}, inferNorm)
              .Case("layer_norm_stats", inferLayerNormStats)
              .StartsWith("reduce_", inferReduce)
              .Case("shape", inferShape)
              .Case("einsum", inferEinsum)
              .Case("attention", inferAttention)
              .Case("linear", inferLinear)
              .Case("expert_linear", inferExpertLinear)
              .Cases({"add_layer_norm", "add_rms_norm"}, inferAddNorm)
              .Case("fused_attention", inferFusedAttention)
              .Case("latent_attention", inferLatentAttention)
              .Case("quantize_linear", inferQuantize)
              .Case("dequantize_linear", [](Inference &i) { return i.result(i.shape(0), i.elem(1)); })
              .Cases({"arg_max", "arg_min"}, inferArg)
              .Cases({"top_k", "softmax_top_k"}, inferTopK) // (softmax_top_k: over the last axis)
              .Case("grouped_top_k", inferGroupedTopK)
              .Case("tile", inferTile)
              .Cases({"scatter_elements", "scatter_nd"}, inferScatter)
              .Case("pad", inferPad)
              .Case("reshape", inferReshape)
              .Case("unsqueeze", inferUnsqueeze)
              .Case("squeeze", inferSqueeze)
              .Case("flatten", inferFlatten)
              .Case("transpose", inferTranspose)
              .Case("concat", inferConcat)
              .Case("split", inferSplit)
              .Case("slice", inferSlice)
              .Case("dynamic_slice", inferDynamicSlice)
              .Case("gather", inferGather)
              .Case("gather_elements", inferGatherElements)
              .Case("gather_nd", inferGatherNd)
              .Case("expand", inferExpand)
              .Case("range", inferRange)
              .Case("constant_of_shape", inferConstantOfShape)
              .Default(nullptr);
  if (!fn)
    return in.fail("no type inference for op '" + opName + "'");
  return fn(in);
}

bool areCompatibleTypes(TypeRange lhs, TypeRange rhs) {
  if (lhs.size() != rhs.size())
    return false;
  for (auto [a, b] : llvm::zip(lhs, rhs)) {
    auto ta = dyn_cast<RankedTensorType>(a), tb = dyn_cast<RankedTensorType>(b);
    if (!ta || !tb || ta.getElementType() != tb.getElementType() || ta.getRank() != tb.getRank())
      return false;
    for (auto [x, y] : llvm::zip(ta.getShape(), tb.getShape()))
      if (x != kDyn && y != kDyn && x != y)
        return false;
  }
  return true;
}

} // namespace llmc

// Small matchers and builders shared by the raising and fusion passes.
#pragma once

#include "llmc/Dialect/KernelBridge.h"
#include "llmc/Dialect/LlmcDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

namespace llmc::fusion {

inline mlir::RankedTensorType tensorType(mlir::Value v) { return mlir::cast<mlir::RankedTensorType>(v.getType()); }

// Whether a tensor's elements are of a fused kernel's type (isFusedFloatType, LlmcDialect.h).
inline bool isFusedFloat(mlir::Value v) { return isFusedFloatType(tensorType(v).getElementType()); }

// The value of a constant whose elements are all equal (a splat or a single element).
inline std::optional<double> scalarValue(mlir::Value v) {
  mlir::DenseElementsAttr attr;
  if (!v || !mlir::matchPattern(v, mlir::m_Constant(&attr)) || attr.getNumElements() < 1)
    return std::nullopt;
  if (!attr.isSplat() && attr.getNumElements() != 1)
    return std::nullopt;
  mlir::Type t = attr.getElementType();
  if (mlir::isa<mlir::FloatType>(t))
    return attr.getSplatValue<llvm::APFloat>().convertToDouble();
  if (t.isInteger())
    return double(attr.getSplatValue<llvm::APInt>().getSExtValue());
  return std::nullopt;
}

inline bool isScalar(mlir::Value v, double expected, double relTol = 1e-4) {
  auto s = scalarValue(v);
  return s && std::fabs(*s - expected) <= relTol * std::max(1.0, std::fabs(expected));
}

// `user` where it is where(is_nan(p), 0, p), the guard torch's scaled_dot_product_attention puts
// on its probabilities p (a fully masked row's NaNs made 0); else null.
inline WhereOp nanGuardOf(mlir::Operation *user, mlir::Value p) {
  auto where = mlir::dyn_cast<WhereOp>(user);
  auto isNan = where ? where.getCondition().getDefiningOp<IsNanOp>() : IsNanOp();
  return isNan && isNan.getInput() == p && where.getY() == p && isScalar(where.getX(), 0.0) ? where : WhereOp();
}

// Whether `c`, a model's constant of element type `t`, is `exact` as exporters write it: within
// `tol`, or in a 16-bit type that exact's rounding to it (bf16 holds 0.044715 as 0.0446777).
inline bool nearConstant(double c, double exact, double tol, mlir::Type t) {
  if (std::fabs(c - exact) <= tol)
    return true;
  const rt::DType d = toKernelDType(t);
  return rt::isHalfWidth(d) && c == double(rt::widenFloat(rt::toHalfWidth(float(exact), d), d));
}

inline bool isConstant(mlir::Value v) { return v && mlir::matchPattern(v, mlir::m_Constant()); }

// The op of type OpT that defines `v`, or null.
template <typename OpT> OpT def(mlir::Value v) { return v ? v.getDefiningOp<OpT>() : OpT(); }

// For a commutative binary op: the operand that is not `one`, or null when neither is.
inline mlir::Value other(mlir::Operation *op, mlir::Value one) {
  if (op->getOperand(0) == one)
    return op->getOperand(1);
  if (op->getOperand(1) == one)
    return op->getOperand(0);
  return {};
}

// The factors of a product: descends into llmc.mul ops whose result has one use (the product
// itself), so x * 0.5 * y and x * (0.5 * y) both give {x, 0.5, y}. `root` must be a mul.
inline void productFactors(mlir::Value root, llvm::SmallVectorImpl<mlir::Value> &factors, bool isRoot = true) {
  auto mul = def<MulOp>(root);
  if (mul && (isRoot || root.hasOneUse())) {
    productFactors(mul.getLhs(), factors, false);
    productFactors(mul.getRhs(), factors, false);
    return;
  }
  factors.push_back(root);
}

// Creates the llmc op `name` ("llmc.linear") with result types from its type inference; null
// (and no op) when inference refuses the operands.
inline mlir::Operation *create(mlir::OpBuilder &b, mlir::Location loc, llvm::StringRef name, mlir::ValueRange operands,
                               llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
  llvm::SmallVector<mlir::Type> types;
  if (mlir::failed(inferResultTypes(name, b.getContext(), std::nullopt, operands, b.getDictionaryAttr(attrs), types)))
    return nullptr;
  mlir::OperationState state(loc, name);
  state.addOperands(operands);
  state.addAttributes(attrs);
  state.addTypes(types);
  return b.create(state);
}

// A pattern on OpT that counts its rewrites (`++count`), for the patterns that need nothing else
// in their constructor.
template <typename OpT, typename Counter> struct CountedPattern : mlir::OpRewritePattern<OpT> {
  Counter &count;
  CountedPattern(mlir::MLIRContext *ctx, Counter &count) : mlir::OpRewritePattern<OpT>(ctx), count(count) {}
};

// `root` replaced by the last of `made` (the ops a pattern built, in order; null where a build
// failed) when that op exists and its results have root's types; otherwise every op of `made`
// erased, last first, and failure: the IR as it was.
inline mlir::LogicalResult replaceByLastBuilt(mlir::PatternRewriter &rewriter, mlir::Operation *root,
                                              llvm::ArrayRef<mlir::Operation *> made) {
  mlir::Operation *last = made.empty() ? nullptr : made.back();
  if (last && last->getResultTypes() == root->getResultTypes()) {
    rewriter.replaceOp(root, last->getResults());
    return mlir::success();
  }
  for (mlir::Operation *op : llvm::reverse(made))
    if (op)
      rewriter.eraseOp(op);
  return mlir::failure();
}

// Erases what a pattern built in front of `anchor` since `before` (the op in front of it when the
// build began, or null) and fails: a failed match leaves the IR as it was. Left behind, the dead
// ops would count as progress to the greedy driver, which would try again without end ("the
// attention rewrites did not converge").
inline mlir::LogicalResult abandonBuilt(mlir::PatternRewriter &rewriter, mlir::Operation *anchor,
                                        mlir::Operation *before) {
  for (mlir::Operation *op = anchor->getPrevNode(); op && op != before;) {
    mlir::Operation *previous = op->getPrevNode();
    rewriter.eraseOp(op);
    op = previous;
  }
  return mlir::failure();
}

// create() for ops of one result: that result, or null when inference refuses the operands.
inline mlir::Value createValue(mlir::OpBuilder &b, mlir::Location loc, llvm::StringRef name, mlir::ValueRange operands,
                               llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
  mlir::Operation *op = create(b, loc, name, operands, attrs);
  return op ? op->getResult(0) : mlir::Value();
}

// The rows [B, S, H * D] that x [B, S, H, D] (static H and D) is a reshape of, or null: the value
// a head split came from.
inline mlir::Value rowsSplitInto(mlir::Value x) {
  auto type = tensorType(x);
  auto r = def<ReshapeOp>(x);
  if (!r || type.getRank() != 4 || type.isDynamicDim(2) || type.isDynamicDim(3))
    return {};
  auto in = tensorType(r.getInput());
  if (in.getRank() != 3 || in.getDimSize(2) != type.getDimSize(2) * type.getDimSize(3) ||
      in.getDimSize(0) != type.getDimSize(0) || in.getDimSize(1) != type.getDimSize(1))
    return {};
  return r.getInput();
}

// A 1-D i64 constant: the shape operand of a reshape, the axes of a slice.
inline mlir::Value i64Constant(mlir::OpBuilder &b, mlir::Location loc, llvm::ArrayRef<int64_t> values) {
  auto type = mlir::RankedTensorType::get({int64_t(values.size())}, b.getI64Type());
  return ConstantOp::create(b, loc, type, mlir::DenseElementsAttr::get(type, values));
}

// The bytes of a constant of a fused float type (f32, f16, bf16; inline or in a resource blob),
// in kernel layout: a view of the attribute's own storage, or of `storage` where it is expanded
// (a splat). What the passes that move weights without computing on them (merging parallel
// linears, transposing weights) read; their element size: elementSize.
inline mlir::FailureOr<llvm::ArrayRef<char>> floatBytes(mlir::Value v, std::vector<char> &storage) {
  auto c = def<ConstantOp>(v);
  if (!c || !isFusedFloat(v))
    return mlir::failure();
  return elementsBytes(c.getValue(), storage);
}

// Whether floatBytes can read `v`.
inline bool isFloatConstant(mlir::Value v) {
  std::vector<char> storage;
  return mlir::succeeded(floatBytes(v, storage));
}

inline size_t elementSize(mlir::Type t) { return t.getIntOrFloatBitWidth() / 8; }

// `in` [rows, cols] of kSize-byte elements into `out` [cols, rows], in tiles that stay in cache
// (a weight has up to ~10^9 values); `in` may be unaligned.
template <size_t kSize> void transposeTiles(const char *in, char *out, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 64;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile)
      for (int64_t r = r0; r < std::min(rows, r0 + kTile); ++r)
        for (int64_t c = c0; c < std::min(cols, c0 + kTile); ++c)
          std::memcpy(out + size_t(c * rows + r) * kSize, in + size_t(r * cols + c) * kSize, kSize);
}

// The same for f32 (`size` 4) or f16 and bf16 (2): a weight matrix to the other layout.
inline void transposeMatrix(const char *in, char *out, int64_t rows, int64_t cols, size_t size) {
  if (size == 2)
    transposeTiles<2>(in, out, rows, cols);
  else
    transposeTiles<4>(in, out, rows, cols);
}

// Element i of floatBytes' `bytes` of type `t`, as a float.
inline float floatAt(llvm::ArrayRef<char> bytes, mlir::Type t, int64_t i) {
  return rt::floatAt(bytes.data(), toKernelDType(t), i);
}

// The values of a constant of a fused float type (f32, f16, bf16) as floats, or none: what the
// passes that compute on weights read (folding convolutions and their affine ops, absorbing MLA
// weights), writing their results back with floatConstant.
inline std::optional<std::vector<float>> floatValues(mlir::Value v) {
  std::vector<char> storage;
  auto bytes = floatBytes(v, storage);
  if (mlir::failed(bytes))
    return std::nullopt;
  const mlir::Type t = tensorType(v).getElementType();
  std::vector<float> out(bytes->size() / elementSize(t));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = floatAt(*bytes, t, int64_t(i));
  return out;
}

// A constant of `type` holding `bytes` (kernel layout; a resource blob when large).
inline mlir::Value bytesConstant(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type,
                                 llvm::ArrayRef<char> bytes) {
  return ConstantOp::create(b, loc, type, makeElements(type, bytes));
}

// A constant of `type` (f32, or f16 or bf16, to which `values` are rounded to nearest even)
// holding `values` (a resource blob when large).
inline mlir::Value floatConstant(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type,
                                 const std::vector<float> &values) {
  const rt::DType d = toKernelDType(type.getElementType());
  if (!rt::isHalfWidth(d))
    return bytesConstant(b, loc, type, {reinterpret_cast<const char *>(values.data()), values.size() * sizeof(float)});
  std::vector<uint16_t> narrow(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    narrow[i] = rt::toHalfWidth(values[i], d);
  return bytesConstant(b, loc, type, {reinterpret_cast<const char *>(narrow.data()), narrow.size() * 2});
}

// A 0-element constant: how fused ops mark an absent optional operand.
inline mlir::Value emptyTensor(mlir::OpBuilder &b, mlir::Location loc, mlir::Type element) {
  auto type = mlir::RankedTensorType::get({0}, element);
  return ConstantOp::create(b, loc, type, mlir::DenseElementsAttr::get(type, llvm::ArrayRef<mlir::Attribute>{}));
}

inline bool isEmpty(mlir::Value v) { return tensorType(v).hasStaticShape() && tensorType(v).getNumElements() == 0; }

// Whether a reshape moves nothing: to its input's own type with at most one dynamic dimension
// (the element count fixes it), as a dynamic export keeps them (their target computed per run).
inline bool isIdentityReshape(ReshapeOp r) {
  return r.getResult().getType() == r.getInput().getType() && tensorType(r.getResult()).getNumDynamicDims() <= 1;
}

// v = OpT(a, c) or OpT(c, a) with c a scalar constant and a not a constant: a, and c's value.
template <typename OpT> mlir::Value byScalar(mlir::Value v, double &c) {
  auto op = def<OpT>(v);
  for (int i = 0; op && i < 2; ++i)
    if (auto s = scalarValue(op->getOperand(1 - i)); s && !isConstant(op->getOperand(i))) {
      c = *s;
      return op->getOperand(i);
    }
  return {};
}

// The operands of a fused_attention rebuilt from `op` with these six: op's sinks follow where it
// has them (the one optional operand a rebuild must not drop).
inline llvm::SmallVector<mlir::Value, 7> attentionOperands(FusedAttentionOp op, mlir::Value q, mlir::Value k,
                                                           mlir::Value v, mlir::Value mask, mlir::Value cos,
                                                           mlir::Value sin) {
  llvm::SmallVector<mlir::Value, 7> operands{q, k, v, mask, cos, sin};
  if (mlir::Value sinks = op.getSinks())
    operands.push_back(sinks);
  return operands;
}

// Whether `axis` (negative from the end) of a value of rank `rank` is axis `want`.
inline bool isAxis(int64_t axis, int64_t want, int64_t rank) { return axis == want || axis + rank == want; }

// An axis counted from 0 (a negative one from the end). The ops' I64Attr getters return the
// attribute unsigned: `axis < 0` on them is never true.
inline int64_t axisFrom0(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// x[..., start:end:step] on the last axis (an end at or past the last dimension counts as `end`
// when `end` is that dimension).
inline bool isSliceOfLast(mlir::Value v, mlir::Value of, int64_t start, int64_t end, int64_t step = 1) {
  auto s = def<SliceOp>(v);
  if (!s || s.getInput() != of || s.getStarts().size() != 1)
    return false;
  const int64_t rank = tensorType(of).getRank();
  const int64_t d = tensorType(of).getShape().back();
  return isAxis(s.getAxes()[0], rank - 1, rank) && s.getSteps()[0] == step && s.getStarts()[0] == start &&
         (s.getEnds()[0] == end || (end == d && s.getEnds()[0] >= d));
}

// Whether `split` keeps the leading dimensions of `in` (all but `in`'s last): a reshape that only
// cuts the last axis. (Dynamic dimensions compare by place, as the exporters' reshapes keep them.)
inline bool keepsLeading(mlir::RankedTensorType in, mlir::RankedTensorType split) {
  for (int64_t d = 0; d + 1 < in.getRank(); ++d)
    if (split.getDimSize(d) != in.getDimSize(d))
      return false;
  return true;
}

// The value v is a part of: the input of the split or slice that made v, or null.
inline mlir::Value partedFrom(mlir::Value v) {
  if (auto split = def<SplitOp>(v))
    return split.getInput();
  auto slice = def<SliceOp>(v);
  return slice ? slice.getInput() : mlir::Value();
}

// Whether v is half `index` (0: the first, 1: the second) of x's last axis, D static and even: a
// result of a split of x in two equal parts there, or a slice.
inline bool isHalf(mlir::Value v, mlir::Value x, int64_t index) {
  auto t = tensorType(x);
  const int64_t rank = t.getRank(), d = rank ? t.getShape().back() : 0;
  if (rank < 1 || d == mlir::ShapedType::kDynamic || d % 2 != 0)
    return false;
  if (auto split = def<SplitOp>(v)) {
    if (split.getInput() != x || split.getNumResults() != 2 || split.getResult(index) != v ||
        !isAxis(split.getAxis(), rank - 1, rank))
      return false;
    if (auto sizes = split.getSplit())
      return *sizes == llvm::ArrayRef<int64_t>{d / 2, d / 2};
    return split.getNumOutputs() == 2;
  }
  return isSliceOfLast(v, x, index * d / 2, (index + 1) * d / 2);
}

// A reduction over the last dimension only, keeping it (keepdims 1, ONNX's default) or not.
inline bool reducesLastAxis(mlir::Operation *op, bool keeping) {
  auto axes = op->getAttrOfType<mlir::DenseI64ArrayAttr>("axes");
  auto keep = op->getAttrOfType<mlir::IntegerAttr>("keepdims");
  const int64_t rank = tensorType(op->getOperand(0)).getRank();
  return axes && axes.size() == 1 && isAxis(axes[0], rank - 1, rank) && (keep ? keep.getInt() : 1) == (keeping ? 1 : 0);
}
inline bool reducesLastAxisKeepingIt(mlir::Operation *op) { return reducesLastAxis(op, true); }

} // namespace llmc::fusion

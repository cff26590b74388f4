// llmc-fold-transposes (see Passes.td): transposes that compose, transposes that move only unit
// dimensions, and heads/sequence swaps that a rotary embedding does not need.
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"
#include "Tensor.h"

#include "mlir/IR/Builders.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCFOLDTRANSPOSES
#include "Passes.h.inc"

namespace {

using namespace mlir;
using fusion::def;

// The permutation of a transpose (an empty one reverses the dimensions).
SmallVector<int64_t> permutationOf(TransposeOp t) {
  const int64_t rank = fusion::tensorType(t.getInput()).getRank();
  SmallVector<int64_t> perm(t.getPerm().begin(), t.getPerm().end());
  if (perm.empty())
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  return perm;
}

Value transposed(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> perm) {
  return fusion::createValue(b, loc, "llmc.transpose", {x}, {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(perm))});
}

// rotary(transpose(x, (0, 2, 1, 3))) with x [B, S, H, D] -> transpose(rotary of x's rows
// [B, S, H * D]): the rotary reads both layouts, and the transpose it leaves behind may then meet
// the next one (a KV-cache export transposes the rotated keys back to [S, B, H, D]). False, and
// nothing made, when the rotary is not of that form.
bool sinkBelowRotary(RotaryOp rotary) {
  auto t = def<TransposeOp>(rotary.getInput());
  if (!t || rotary.getNumHeads() != 0 || permutationOf(t) != ArrayRef<int64_t>{0, 2, 1, 3})
    return false;
  Value x = t.getInput();
  ArrayRef<int64_t> shape = fusion::tensorType(x).getShape();
  const int64_t heads = shape[2], head = shape[3];
  if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(head))
    return false;
  OpBuilder b(rotary);
  Location loc = rotary.getLoc();
  NamedAttrList attrs(rotary->getAttrs());
  attrs.set("num_heads", b.getI64IntegerAttr(heads));
  Value flatShape = fusion::i64Constant(b, loc, {0, 0, heads * head});
  Value headsShape = fusion::i64Constant(b, loc, {0, 0, heads, head});
  Value rows = fusion::createValue(b, loc, "llmc.reshape", {x, flatShape});
  Value rotated = rows ? fusion::createValue(b, loc, "llmc.rotary",
                                             {rows, rotary.getCos(), rotary.getSin(), rotary.getPositionIds()}, attrs)
                       : Value();
  Value split = rotated ? fusion::createValue(b, loc, "llmc.reshape", {rotated, headsShape}) : Value();
  Value result = split ? transposed(b, loc, split, {0, 2, 1, 3}) : Value();
  if (!result || result.getType() != rotary.getType()) {
    for (Value v : {result, split, rotated, rows, headsShape, flatShape}) // undo, last made first
      if (v && v.use_empty())
        v.getDefiningOp()->erase();
    return false;
  }
  rotary.getResult().replaceAllUsesWith(result);
  rotary->erase();
  if (t->use_empty())
    t->erase();
  return true;
}

// When `perm` keeps the order of the dimensions of `shape` that are not 1, the transpose moves no
// data: squeeze those unit dimensions, unsqueeze them where the result has them.
Value withoutDataMovement(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> perm) {
  ArrayRef<int64_t> shape = fusion::tensorType(x).getShape();
  if (perm.size() != shape.size() || !rt::transposeMovesNothing(shape.data(), perm.data(), int(shape.size())))
    return {};
  SmallVector<int64_t> squeeze, unsqueeze;
  for (size_t i = 0; i < perm.size(); ++i)
    if (shape[size_t(perm[i])] == 1)
      unsqueeze.push_back(int64_t(i));
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] == 1)
      squeeze.push_back(int64_t(d));
  Operation *squeezed =
      fusion::create(b, loc, "llmc.squeeze", {x}, {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(squeeze))});
  if (!squeezed || unsqueeze.empty())
    return squeezed ? squeezed->getResult(0) : Value();
  Operation *out = fusion::create(b, loc, "llmc.unsqueeze", {squeezed->getResult(0)},
                                  {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(unsqueeze))});
  return out ? out->getResult(0) : Value();
}

bool staticHeads(Value x) {
  auto type = fusion::tensorType(x);
  return type.getRank() == 4 && !type.isDynamicDim(2) && !type.isDynamicDim(3);
}

// [B, S, H * D] for x [B, S, H, D] with static heads: the 3-D value x was split from, or x
// reshaped (a view).
Value sequenceRows(OpBuilder &b, Location loc, Value x) {
  if (Value rows = fusion::rowsSplitInto(x))
    return rows;
  auto type = fusion::tensorType(x);
  const int64_t width = type.getDimSize(2) * type.getDimSize(3);
  return fusion::createValue(b, loc, "llmc.reshape", {x, fusion::i64Constant(b, loc, {0, 0, width})});
}

// A fused_attention that reads its keys and values as [B, H, S, D] transposes (0, 2, 1, 3) of
// [B, S, H, D] values reads those values' [B, S, H * D] rows instead, the transposes gone: keys
// read that way with tables are not rotated then either (`rotate_keys = 0`, as they were not in
// the 4-D layout). GPT-NeoX's keys, rotated apart, and values without a cache. False, and nothing
// made, when the attention is not of that form.
bool readRowsInPlace(FusedAttentionOp op) {
  if (op.getPackedQkv() || op.getKvTimeMajor())
    return false;
  Value xs[2];
  Value operands[2] = {op.getK(), op.getV()};
  for (int i = 0; i < 2; ++i) {
    auto t = def<TransposeOp>(operands[i]);
    if (!t || fusion::tensorType(operands[i]).getRank() != 4 || permutationOf(t) != ArrayRef<int64_t>{0, 2, 1, 3} ||
        fusion::tensorType(t.getInput()).getDimSize(2) != int64_t(op.getKvNumHeads()))
      return false;
    xs[i] = t.getInput();
    if (!staticHeads(xs[i]))
      return false;
  }
  OpBuilder b(op);
  Value k = sequenceRows(b, op.getLoc(), xs[0]), v = sequenceRows(b, op.getLoc(), xs[1]);
  if (!k || !v) // (a reshape of such a value to [B, S, H * D] always infers)
    return false;
  op.getKMutable().assign(k);
  op.getVMutable().assign(v);
  if (!fusion::isEmpty(op.getCos()))
    op->setAttr("rotate_keys", b.getI64IntegerAttr(0));
  for (Value old : operands) { // the transposes, and the reshapes to heads that only they read
    if (!old.use_empty())
      continue;
    Operation *t = old.getDefiningOp();
    Value in = t->getOperand(0);
    t->erase();
    if (in.use_empty() && in.getDefiningOp<ReshapeOp>())
      in.getDefiningOp()->erase();
  }
  return true;
}

struct FoldTransposes : impl::LlmcFoldTransposesBase<FoldTransposes> {
  RewriteCounter composed{"llmc-fold-transposes", "transpose pairs composed"};
  RewriteCounter moved{"llmc-fold-transposes", "transposes of unit dimensions turned into squeeze/unsqueeze"};
  RewriteCounter sunk{"llmc-fold-transposes", "heads/sequence transposes moved below a rotary"};
  RewriteCounter rowsInPlace{"llmc-fold-transposes", "attentions reading keys and values without their transposes"};

  void runOnOperation() override {
    SmallVector<RotaryOp> rotaries;
    getOperation().walk([&](RotaryOp r) { rotaries.push_back(r); });
    for (RotaryOp r : rotaries)
      sunk += sinkBelowRotary(r) ? 1 : 0;
    SmallVector<FusedAttentionOp> attentions;
    getOperation().walk([&](FusedAttentionOp a) { attentions.push_back(a); });
    for (FusedAttentionOp a : attentions)
      rowsInPlace += readRowsInPlace(a) ? 1 : 0;
    SmallVector<TransposeOp> transposes;
    getOperation().walk([&](TransposeOp t) { transposes.push_back(t); });
    for (TransposeOp t : transposes) {
      OpBuilder b(t);
      Value input = t.getInput();
      SmallVector<int64_t> perm = permutationOf(t);
      auto inner = def<TransposeOp>(input);
      if (inner) { // x -> inner -> t: one transpose of x
        const SmallVector<int64_t> first = permutationOf(inner);
        SmallVector<int64_t> both;
        for (int64_t p : perm)
          both.push_back(first[size_t(p)]);
        input = inner.getInput(), perm = both;
      }
      bool identity = true;
      for (size_t i = 0; i < perm.size(); ++i)
        identity &= perm[i] == int64_t(i);
      Value replacement = identity ? input : withoutDataMovement(b, t.getLoc(), input, perm);
      if (!replacement && inner)
        replacement = transposed(b, t.getLoc(), input, perm);
      if (!replacement || replacement.getType() != t.getType()) {
        // Undo what was made (squeeze and unsqueeze, or a transpose) back to the input.
        for (Value v = replacement; v && v != input && v.use_empty();) {
          Operation *made = v.getDefiningOp();
          v = made->getOperand(0);
          made->erase();
        }
        continue;
      }
      composed += inner ? 1 : 0;
      if (!identity && !replacement.getDefiningOp<TransposeOp>())
        ++moved;
      t.getResult().replaceAllUsesWith(replacement);
      t->erase();
      if (inner && inner->use_empty())
        inner->erase();
    }
  }
};

} // namespace
} // namespace llmc

// llmc-kv-cache-layout: a decoder's KV cache in the Hugging Face past/present form is
// [batch, heads, length, head]; this pass turns each past/present pair to [length, batch,
// heads * head], in which a longer cache extends a shorter one at its end whatever the batch. The
// runtime then appends a step's keys in place (the present output shares the past input's buffer)
// instead of copying the cache, and attention reads it where it is (kv_time_major).
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "llmc/Dialect/SymbolicShapes.h"

#include <cstring>

namespace llmc {
#define GEN_PASS_DEF_LLMCKVCACHELAYOUT
#include "Passes.h.inc"

namespace {

using namespace mlir;
using fusion::createValue;
using fusion::i64Constant;

struct KvCacheLayout : impl::LlmcKvCacheLayoutBase<KvCacheLayout> {
  RewriteCounter pairs{"llmc-kv-cache-layout", "past/present pairs turned length-major"};

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      concatenateWithTheHead(func.getArgument(i), ret);
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto name = func.getArgAttrOfType<StringAttr>(i, "llmc.name");
      if (!name || !name.getValue().starts_with("past_key_values."))
        continue;
      BlockArgument past = func.getArgument(i);
      auto type = dyn_cast<RankedTensorType>(past.getType());
      if (!type || type.getRank() != 4 || type.isDynamicDim(1) || type.isDynamicDim(3))
        continue;
      // One concatenation; other users may only read the shape (the past length, for the mask).
      ConcatOp concat;
      bool others = false;
      for (Operation *user : past.getUsers()) {
        if (auto c = dyn_cast<ConcatOp>(user); c && !concat)
          concat = c;
        else
          others |= !isa<ShapeOp>(user);
      }
      if (others)
        continue;
      if (!concat || concat.getInputs().size() != 2 || concat.getInputs()[0] != past ||
          (concat.getAxis() != 2 && concat.getAxis() != -2))
        continue;
      // The concatenation must be returned as the matching present output.
      const std::string present = "present." + name.getValue().drop_front(strlen("past_key_values.")).str();
      int resultIndex = -1;
      for (unsigned r = 0; r < ret.getNumOperands(); ++r) {
        auto resultName = func.getResultAttrOfType<StringAttr>(r, "llmc.name");
        if (ret.getOperand(r) == concat.getResult() && resultName && resultName.getValue() == present)
          resultIndex = int(r);
      }
      if (resultIndex < 0)
        continue;
      rewrite(func, i, concat, ret, unsigned(resultIndex));
      ++pairs;
    }
    // The signature follows the entry block (FuncOp::getArgumentTypes reads the old signature).
    func.setFunctionType(
        FunctionType::get(func.getContext(), func.getBody().front().getArgumentTypes(), ret.getOperandTypes()));
  }

  // A cache of one head kept without it: present = unsqueeze(concat(squeeze(past, 1), new, axis
  // 1), 1) (DeepSeek-V3.2's indexer keys, [batch, past, width] in transformers' cache, given to
  // the export as [batch, 1, past, width])  ->  present = concat(past, unsqueeze(new, 1), axis 2),
  // the form the pairs below take; other readers of the old concatenation read it squeezed.
  static void concatenateWithTheHead(BlockArgument past, func::ReturnOp ret) {
    auto type = dyn_cast<RankedTensorType>(past.getType());
    if (!type || type.getRank() != 4 || type.getDimSize(1) != 1)
      return;
    SqueezeOp squeeze; // the one reader but those of the shape (the past length, for the mask)
    for (Operation *user : past.getUsers())
      if (!isa<ShapeOp>(user)) {
        if (squeeze || !isa<SqueezeOp>(user))
          return;
        squeeze = cast<SqueezeOp>(user);
      }
    if (!squeeze || squeeze.getAxes() != ArrayRef<int64_t>{1} || !squeeze.getResult().hasOneUse())
      return;
    auto concat = dyn_cast<ConcatOp>(*squeeze.getResult().getUsers().begin());
    if (!concat || concat.getInputs().size() != 2 || concat.getInputs()[0] != squeeze.getResult() ||
        (concat.getAxis() != 1 && concat.getAxis() != -2))
      return;
    UnsqueezeOp present;
    for (Operation *user : concat.getResult().getUsers())
      if (auto u = dyn_cast<UnsqueezeOp>(user);
          u && u.getAxes() == ArrayRef<int64_t>{1} && llvm::is_contained(ret.getOperands(), u.getResult()))
        present = u;
    if (!present)
      return;
    OpBuilder b(concat);
    Location loc = concat.getLoc();
    Value fresh = createValue(b, loc, "llmc.unsqueeze", {concat.getInputs()[1]},
                              {b.getNamedAttr("axes", b.getDenseI64ArrayAttr({1}))});
    Value cache = createValue(b, loc, "llmc.concat", {past, fresh}, {b.getNamedAttr("axis", b.getI64IntegerAttr(2))});
    present.getResult().replaceAllUsesWith(cache);
    present.erase();
    concat.getResult().replaceAllUsesWith(
        createValue(b, loc, "llmc.squeeze", {cache}, {b.getNamedAttr("axes", b.getDenseI64ArrayAttr({1}))}));
    concat.erase();
    squeeze.erase();
  }

  void rewrite(func::FuncOp func, unsigned argIndex, ConcatOp concat, func::ReturnOp ret, unsigned resultIndex) {
    BlockArgument past = func.getArgument(argIndex);
    auto type = cast<RankedTensorType>(past.getType());
    const int64_t heads = type.getDimSize(1), head = type.getDimSize(3);
    // [B, H, P, D] -> [P, B, H*D]: the past symbol moves to dimension 0, the batch to 1.
    past.setType(RankedTensorType::get({type.getDimSize(2), type.getDimSize(0), heads * head}, type.getElementType()));
    if (auto symbols = func.getArgAttrOfType<ArrayAttr>(argIndex, kDimSymbolsAttr); symbols && symbols.size() == 4)
      func.setArgAttr(argIndex, kDimSymbolsAttr, ArrayAttr::get(func.getContext(), {symbols[2], symbols[0], symbols[3]}));
    OpBuilder b(concat);
    Location loc = concat.getLoc();
    // The new entries to length-major: [B, H, S, D] -> [S, B, H, D] -> [S, B, H*D].
    Value fresh = createValue(b, loc, "llmc.transpose", {concat.getInputs()[1]},
                              {b.getNamedAttr("perm", b.getDenseI64ArrayAttr({2, 0, 1, 3}))});
    fresh = createValue(b, loc, "llmc.reshape", {fresh, i64Constant(b, loc, {0, 0, heads * head})});
    Value cache = createValue(b, loc, "llmc.concat", {past, fresh}, {b.getNamedAttr("axis", b.getI64IntegerAttr(0))});
    // Other readers (attention) get the heads-major view back; raising attention removes it again.
    Value view = createValue(b, loc, "llmc.reshape", {cache, i64Constant(b, loc, {0, 0, heads, head})});
    view =
        createValue(b, loc, "llmc.transpose", {view}, {b.getNamedAttr("perm", b.getDenseI64ArrayAttr({1, 2, 0, 3}))});
    concat.getResult().replaceAllUsesWith(view);
    ret.setOperand(resultIndex, cache);
    concat.erase();
    // Shape readers: the old shape [B, H, P, D] assembled from the new one.
    for (Operation *user : llvm::to_vector(past.getUsers())) {
      auto shape = dyn_cast<ShapeOp>(user);
      if (!shape)
        continue;
      OpBuilder sb(shape);
      auto slice = [&](int64_t start, int64_t end) {
        return createValue(
            sb, loc, "llmc.shape", {past},
            {sb.getNamedAttr("start", sb.getI64IntegerAttr(start)), sb.getNamedAttr("end", sb.getI64IntegerAttr(end))});
      };
      Value full = createValue(sb, loc, "llmc.concat",
                               {slice(1, 2), i64Constant(sb, loc, {heads}), slice(0, 1), i64Constant(sb, loc, {head})},
                               {sb.getNamedAttr("axis", sb.getI64IntegerAttr(0))});
      const int64_t start =
          shape->getAttrOfType<IntegerAttr>("start") ? shape->getAttrOfType<IntegerAttr>("start").getInt() : 0;
      const int64_t end =
          shape->getAttrOfType<IntegerAttr>("end") ? shape->getAttrOfType<IntegerAttr>("end").getInt() : 4;
      Value part = createValue(sb, loc, "llmc.slice", {full},
                               {sb.getNamedAttr("starts", sb.getDenseI64ArrayAttr({start})),
                                sb.getNamedAttr("ends", sb.getDenseI64ArrayAttr({end})),
                                sb.getNamedAttr("axes", sb.getDenseI64ArrayAttr({0})),
                                sb.getNamedAttr("steps", sb.getDenseI64ArrayAttr({1}))});
      shape.getResult().replaceAllUsesWith(part);
      shape.erase();
    }
  }
};

} // namespace
} // namespace llmc

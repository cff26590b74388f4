// llmc-raise-attention-mask (see Passes.td): an attention mask built from index arithmetic and
// the attention_mask input becomes `is_causal` and that input read as the mask.
#include "MaskElements.h"
#include "PatternUtil.h"
#include "Passes.h"
#include "RewriteStats.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace llmc {
#define GEN_PASS_DEF_LLMCRAISEATTENTIONMASK
#include "Passes.h.inc"

namespace {

using namespace mlir;
using mask::Affine;

// What a mask was proven to be: keys after each query's causal frontier hidden, keys `window`
// or more positions before the query hidden (a sliding window; 0: none), and/or keys where `keep`
// (a graph input [batch or 1, keys], i1 or i64) is 0 hidden.
struct RaisedMask {
  bool causal = false;
  int64_t window = 0;
  Value keep;
};

// The boolean mask under an additive one: where(m, 0, -huge) adds 0 where m keeps a key and a
// value that no score survives where it hides one (Hugging Face uses the lowest float).
Value booleanMask(Value mask) {
  if (fusion::tensorType(mask).getElementType().isInteger(1))
    return mask;
  auto where = fusion::def<WhereOp>(mask);
  if (!where || !fusion::isScalar(where.getX(), 0.0))
    return {};
  auto hidden = fusion::scalarValue(where.getY());
  return hidden && *hidden <= -1e30 ? where.getCondition() : Value();
}

// A float mask split into its boolean part and a bias added beside it (ALiBi's position bias, see
// llmc-raise-attention): where(m, bias, -huge), or bias + where(m, 0, -huge) in either order;
// without a bias, booleanMask's. `hidden` is the -huge a hidden score takes.
struct MaskParts {
  Value boolean, bias, hidden;
};

std::optional<MaskParts> maskParts(Value mask) {
  if (Value boolean = booleanMask(mask))
    return MaskParts{boolean, {}, {}};
  auto huge = [](Value v) {
    auto c = fusion::scalarValue(v);
    return c && *c <= -1e30;
  };
  if (auto where = fusion::def<WhereOp>(mask);
      where && huge(where.getY()) && fusion::tensorType(where.getCondition()).getElementType().isInteger(1))
    return MaskParts{where.getCondition(), where.getX(), where.getY()};
  if (auto add = fusion::def<AddOp>(mask))
    for (int i = 0; i < 2; ++i)
      if (Value boolean = booleanMask(add->getOperand(i)); boolean && fusion::isFusedFloat(add->getOperand(1 - i)))
        return MaskParts{boolean, add->getOperand(1 - i), fusion::def<WhereOp>(add->getOperand(i)).getY()};
  return std::nullopt;
}

// The attention's score dimensions [batch, heads, queries, keys] as symbolic expressions.
std::vector<DimExpr> scoreDims(FusedAttentionOp op, const SymbolicShapes &shapes) {
  const auto &q = shapes.shape(op.getQ()).dims;
  DimExpr keys = q[1];
  if (!op.getPackedQkv()) {
    const auto &k = shapes.shape(op.getK()).dims;
    keys = k.size() == 4 ? k[2] : op.getKvTimeMajor() ? k[0] : k[1];
  }
  return {q[0], DimExpr::constant(op.getQNumHeads()), q[1], keys};
}

// q [batch, heads, queries, ...], the cache [keys, batch, ...].
std::vector<DimExpr> scoreDims(LatentAttentionOp op, const SymbolicShapes &shapes) {
  const auto &q = shapes.shape(op.getQ()).dims;
  return {q[0], q[1], q[2], shapes.shape(op.getCache()).dims[0]};
}

// An index comparison `diff <= 0` that no element of the scores breaks, for every size up to
// the plan's bounds: its largest value over the score indices is at most 0. (Sliding-window
// masks compare key and query positions with the window, which is wider than the longest
// sequence many plans take.)
bool holdsEverywhere(const Affine &diff, const std::vector<DimExpr> &scores, const DimAtoms &atoms) {
  DimExpr largest = diff.offset;
  for (size_t d = 0; d < diff.coef.size(); ++d)
    if (diff.coef[d] > 0)
      largest = largest + DimExpr::constant(diff.coef[d]) * (scores[d] - DimExpr::constant(1));
  return atoms.range(largest).hi <= 0;
}

// `diff <= 0` as a sliding window: (i + Sk - Sq) - j - (window - 1) <= 0, the keys `window` or
// more positions before the query (at i + Sk - Sq, as the causal frontier aligns it) hidden.
// Returns the window, or 0 where the comparison is not one.
int64_t slidingWindow(const Affine &diff, const std::vector<DimExpr> &scores) {
  if (diff.coef != std::vector<int64_t>{0, 0, 1, -1})
    return 0;
  std::optional<int64_t> rest = (diff.offset - (scores[3] - scores[2])).asConstant();
  return rest && *rest <= 0 ? 1 - *rest : 0;
}

std::optional<RaisedMask> raise(Value boolean, const std::vector<DimExpr> &scores, const SymbolicShapes &shapes,
                                const mask::MaskElements &elements) {
  auto conjunction = elements.conjunctionOf(boolean);
  if (!conjunction)
    return std::nullopt;
  // The mask broadcasts to the scores: its elements in the scores' index (b, h, i, j).
  const auto &maskDims = shapes.shape(boolean).dims;
  if (maskDims.size() > 4)
    return std::nullopt;
  mask::IndexMap toScores;
  for (size_t d = 0; d < maskDims.size(); ++d) {
    const size_t e = d + 4 - maskDims.size();
    if (maskDims[d].asConstant() == 1)
      toScores.push_back(Affine::constant(4, DimExpr::constant(0)));
    else if (maskDims[d] == scores[e])
      toScores.push_back(Affine::index(4, e));
    else
      return std::nullopt;
  }
  const mask::Conjunction inScores = mask::compose(*conjunction, toScores, 4);

  RaisedMask raised;
  const Affine zero = Affine::constant(4, DimExpr::constant(0));
  const Affine batch = Affine::index(4, 0), key = Affine::index(4, 3);
  // j - i - (Sk - Sq) <= 0: the causal frontier, bottom-right aligned as is_causal's.
  Affine frontier = Affine::constant(4, scores[2] - scores[3]);
  frontier.coef = {0, 0, -1, 1};
  for (const mask::Atom &atom : inScores.atoms) {
    if (!atom.source) {
      if (atom.diff == frontier) {
        raised.causal = true;
        continue;
      }
      if (holdsEverywhere(atom.diff, scores, shapes.atoms()))
        continue;
      if (int64_t window = slidingWindow(atom.diff, scores); window > 0) {
        raised.window = raised.window ? std::min(raised.window, window) : window;
        continue;
      }
      return std::nullopt;
    }
    // keep[b, j] (or keep[0, j] of a single row): the key padding of each sequence.
    auto type = fusion::tensorType(atom.source);
    const auto &sourceDims = shapes.shape(atom.source).dims;
    if (type.getRank() != 2 || !(type.getElementType().isInteger(1) || type.getElementType().isInteger(64)) ||
        !(atom.index[1] == key) ||
        !((atom.index[0] == batch && sourceDims[0] == scores[0]) ||
          (atom.index[0] == zero && sourceDims[0].asConstant() == 1)) ||
        (raised.keep && raised.keep != atom.source))
      return std::nullopt;
    raised.keep = atom.source;
  }
  return raised;
}

struct RaiseAttentionMask : impl::LlmcRaiseAttentionMaskBase<RaiseAttentionMask> {
  RewriteCounter causal{"llmc-raise-attention-mask", "masks raised to is_causal"};
  RewriteCounter padding{"llmc-raise-attention-mask", "masks read from an input"};
  RewriteCounter windows{"llmc-raise-attention-mask", "masks raised to sliding_window"};

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    std::string error;
    FailureOr<SymbolicShapes> shapes = SymbolicShapes::analyze(func, error);
    if (failed(shapes))
      return; // shapes the analysis cannot express: masks stay as they are
    mask::MaskElements elements(*shapes);
    llvm::SmallVector<Operation *> attentions; // fused_attention and latent_attention
    func.walk([&](Operation *op) {
      if (isa<FusedAttentionOp, LatentAttentionOp>(op))
        attentions.push_back(op);
    });
    llvm::DenseMap<Value, Value> views; // per input: [B, T] as [B, 1, 1, T]
    bool changed = false;
    for (Operation *op : attentions) {
      auto fused = dyn_cast<FusedAttentionOp>(op);
      auto latent = dyn_cast<LatentAttentionOp>(op);
      Value current = fused ? fused.getMask() : latent.getMask();
      if (fusion::isEmpty(current))
        continue;
      auto parts = maskParts(current);
      if (!parts || (parts->bias && !fused)) // (latent_attention's masks carry no bias)
        continue;
      auto raised =
          raise(parts->boolean, fused ? scoreDims(fused, *shapes) : scoreDims(latent, *shapes), *shapes, elements);
      if (!raised || (raised->window && !fused)) // (latent_attention has no window)
        continue;
      // The mask left: the input's view where it reads one (the bias kept where it keeps a key),
      // else the bias, else none.
      Value mask = parts->bias;
      if (raised->keep) {
        if (!views.count(raised->keep)) {
          OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
          views[raised->keep] = fusion::createValue(b, op->getLoc(), "llmc.unsqueeze", {raised->keep},
                                                    {b.getNamedAttr("axes", b.getDenseI64ArrayAttr({1, 2}))});
        }
        Value keep = views[raised->keep];
        if (keep && parts->bias) {
          OpBuilder b(op);
          if (!fusion::tensorType(keep).getElementType().isInteger(1))
            keep = fusion::createValue(b, op->getLoc(), "llmc.cast", {keep},
                                       {b.getNamedAttr("to", TypeAttr::get(b.getI1Type()))});
          keep = keep ? fusion::createValue(b, op->getLoc(), "llmc.where", {keep, parts->bias, parts->hidden})
                      : Value();
        }
        mask = keep;
        if (!mask) // a type that could not be inferred: leave this mask alone
          continue;
        ++padding;
      } else if (!mask) {
        OpBuilder b(op);
        mask = fusion::emptyTensor(b, op->getLoc(), b.getF32Type());
      }
      (fused ? fused.getMaskMutable() : latent.getMaskMutable()).assign(mask);
      if (raised->causal) {
        op->setAttr("is_causal", OpBuilder(op).getI64IntegerAttr(1));
        ++causal;
      }
      if (raised->window) { // (narrowing a window the attention may have already)
        const int64_t had = fused.getSlidingWindow();
        op->setAttr("sliding_window", OpBuilder(op).getI64IntegerAttr(had ? std::min(had, raised->window)
                                                                          : raised->window));
        ++windows;
      }
      changed = true;
    }
    if (!changed)
      return;
    // The ops that built the masks, from the last back (a user before what it uses).
    Block &body = func.getBody().front();
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (isOpTriviallyDead(&op))
        op.erase();
  }
};

} // namespace
} // namespace llmc

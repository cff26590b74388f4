// What a plan lets one launch do for another, or skip (PlanShortcuts.h).
#include "PlanShortcuts.h"

#include <algorithm>

namespace llmc::rt::cuda::exec {

// Norms that the linear after them can compute (smallLinear's normScale): an rms_norm or
// add_rms_norm over the last axis whose result only the next op reads, a linear with an [N, K]
// weight in the same storage, with a scale per element. The two are next to each other in the
// plan and in the run order (`order`, empty: the plan's), so that nothing between them could read
// the norm's sum before the linear writes it.
// Where a norm op's scale is among its inputs: after the residual of an add_ norm.
size_t normScaleInput(const PlanOp &norm) { return norm.kernel.rfind("add_", 0) == 0 ? 2 : 1; }

void findNormsBeforeLinears(Executor &ex, const std::vector<int> &order) {
  const llmc_plan_t &plan = *ex.plan;
  ex.normOfLinear.assign(plan.ops.size(), -1);
  ex.linearOfNorm.assign(plan.ops.size(), -1);
  const std::vector<int> position = positionsIn(order, plan.ops.size());
  const std::vector<int> readers = usesOf(plan).readers;
  for (size_t k = 0; k + 1 < plan.ops.size(); ++k) {
    const PlanOp &norm = plan.ops[k], &linear = plan.ops[k + 1];
    const bool add = norm.kernel == "add_rms_norm";
    if ((norm.kernel != "rms_norm" && !add) || position[k + 1] != position[k] + 1 || linear.kernel != "linear" ||
        linear.attrs.getInt("transB", 0) == 0 ||
        linear.inputs.empty() || norm.outputs.empty() || linear.inputs[0] != norm.outputs[0] ||
        readers[size_t(norm.outputs[0])] != 1)
      continue;
    const PlanValue &x = plan.values[size_t(norm.inputs[0])], &y = plan.values[size_t(norm.outputs[0])];
    const PlanValue &scale = plan.values[size_t(norm.inputs[normScaleInput(norm)])];
    const int64_t axis = norm.attrs.getInt("axis", -1);
    if (!isFloat(x) || onDevice(x) != onDevice(y) || x.shape.rank < 1 || (axis != -1 && axis != x.shape.rank - 1) ||
        scale.shape.numel() != lastDim(x.shape) || onDevice(scale) != onDevice(x))
      continue;
    // The residual sum is written by one warp while the others run: the linear must not read it.
    if (add && norm.outputs.size() > 1 &&
        std::find(linear.inputs.begin() + 1, linear.inputs.end(), norm.outputs[1]) != linear.inputs.end())
      continue;
    ex.linearOfNorm[k] = int(k + 1);
    ex.normOfLinear[k + 1] = int(k);
  }
}

// From value `v` back through copy ops (reshape, squeeze, ...: the same bytes), each value read
// by the next op alone, to the first op that is not a copy: its index, with `way` the values
// from `v` back to that op's output; -1 where a value has other readers or no producer.
int backThroughCopies(const llmc_plan_t &plan, const ValueUses &uses, int v, std::vector<int> &way,
                      std::vector<int> *transposes) {
  way.clear();
  if (transposes)
    transposes->clear();
  while (v >= 0 && uses.readers[size_t(v)] == 1 && uses.producer[size_t(v)] >= 0) {
    way.push_back(v);
    const PlanOp &made = plan.ops[size_t(uses.producer[size_t(v)])];
    const bool transpose = transposes && made.kernel == "transpose";
    if (transpose)
      transposes->push_back(uses.producer[size_t(v)]);
    if (!isCopyKernel(made.kernel) && !transpose)
      return uses.producer[size_t(v)];
    const bool aliased = !made.inputs.empty() && onDevice(plan.values[size_t(made.inputs[0])]) == onDevice(plan.values[size_t(v)]);
    v = aliased ? made.inputs[0] : -1;
  }
  return -1;
}

// Splits that the linear before them can do (smallLinear's output pieces), for ops that run in
// `order` (empty: the plan's): a split of the last axis into at most kMaxLinearPieces pieces in
// the linear's storage, the one reader of the output of a linear with an [N, K] weight and no
// activation, gate or residual (through copy ops, each value read once, the last axis kept),
// with nothing between the two in the run order but those copies and ops that launch nothing
// (`unneeded`: a reshape's target shape), so that writing the pieces at the linear's turn skips
// no op; the arena keeps the linear's inputs until the split (planDeviceArena). A merged QKV
// projection's split, with the key rotation and the cache appends that the split does
// (inPlaceOf). Per op: the split after a linear, or -1.
std::vector<int> splitsAfterLinears(const llmc_plan_t &plan, const std::vector<int> &order,
                                    const std::vector<bool> &unneeded) {
  std::vector<int> splitOfLinear(plan.ops.size(), -1);
  const std::vector<int> position = positionsIn(order, plan.ops.size());
  const ValueUses uses = usesOf(plan);
  std::vector<int> way;
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    const PlanOp &split = plan.ops[k];
    if (split.kernel != "split" || split.inputs.empty() || split.outputs.size() > size_t(kMaxLinearPieces))
      continue;
    const int l = backThroughCopies(plan, uses, split.inputs[0], way);
    if (l < 0 || plan.ops[size_t(l)].kernel != "linear" || position[k] <= position[size_t(l)])
      continue;
    const PlanOp &linear = plan.ops[size_t(l)];
    const std::string_view activation = linear.attrs.getString("activation");
    auto absent = [&](size_t i) { return !givenInput(plan, linear, i); };
    const PlanValue &in = plan.values[size_t(split.inputs[0])], &out = plan.values[size_t(way.back())];
    if (linear.attrs.getInt("transB", 0) == 0 || !(activation.empty() || activation == "none") || !absent(3) ||
        !absent(4) || !isFloat(out) || in.shape.rank < 1 || axisOf(split, in.shape.rank) != in.shape.rank - 1 ||
        lastDim(in.shape) <= 0 || lastDim(in.shape) != lastDim(out.shape) ||
        onDevice(plan.values[size_t(linear.inputs[0])]) != onDevice(out))
      continue;
    bool fits = true;
    for (int o : split.outputs)
      fits &= o >= 0 && onDevice(plan.values[size_t(o)]) == onDevice(out);
    for (int pos = position[size_t(l)] + 1; fits && pos < position[k]; ++pos) {
      const int between = order.empty() ? pos : order[size_t(pos)];
      fits = unneeded[size_t(between)] || std::any_of(way.begin(), way.end() - 1, [&](int v) {
               return uses.producer[size_t(v)] == between;
             });
    }
    if (fits)
      splitOfLinear[size_t(l)] = int(k);
  }
  return splitOfLinear;
}

void findSplitsAfterLinears(Executor &ex, const std::vector<int> &order) {
  ex.splitOfLinear = splitsAfterLinears(*ex.plan, order, ex.unneeded);
  ex.linearOfSplit.assign(ex.plan->ops.size(), -1);
  for (size_t k = 0; k < ex.splitOfLinear.size(); ++k)
    if (ex.splitOfLinear[k] >= 0)
      ex.linearOfSplit[size_t(ex.splitOfLinear[k])] = int(k);
}

// Per op: for a fused_attention whose output (through copy ops, read once each) only a linear
// reads, that linear (its weight, at most 64 MiB, fits the L2 cache beside the rest), else -1.
// A decode step's attention leaves the memory mostly idle; its output projection's weight
// comes in meanwhile.
std::vector<int> weightsAfterAttention(const llmc_plan_t &plan) {
  std::vector<int> linearOf(plan.ops.size(), -1);
  const ValueUses uses = usesOf(plan);
  std::vector<int> way;
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    const PlanOp &linear = plan.ops[k];
    if (linear.kernel != "linear" || linear.inputs.size() < 2 || linear.inputs[1] < 0)
      continue;
    const int attention = backThroughCopies(plan, uses, linear.inputs[0], way);
    const PlanValue &w = plan.values[size_t(linear.inputs[1])];
    if (attention >= 0 && plan.ops[size_t(attention)].kernel == "fused_attention" &&
        w.kind == fb::ValueKind_Weight && size_t(w.shape.numel()) * dtypeSize(onDevice(w)) <= (size_t(64) << 20))
      linearOf[size_t(attention)] = int(k);
  }
  return linearOf;
}

// Whether attention op `op` reads the first halves of its rotation tables (inputs 4 and 5), each a
// concatenation of one table with itself (halfOf). Not with rotary_dim, whose tables are read as
// they are.
bool readsHalfTables(const PlanOp &op, const std::vector<int> &halfOf) {
  return op.kernel == "fused_attention" && op.attrs.getInt("rotary_dim", 0) == 0 && op.inputs.size() > 5 &&
         op.inputs[4] >= 0 && op.inputs[5] >= 0 &&
         halfOf[size_t(op.inputs[4])] >= 0 && halfOf[size_t(op.inputs[5])] >= 0;
}

// (Through copy ops that keep the last axis too: a table's rows stay where they were.)
std::vector<int> repeatedHalves(const llmc_plan_t &plan) {
  std::vector<int> halfOf(plan.values.size(), -1);
  for (const PlanOp &op : plan.ops) {
    if (isCopyKernel(op.kernel) && !op.inputs.empty() && op.inputs[0] >= 0 && op.outputs.size() == 1 &&
        halfOf[size_t(op.inputs[0])] >= 0) {
      const PlanValue &in = plan.values[size_t(op.inputs[0])], &out = plan.values[size_t(op.outputs[0])];
      if (onDevice(in) == onDevice(out) && out.shape.rank >= 1 && lastDim(out.shape) == lastDim(in.shape))
        halfOf[size_t(op.outputs[0])] = halfOf[size_t(op.inputs[0])];
      continue;
    }
    if (op.kernel != "concat" || op.inputs.size() != 2 || op.inputs[0] < 0 || op.inputs[0] != op.inputs[1] ||
        op.outputs.size() != 1)
      continue;
    const PlanValue &in = plan.values[size_t(op.inputs[0])], &out = plan.values[size_t(op.outputs[0])];
    if (isFloat(in) && onDevice(in) == onDevice(out) && in.shape.rank >= 1 &&
        axisOf(op, in.shape.rank) == in.shape.rank - 1)
      halfOf[size_t(op.outputs[0])] = op.inputs[0];
  }
  return halfOf;
}

// Per op, whether the device needs nothing it computes: none of its outputs is a plan output or
// read by a needed op, other than as the target shape of a reshape (the executor takes every
// shape from the plan's dimension expressions on the host; the shape op and concatenation that
// build a reshape's target at run time would only launch for nothing) or as an attention's
// rotation table that is a concatenation of one table with itself (the attention reads that one:
// halfOf).
std::vector<bool> unneededOnDevice(const llmc_plan_t &plan, const std::vector<int> &halfOf) {
  std::vector<bool> unneeded(plan.ops.size(), false), read(plan.values.size(), false);
  for (int v : plan.outputs)
    read[size_t(v)] = true;
  for (size_t k = plan.ops.size(); k-- > 0;) { // readers come after the ops they read from
    const PlanOp &op = plan.ops[k];
    unneeded[k] = !op.outputs.empty() &&
                  std::none_of(op.outputs.begin(), op.outputs.end(), [&](int v) { return v >= 0 && read[size_t(v)]; });
    if (unneeded[k])
      continue;
    const bool halves = readsHalfTables(op, halfOf);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const int v = op.inputs[i];
      if (v >= 0 && !(op.kernel == "reshape" && i == 1))
        read[size_t(halves && (i == 4 || i == 5) ? halfOf[size_t(v)] : v)] = true;
    }
  }
  return unneeded;
}

// Whether `past` and `present` are a cache linked with llmc_context_link_cache (one buffer).
bool linkedInPlace(const Executor &ex, int past, int present) {
  return ex.resident[size_t(past)] && ex.resident[size_t(present)] && ex.device_[size_t(past)] == ex.device_[size_t(present)];
}

InPlace inPlaceOf(const Executor &ex, const std::vector<int> &order) {
  const llmc_plan_t &plan = *ex.plan;
  const ValueUses uses = usesOf(plan);
  InPlace p{std::vector<int>(plan.values.size(), -1), std::vector<Executor::SplitRotary>(plan.ops.size()),
            std::vector<int>(plan.ops.size(), -1), std::vector<bool>(plan.values.size(), false),
            std::vector<AppendWay>(plan.ops.size())};
  std::vector<int> way, transposes;
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    const PlanOp &concat = plan.ops[k];
    if (concat.kernel != "concat" || ex.ops[k].lengthSlot < 0 || !linkedInPlace(ex, concat.inputs[0], concat.outputs[0]))
      continue;
    const int maker = backThroughCopies(plan, uses, concat.inputs[1], way, &transposes);
    bool sameType = maker >= 0;
    for (size_t i = 0; sameType && i < way.size(); ++i)
      sameType = onDevice(plan.values[size_t(way[i])]) == onDevice(plan.values[size_t(concat.outputs[0])]);
    if (!sameType)
      continue;
    // A concatenation (DeepSeek's latent row: its normed part and its rotated part), no cache's
    // own, makes the rows: in their order where the cache holds one sequence (batch 1: [length,
    // 1, ...]) and no transpose is on the way; a batch's through transposes where it joins rows
    // [B, S, W] (or [B, 1, S, W]) along their last axis, which it then writes where the
    // transposes would put them (chooseInPlace), as a split does its pieces.
    const PlanOp &makerOp = plan.ops[size_t(maker)];
    const std::string &made = makerOp.kernel;
    const Shape &rows = plan.values[size_t(concat.outputs[0])].shape;
    const Shape &madeRows = plan.values[size_t(way.back())].shape; // [B, S, W] or [B, 1, S, W]
    const bool concatenated =
        made == "concat" && ex.ops[size_t(maker)].lengthSlot < 0 &&
        (transposes.empty() ? rows.rank >= 2 && rows.dims[1] == 1
                            : madeRows.rank >= 3 && axisOf(makerOp, madeRows.rank) == madeRows.rank - 1);
    if (made != "split" && made != "rotary" && !concatenated)
      continue;
    if (!transposes.empty()) {
      AppendWay &rows = p.appendWays[k];
      rows.values = way;
      for (int w : way)
        rows.producers.push_back(uses.producer[size_t(w)]);
    }
    for (int w : way)
      p.cacheRows[size_t(w)] = int(k), p.elsewhere[size_t(w)] = transposes.empty();
  }
  const std::vector<int> position = positionsIn(order, plan.ops.size());
  for (size_t r = 0; r < plan.ops.size(); ++r) {
    const PlanOp &rotary = plan.ops[r];
    if (rotary.kernel != "rotary" || plan.values[size_t(rotary.inputs[0])].shape.rank != 3 ||
        rotary.attrs.getInt("num_heads", 0) <= 0 || p.cacheRows[size_t(rotary.outputs[0])] < 0)
      continue;
    const int split = backThroughCopies(plan, uses, rotary.inputs[0], way);
    if (split < 0 || plan.ops[size_t(split)].kernel != "split" || p.rotaryOfSplit[size_t(split)].rotary >= 0)
      continue;
    const PlanOp &pieces = plan.ops[size_t(split)];
    const PlanValue &whole = plan.values[size_t(pieces.inputs[0])];
    bool tablesReady = true;
    for (size_t i = 1; i < rotary.inputs.size(); ++i) {
      const int v = rotary.inputs[i];
      tablesReady &= v < 0 || uses.producer[size_t(v)] < 0 || position[size_t(uses.producer[size_t(v)])] < position[size_t(split)];
    }
    const PlanValue &keys = plan.values[size_t(rotary.inputs[0])], &piece = plan.values[size_t(way.back())];
    if (!tablesReady || whole.shape.rank != 3 || axisOf(pieces, 3) != 2 || pieces.outputs.size() > size_t(kMaxCopies) + 1 ||
        !isFloat(whole) || onDevice(whole) != onDevice(plan.values[size_t(rotary.outputs[0])]) ||
        piece.shape.rank != 3 || keys.shape.dims[2] != piece.shape.dims[2] || keys.shape.dims[2] < 0)
      continue;
    p.rotaryOfSplit[size_t(split)] = {int(r), way.back()};
    p.splitOfRotary[r] = split;
    for (int w : way)
      p.elsewhere[size_t(w)] = p.appendWays[size_t(p.cacheRows[size_t(rotary.outputs[0])])].values.empty();
  }
  return p;
}

void keepInPlace(Executor &ex, InPlace p) {
  ex.plannedCacheRows = std::move(p.cacheRows);
  ex.plannedRotaryOfSplit = std::move(p.rotaryOfSplit);
  ex.plannedSplitOfRotary = std::move(p.splitOfRotary);
  ex.appendWays = std::move(p.appendWays);
  ex.rowStridesThisRun.assign(ex.appendWays.size(), RowStrides());
  ex.appendsChosenPerRun.clear(), ex.splitsChosenPerRun.clear();
  for (size_t k = 0; k < ex.appendWays.size(); ++k)
    if (!ex.appendWays[k].values.empty())
      ex.appendsChosenPerRun.push_back(int(k));
  for (size_t split = 0; !ex.appendsChosenPerRun.empty() && split < ex.plannedRotaryOfSplit.size(); ++split)
    if (ex.plannedRotaryOfSplit[split].rotary >= 0)
      ex.splitsChosenPerRun.push_back(int(split));
  ex.cacheRows = ex.plannedCacheRows;
  ex.rotaryOfSplit = ex.plannedRotaryOfSplit;
  ex.splitOfRotary = ex.plannedSplitOfRotary;
}

namespace {

// Where, in this run (shapes `t`), the maker at the end of `way` must write its rows [B, S, W]
// for them to be the concatenation's new rows: from those (one after another in the cache, after
// the rows there) back through each reshape (stridesAfterReshape) and transpose of the way. False
// where no strides can, or where the maker's rows are not [B, S, W] with the last axis in order
// (a concatenation's may be [B, 1, ..., S, W]: its launch places the batch and token axes).
bool rowStridesOf(const Executor &ex, const AppendWay &way, const std::vector<TensorRef> &t, RowStrides &out) {
  int64_t strides[kMaxRank], before[kMaxRank];
  contiguousStrides(t[size_t(way.values[0])].shape, strides);
  for (size_t i = 0; i + 1 < way.values.size(); ++i) {
    const PlanOp &op = ex.plan->ops[size_t(way.producers[i])];
    const Shape &after = t[size_t(way.values[i])].shape, &in = t[size_t(way.values[i + 1])].shape;
    if (op.kernel == "transpose") {
      const std::vector<int64_t> perm = permOf(op, in.rank);
      if (int(perm.size()) != after.rank || after.rank != in.rank)
        return false;
      for (int d = 0; d < after.rank; ++d) {
        if (perm[size_t(d)] < 0 || perm[size_t(d)] >= in.rank)
          return false;
        before[perm[size_t(d)]] = strides[d];
      }
    } else if (!stridesAfterReshape(after, strides, in, before)) {
      return false;
    }
    std::copy(before, before + in.rank, strides);
  }
  const Shape &rows = t[size_t(way.values.back())].shape;
  const int r = rows.rank;
  const bool unitAxesAllowed = ex.plan->ops[size_t(way.producers.back())].kernel == "concat";
  if (r < 3 || (r > 3 && !unitAxesAllowed) || (rows.dims[r - 1] > 1 && strides[r - 1] != 1))
    return false;
  for (int d = 1; d < r - 2; ++d)
    if (rows.dims[d] != 1)
      return false;
  const int64_t batches = rows.dims[0], tokens = rows.dims[r - 2], width = rows.dims[r - 1];
  const bool inOrder = (batches <= 1 || strides[0] == tokens * width) && (tokens <= 1 || strides[r - 2] == width);
  out = inOrder ? RowStrides() : RowStrides{strides[0], strides[r - 2]};
  return true;
}

} // namespace

void chooseInPlace(Executor &ex, const std::vector<TensorRef> &t) {
  for (int concat : ex.appendsChosenPerRun) {
    const AppendWay &way = ex.appendWays[size_t(concat)];
    RowStrides &strides = ex.rowStridesThisRun[size_t(concat)];
    const bool inPlace = rowStridesOf(ex, way, t, strides);
    for (int v : way.values)
      ex.cacheRows[size_t(v)] = inPlace ? concat : -1;
  }
  for (int split : ex.splitsChosenPerRun) {
    const Executor::SplitRotary planned = ex.plannedRotaryOfSplit[size_t(split)];
    const bool fused = ex.cacheRows[size_t(ex.plan->ops[size_t(planned.rotary)].outputs[0])] >= 0;
    ex.rotaryOfSplit[size_t(split)] = fused ? planned : Executor::SplitRotary();
    ex.splitOfRotary[size_t(planned.rotary)] = fused ? split : -1;
  }
}

} // namespace llmc::rt::cuda::exec

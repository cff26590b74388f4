// The CUDA executor's attention ops, prepared (PrepareOps.h): fused_attention on the decode,
// tensor-core or plain kernels; latent_attention; and the ONNX attention that
// llmc-raise-attention leaves, on its own kernel.
#include "PrepareOps.h"
#include "KernelUtil.h"
#include "PlanShortcuts.h"

#include <algorithm>
#include <cmath>

namespace llmc::rt::cuda::exec {

namespace {

// Strides of s, right-aligned to 4 dimensions: 0 where a dimension is 1 (it broadcasts, or its
// only index is 0), so that a mask [1, 1, 1, Sk] has the same strides for every Sk.
void broadcastStrides4(const Shape &s, int64_t out[4]) {
  int64_t stride = 1;
  for (int d = 3; d >= 0; --d) {
    const int sd = s.rank - (4 - d);
    const int64_t dim = sd >= 0 ? s.dims[sd] : 1;
    out[d] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
}

// An attention's mask `m` against its scores [B, H, Sq, Sk]: its strides and how it is read, or
// why it cannot be. Read where it is: an attention_mask input (llmc-raise-attention-mask) is as
// long as the keys only if the caller made it so. An additive mask is of the attention's float
// type `floatType` (its queries'), which the kernel reads it as.
std::string maskLayout(const TensorRef &m, DType floatType, const int64_t scores[4], int64_t strides[4],
                       AttentionArgs::Mask &type) {
  if (m.shape.rank > 4 || (m.dtype != floatType && m.dtype != DType::Bool && m.dtype != DType::I64))
    return "the mask must be bool, i64 or of the queries' float type, of rank at most 4";
  for (int d = 0; d < m.shape.rank; ++d)
    if (const int64_t dim = m.shape.dims[d], full = scores[d + 4 - m.shape.rank]; dim != 1 && dim != full)
      return "the mask " + m.shape.str() + " does not broadcast to [" + std::to_string(scores[0]) + ", " +
             std::to_string(scores[1]) + ", " + std::to_string(scores[2]) + ", " + std::to_string(scores[3]) + "]";
  broadcastStrides4(m.shape, strides);
  type = m.dtype == DType::Bool  ? AttentionArgs::Mask::Bool
         : m.dtype == DType::I64 ? AttentionArgs::Mask::Int64
                                 : AttentionArgs::Mask::Additive;
  return {};
}

// The shape of an attention op's mask operand `input` in this run, or null when it has none.
const Shape *maskShape(const PlanOp &op, const std::vector<TensorRef> &t, size_t input) {
  if (op.inputs.size() <= input || op.inputs[input] < 0 || t[size_t(op.inputs[input])].numel() == 0)
    return nullptr;
  return &t[size_t(op.inputs[input])].shape;
}

// How the kernels find a mask's rows from the key count alone: a mask whose last axis is the Sk
// keys and whose query axis is 1, [B or 1, H or 1, 1, Sk] or of a lower rank (a batch's
// attention_mask, see llmc-raise-attention-mask; with `perHead`, ALiBi's bias per head). Its batch
// and head strides in rows of keys (0 where it broadcasts: AttentionArgs::maskRowsPerBatch).
struct MaskRows {
  bool follows = false; // also true without a mask
  int64_t perBatch = 0, perHead = 0;
};

MaskRows maskRows(const PlanOp &op, const std::vector<TensorRef> &t, size_t input, int64_t Sk, bool perHead) {
  const Shape *m = maskShape(op, t, input);
  if (!m)
    return {true};
  if (m->rank < 1 || m->rank > 4)
    return {};
  int64_t dims[4] = {1, 1, 1, 1}; // [batch, heads, queries, keys]
  for (int d = 0; d < m->rank; ++d)
    dims[4 - m->rank + d] = m->dims[d];
  if (dims[3] != Sk || dims[2] != 1 || (dims[1] != 1 && !perHead))
    return {};
  return {true, dims[0] > 1 ? dims[1] : 0, dims[1] > 1 ? 1 : 0};
}

// The most keys a query of a fused_attention over `keys` keys attends to (its sliding window).
int64_t keysSeen(const PlanOp &op, int64_t keys) {
  const int64_t window = op.attrs.getInt("sliding_window", 0);
  return window > 0 && window < keys ? window : keys;
}

// The key count of a fused_attention run that the decode kernel can read from the length table
// (one query; keys and values in the cache layout [Sk, B, Hkv * D], whose strides do not
// involve Sk; a mask, if any, along the keys alone or a row per sequence; the kernel's limits at the
// largest Sk, `skBound`, the partial results within the attention workspace), or -1.
int64_t decodeKeyCount(const PlanOp &op, const std::vector<TensorRef> &t, int64_t skBound) {
  const TensorRef &q = t[size_t(op.inputs[0])];
  const int64_t Hq = op.attrs.getInt("q_num_heads", 0), Hkv = op.attrs.getInt("kv_num_heads", 0);
  if (op.attrs.getInt("packed_qkv", 0) || !op.attrs.getInt("kv_time_major", 0) || q.shape.rank != 3 ||
      q.shape.dims[1] != 1 || Hq <= 0 || Hkv <= 0 || op.inputs.size() < 3)
    return -1;
  const TensorRef &k = t[size_t(op.inputs[1])], &v = t[size_t(op.inputs[2])];
  const int64_t D = q.shape.dims[2] / Hq, Sk = k.shape.dims[0];
  const bool rotary = op.inputs.size() > 4 && op.inputs[4] >= 0 && t[size_t(op.inputs[4])].numel() > 0;
  if (k.shape.rank != 3 || v.shape.rank != 3 || Hq % Hkv || D > kMaxDecodeHeadDim || (rotary && D % 2) || Sk > skBound ||
      decodeAttentionWorkspaceBytes(q.shape.dims[0], Hq, v.shape.dims[2] / Hkv,
                                    decodeAttentionSplits(keysSeen(op, skBound))) >
          kGemmWorkspace)
    return -1;
  return maskRows(op, t, 3, Sk, /*perHead=*/true).follows ? Sk : -1;
}

// The key count of a latent_attention run that its kernel can read from the length table (a
// mask, if any, along the keys alone or a row per sequence; a cache row the kernel's shared memory
// holds), or -1.
int64_t latentKeyCount(const PlanOp &op, const std::vector<TensorRef> &t, int64_t skBound) {
  const Shape &cache = t[size_t(op.inputs[1])].shape;
  if (cache.rank != 3 || cache.dims[0] > skBound ||
      !latentAttentionFits(cache.dims[2] - op.attrs.getInt("rope_dim", 0), op.attrs.getInt("rope_dim", 0)))
    return -1;
  return maskRows(op, t, 4, cache.dims[0], /*perHead=*/false).follows ? cache.dims[0] : -1;
}

} // namespace

std::string prepareAttention(Executor &ex, const PlanOp &op, PreparedOp &out, int index) {
  for (int i : {0, 1, 2, 4, 5, 6})
    if (givenInput(*ex.plan, op, size_t(i)) &&
        !isFloat(ex.plan->values[size_t(op.inputs[size_t(i)])]))
      return "needs float q, k, v, rotary tables and sinks";
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  const size_t elem = storageBytes(st);
  const PlanValue &q = ex.plan->values[size_t(op.inputs[0])];
  // Prompts of a 16-bit plan run on tensor cores when the head sizes allow (checked per run: the
  // sizes follow from the shapes); everything else on the plain kernel.
  const bool flash = !ex.dry && st != Storage::F32 && q.shape.rank == 3;
  // A decode step over a cache reads its key count from the length table (LengthFreeGraph.h).
  const int64_t skBound = op.inputs.size() > 1 && op.inputs[1] >= 0 ? dimBound(ex, op.inputs[1], 0) : 0;
  out.lengthSlot = ex.lengthSlots++;
  out.length = [&op, skBound](const std::vector<TensorRef> &t) { return decodeKeyCount(op, t, skBound); };
  out.launch = [&op, st, elem, flash, skBound, index,
                slot = out.lengthSlot](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    auto has = [&](size_t i) { return op.inputs.size() > i && op.inputs[i] >= 0 && t[size_t(op.inputs[i])].numel() > 0; };
    const bool packed = op.attrs.getInt("packed_qkv", 0) != 0, timeMajor = op.attrs.getInt("kv_time_major", 0) != 0;
    const TensorRef &q = t[size_t(op.inputs[0])];
    AttentionArgs a;
    a.Hq = op.attrs.getInt("q_num_heads", 0), a.Hkv = op.attrs.getInt("kv_num_heads", 0);
    if (q.shape.rank != 3 || a.Hq <= 0 || a.Hkv <= 0)
      return std::string("q must be [batch, seq, heads * head]");
    a.B = q.shape.dims[0], a.Sq = q.shape.dims[1];
    const char *base = static_cast<const char *>(e.at(op.inputs[0]));
    if (packed) {
      const int64_t width = q.shape.dims[2];
      a.D = a.Dv = width / (a.Hq + 2 * a.Hkv);
      a.Sk = a.Sq;
      a.qs = a.ks = a.vs = {a.Sq * width, width, a.D};
      a.q = base;
      a.k = base + a.Hq * a.D * elem;
      a.v = base + (a.Hq + a.Hkv) * a.D * elem;
    } else {
      const TensorRef &k = t[size_t(op.inputs[1])], &v = t[size_t(op.inputs[2])];
      a.D = q.shape.dims[2] / a.Hq;
      a.qs = {a.Sq * a.Hq * a.D, a.Hq * a.D, a.D};
      a.q = base, a.k = e.at(op.inputs[1]), a.v = e.at(op.inputs[2]);
      if (k.shape.rank == 4) { // [B, Hkv, Sk, D]
        a.Sk = k.shape.dims[2], a.Dv = v.shape.dims[3];
        a.ks = {a.Hkv * a.Sk * a.D, a.D, a.Sk * a.D}, a.vs = {a.Hkv * a.Sk * a.Dv, a.Dv, a.Sk * a.Dv};
      } else if (timeMajor) { // [Sk, B, Hkv * D]
        a.Sk = k.shape.dims[0], a.Dv = v.shape.dims[2] / a.Hkv;
        a.ks = {a.Hkv * a.D, a.B * a.Hkv * a.D, a.D}, a.vs = {a.Hkv * a.Dv, a.B * a.Hkv * a.Dv, a.Dv};
      } else { // [B, Sk, Hkv * D]
        a.Sk = k.shape.dims[1], a.Dv = v.shape.dims[2] / a.Hkv;
        a.ks = {a.Sk * a.Hkv * a.D, a.Hkv * a.D, a.D}, a.vs = {a.Sk * a.Hkv * a.Dv, a.Hkv * a.Dv, a.Dv};
      }
    }
    const double scale = op.attrs.getFloat("scale", 0.0);
    a.scale = float(scale != 0.0 ? scale : 1.0 / std::sqrt(double(a.D)));
    a.causal = op.attrs.getInt("is_causal", 0) != 0;
    a.softcap = float(op.attrs.getFloat("softcap", 0.0));
    a.window = op.attrs.getInt("sliding_window", 0);
    if (a.window < 0)
      return std::string("sliding_window must be 0 (none) or positive");
    if (has(3)) {
      const int64_t scores[4] = {a.B, a.Hq, a.Sq, a.Sk};
      const TensorRef &m = t[size_t(op.inputs[3])];
      const DType queries = t[size_t(op.inputs[0])].dtype;
      if (std::string err = maskLayout(m, queries, scores, a.maskStrides, a.maskType); !err.empty())
        return err;
      a.mask = e.at(op.inputs[3]);
    }
    if (has(4) && op.attrs.getInt("rotary_dim", 0) != 0) { // llmc.rotary's turn of the queries alone
      a.rotaryDim = op.attrs.getInt("rotary_dim", 0), a.interleaved = op.attrs.getInt("rotary_interleaved", 0) != 0;
      const int64_t perRow = a.Sq * (a.rotaryDim / 2), cells = t[size_t(op.inputs[4])].numel();
      a.tablesPerBatch = a.B > 1 && cells == a.B * perRow;
      if (a.rotaryDim < 0 || a.rotaryDim % 2 || a.rotaryDim > a.D || (cells != perRow && !a.tablesPerBatch) ||
          t[size_t(op.inputs[5])].numel() != cells)
        return std::string("rotary_dim needs an even size up to the head and tables [batch or 1, seq, rotary_dim / 2]");
      if ((packed || t[size_t(op.inputs[1])].shape.rank != 4) && !timeMajor && op.attrs.getInt("rotate_keys", 1) != 0)
        return std::string("rotary_dim turns the queries only: rotate_keys must be 0");
      a.cos = e.at(op.inputs[4]), a.sin = e.at(op.inputs[5]);
    } else if (has(4)) {
      // Tables that concatenate one table with itself: that one (their concatenation is not
      // launched: unneededOnDevice).
      a.halfTables = readsHalfTables(op, e.halfOf);
      const int cosV = a.halfTables ? e.halfOf[size_t(op.inputs[4])] : op.inputs[4];
      const int sinV = a.halfTables ? e.halfOf[size_t(op.inputs[5])] : op.inputs[5];
      const TensorRef &c = t[size_t(cosV)];
      a.cos = e.at(cosV), a.sin = e.at(sinV);
      a.tablesPerBatch = a.B > 1 && c.numel() == a.B * a.Sq * (a.halfTables ? a.D / 2 : a.D);
      const bool cacheLayout = !packed && t[size_t(op.inputs[1])].shape.rank == 4;
      a.rotateKeys = !cacheLayout && !timeMajor && op.attrs.getInt("rotate_keys", 1) != 0;
    }
    if (has(6)) {
      if (t[size_t(op.inputs[6])].numel() != a.Hq)
        return std::string("sinks must be [q_num_heads]");
      a.sinks = e.at(op.inputs[6]);
    }
    a.out = e.at(op.outputs[0]);
    // A decode step: the key length split across blocks (the one-block-per-query kernel would
    // read the whole cache from B * Hq blocks); over a cache, as many blocks as the longest
    // cache needs, each taking its share of the key count that the length table holds.
    if (const int64_t keys = decodeKeyCount(op, t, skBound); keys >= 0) {
      const MaskRows rows = maskRows(op, t, 3, keys, /*perHead=*/true);
      a.maskRowsPerBatch = rows.perBatch, a.maskRowsPerHead = rows.perHead;
      a.Sk = skBound, a.skOnDevice = e.lengths + slot;
      a.overlapPrevious = e.overlapLaunches;
      if (const int linear = e.prefetchWeightOf.empty() ? -1 : e.prefetchWeightOf[size_t(index)]; linear >= 0) {
        const int w = e.plan->ops[size_t(linear)].inputs[1];
        a.prefetchL2 = e.at(w), a.prefetchL2Bytes = deviceBytesOf(e, w, e.plan->values[size_t(w)].shape);
      }
      return attentionOrChain(e, st, a, decodeAttentionSplits(decodeKeysSeen(a)));
    }
    if (a.Sq == 1 && !packed && !a.rotateKeys && a.D <= kMaxDecodeHeadDim) {
      const int splits = decodeAttentionSplits(decodeKeysSeen(a));
      if (decodeAttentionWorkspaceBytes(a.B, a.Hq, a.Dv, splits) <= e.workspaceBytes)
        return decodeAttention(st, a, splits, e.attentionWorkspace, e.stream);
    }
    if (flash && a.Sq > 1 && flashAttentionFits(st, a.D, a.Dv, e.sharedOptIn)) {
      const int splits = e.splitPromptAttention ? flashAttentionSplits(a, e.multiprocessors, e.workspaceBytes) : 1;
      return flashAttention(st, a, e.stream, splits, e.attentionWorkspace);
    }
    return attention(st, a, e.stream);
  };
  return {};
}

std::string prepareLatentAttention(Executor &ex, const PlanOp &op, PreparedOp &out) {
  for (int i = 0; i < 4; ++i)
    if (!isFloat(ex.plan->values[size_t(op.inputs[size_t(i)])]))
      return "supports float operands";
  Storage st;
  if (std::string err = floatStorage(ex, op, st); !err.empty())
    return err;
  // Over a cache, the key count from the length table (LengthFreeGraph.h).
  const int64_t skBound = dimBound(ex, op.inputs[1], 0);
  out.lengthSlot = ex.lengthSlots++;
  out.length = [&op, skBound](const std::vector<TensorRef> &t) { return latentKeyCount(op, t, skBound); };
  out.launch = [&op, st, skBound, slot = out.lengthSlot](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    const TensorRef &q = t[size_t(op.inputs[0])], &cache = t[size_t(op.inputs[1])], &uk = t[size_t(op.inputs[2])],
                    &uv = t[size_t(op.inputs[3])];
    const bool hasUk = uk.numel() > 0, hasUv = uv.numel() > 0;
    const bool hasMask = op.inputs.size() > 4 && op.inputs[4] >= 0 && t[size_t(op.inputs[4])].numel() > 0;
    const int64_t rope = op.attrs.getInt("rope_dim", 0), latent = cache.shape.dims[2] - rope;
    const int64_t B = q.shape.dims[0], H = q.shape.dims[1], Sq = q.shape.dims[2], Sk = cache.shape.dims[0];
    LatentMask mask;
    mask.causal = op.attrs.getInt("is_causal", 0) != 0;
    if (hasMask) {
      const int64_t scores[4] = {B, H, Sq, Sk};
      if (std::string err = maskLayout(t[size_t(op.inputs[4])], q.dtype, scores, mask.strides, mask.type); !err.empty())
        return err;
      mask.data = e.at(op.inputs[4]);
    }
    if (op.inputs.size() > 5 && op.inputs[5] >= 0) {
      if (t[size_t(op.inputs[5])].numel() != H)
        return std::string("sinks must be [H]");
      mask.sinks = e.at(op.inputs[5]);
    }
    const bool fromTable = latentKeyCount(op, t, skBound) >= 0;
    const int64_t keyBound = fromTable ? skBound : Sk;
    // The splits for the longest cache the launch may see (a graph replays it at any count).
    const int splits = latentAttentionSplits(B, H, Sq, keyBound, latent, rope, e.multiprocessors, e.workspaceBytes);
    mask.rowPerBatch = fromTable && maskRows(op, t, 4, Sk, /*perHead=*/false).perBatch > 0;
    return latentAttention(st, e.at(op.inputs[0]), e.at(op.inputs[1]), hasUk ? e.at(op.inputs[2]) : nullptr,
                           hasUv ? e.at(op.inputs[3]) : nullptr, mask, e.at(op.outputs[0]), B, H, Sq, keyBound, hasUk ? uk.shape.dims[1] : 0, rope,
                           latent, hasUv ? uv.shape.dims[2] : latent, float(op.attrs.getFloat("scale", 1.0)),
                           fromTable ? e.lengths + slot : nullptr, splits, e.attentionWorkspace, e.stream);
  };
  return {};
}


// attention (ONNX Attention, as llmc-raise-attention left it: a softcap, a sliding window,
// nonpad_kv_seqlen, its scores read): onnxAttention, which writes all four results, as the CPU's
// kernel does. Operands q, k, v, mask, past key, past value, nonpad_kv_seqlen (-1 or empty: absent).
std::string prepareOnnxAttention(Executor &ex, const PlanOp &op, PreparedOp &out) {
  if (op.inputs.size() != 7 || op.outputs.size() != 4)
    return "expects 7 operands and 4 results";
  Storage unused; // (the kernel takes `type` below: this checks that the mask and the results share its storage)
  if (std::string err = floatStorage(ex, op, unused); !err.empty())
    return err;
  std::vector<int> operands; // q, k, v and the past keys and values where given
  for (int i : {0, 1, 2, 4, 5})
    if (i < 3 || givenInput(*ex.plan, op, size_t(i)))
      operands.push_back(op.inputs[size_t(i)]);
  const int type = commonFloatType(ex, operands);
  if (!type || op.inputs[0] < 0 || op.inputs[1] < 0 || op.inputs[2] < 0)
    return "needs q, k, v and past keys and values of one float type";
  out.launch = [&op, type](Executor &e, const std::vector<TensorRef> &t) -> std::string {
    auto has = [&](size_t i) { return op.inputs[i] >= 0 && t[size_t(op.inputs[i])].numel() > 0; };
    const TensorRef &q = t[size_t(op.inputs[0])], &k = t[size_t(op.inputs[1])], &v = t[size_t(op.inputs[2])];
    const int rank = q.shape.rank;
    if ((rank != 3 && rank != 4) || k.shape.rank != rank || v.shape.rank != rank)
      return std::string("q, k and v must all be 3-D or all 4-D");
    OnnxAttentionArgs a;
    a.B = q.shape.dims[0];
    if (rank == 4) { // [B, H, S, D]
      a.Hq = q.shape.dims[1], a.Hkv = k.shape.dims[1], a.Sq = q.shape.dims[2], a.Skv = k.shape.dims[2];
      a.D = q.shape.dims[3], a.Dv = v.shape.dims[3];
      a.qs = {a.Hq * a.Sq * a.D, a.D, a.Sq * a.D}, a.outs = {a.Hq * a.Sq * a.Dv, a.Dv, a.Sq * a.Dv};
      a.ks = {a.Hkv * a.Skv * a.D, a.D, a.Skv * a.D}, a.vs = {a.Hkv * a.Skv * a.Dv, a.Dv, a.Skv * a.Dv};
    } else { // [B, S, H * D]
      a.Hq = op.attrs.getInt("q_num_heads", 0), a.Hkv = op.attrs.getInt("kv_num_heads", 0);
      if (a.Hq <= 0 || a.Hkv <= 0 || q.shape.dims[2] % a.Hq || k.shape.dims[2] % a.Hkv || v.shape.dims[2] % a.Hkv)
        return std::string("3-D attention needs head counts that divide the hidden sizes");
      a.Sq = q.shape.dims[1], a.Skv = k.shape.dims[1], a.D = q.shape.dims[2] / a.Hq, a.Dv = v.shape.dims[2] / a.Hkv;
      a.qs = {a.Sq * a.Hq * a.D, a.Hq * a.D, a.D}, a.outs = {a.Sq * a.Hq * a.Dv, a.Hq * a.Dv, a.Dv};
      a.ks = {a.Skv * a.Hkv * a.D, a.Hkv * a.D, a.D}, a.vs = {a.Skv * a.Hkv * a.Dv, a.Hkv * a.Dv, a.Dv};
    }
    const int64_t keyD = rank == 4 ? k.shape.dims[3] : k.shape.dims[2] / a.Hkv, valueS = v.shape.dims[rank == 4 ? 2 : 1];
    if (a.Hq % a.Hkv || k.shape.dims[0] != a.B || v.shape.dims[0] != a.B || keyD != a.D || valueS != a.Skv ||
        (rank == 4 && v.shape.dims[1] != a.Hkv))
      return std::string("q, k and v shapes do not agree");
    if (has(4)) {
      const Shape &pk = t[size_t(op.inputs[4])].shape, &pv = t[size_t(op.inputs[5])].shape;
      a.past = pk.rank == 4 ? pk.dims[2] : -1;
      if (pk.rank != 4 || pv.rank != 4 || pk.dims[0] != a.B || pk.dims[1] != a.Hkv || pk.dims[3] != a.D ||
          pv.dims[0] != a.B || pv.dims[1] != a.Hkv || pv.dims[2] != a.past || pv.dims[3] != a.Dv)
        return std::string("past key/value shapes do not match");
      a.pastK = e.at(op.inputs[4]), a.pastV = e.at(op.inputs[5]);
    }
    const int64_t keys = a.past + a.Skv;
    if (t[size_t(op.outputs[0])].numel() != a.B * a.Hq * a.Sq * a.Dv ||
        t[size_t(op.outputs[1])].numel() != a.B * a.Hkv * keys * a.D ||
        t[size_t(op.outputs[2])].numel() != a.B * a.Hkv * keys * a.Dv ||
        (op.outputs[3] >= 0 && t[size_t(op.outputs[3])].numel() != a.B * a.Hq * a.Sq * keys))
      return std::string("result sizes do not match the operands");
    if (has(3)) { // [..., maskKeys] against the scores; keys past its last dimension are hidden
      const TensorRef &m = t[size_t(op.inputs[3])];
      if (m.shape.rank < 1)
        return std::string("the mask must have rank 1 to 4");
      a.maskKeys = m.shape.dims[m.shape.rank - 1];
      if (a.maskKeys > keys)
        return std::string("the mask is longer than the key sequence");
      const int64_t scores[4] = {a.B, a.Hq, a.Sq, a.maskKeys};
      if (std::string err = maskLayout(m, q.dtype, scores, a.maskStrides, a.maskType); !err.empty())
        return err;
      a.mask = e.at(op.inputs[3]);
    }
    if (has(6)) {
      const TensorRef &n = t[size_t(op.inputs[6])];
      if (n.numel() != a.B || (n.dtype != DType::I64 && n.dtype != DType::I32))
        return std::string("nonpad_kv_seqlen must hold one integer per batch");
      a.nonpad = e.at(op.inputs[6]), a.nonpad32 = n.dtype == DType::I32;
    }
    a.scale = op.attrs.find("scale") ? op.attrs.getFloat("scale", 0.0) : 1.0 / std::sqrt(double(a.D));
    a.softcap = op.attrs.getFloat("softcap", 0.0);
    a.causal = op.attrs.getInt("is_causal", 0) != 0;
    a.scoresMode = int(op.attrs.getInt("qk_matmul_output_mode", 0));
    a.leftWindow = op.attrs.getInt("left_window_size", -1), a.rightWindow = op.attrs.getInt("right_window_size", -1);
    a.q = e.at(op.inputs[0]), a.k = e.at(op.inputs[1]), a.v = e.at(op.inputs[2]);
    a.out = e.at(op.outputs[0]), a.presentK = e.at(op.outputs[1]), a.presentV = e.at(op.outputs[2]);
    a.scores = op.outputs[3] >= 0 ? e.at(op.outputs[3]) : nullptr;
    return onnxAttention(type, a, e.stream);
  };
  return {};
}

} // namespace llmc::rt::cuda::exec

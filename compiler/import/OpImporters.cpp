// The op table: importers keyed by ONNX op type and the first opset they apply to (default
// domain, opsets 13 and newer; an entry's importer handles the changes between later opsets,
// such as axes moving from an attribute to an input). Most ops map directly to one llmc op; the
// rest have a function below. Adding an op is adding an entry.
#include "ImporterInternal.h"
#include "llmc/Dialect/LlmcDialect.h"

#include <algorithm>
#include <cstring>

using namespace mlir;

namespace llmc::importer {
namespace {

enum class AttrKind { Int, Float, Ints, String };
struct AttrSpec {
  const char *name;
  AttrKind kind;
};

struct DirectOp {
  const char *onnx;
  const char *llmc;
  std::initializer_list<AttrSpec> attrs;
  int64_t sinceOpset = 13; // the first default-domain opset with these semantics
};

// ONNX ops that map to one llmc op with the same operands and attribute names.
const DirectOp kDirectOps[] = {
    {"Add", "llmc.add", {}},
    {"Sub", "llmc.sub", {}},
    {"Mul", "llmc.mul", {}},
    {"Div", "llmc.div", {}},
    {"And", "llmc.and", {}},
    {"Or", "llmc.or", {}},
    {"Xor", "llmc.xor", {}},
    {"Equal", "llmc.equal", {}},
    {"Less", "llmc.less", {}},
    {"LessOrEqual", "llmc.less_equal", {}},
    {"Greater", "llmc.greater", {}},
    {"GreaterOrEqual", "llmc.greater_equal", {}},
    {"Neg", "llmc.neg", {}},
    {"Abs", "llmc.abs", {}},
    {"Sqrt", "llmc.sqrt", {}},
    {"Reciprocal", "llmc.reciprocal", {}},
    {"Exp", "llmc.exp", {}},
    {"Log", "llmc.log", {}},
    {"Tanh", "llmc.tanh", {}},
    {"Erf", "llmc.erf", {}},
    {"Sigmoid", "llmc.sigmoid", {}},
    {"Relu", "llmc.relu", {}},
    {"Cos", "llmc.cos", {}},
    {"Sin", "llmc.sin", {}},
    {"Floor", "llmc.floor", {}},
    {"Ceil", "llmc.ceil", {}},
    {"Not", "llmc.not", {}},
    {"IsNaN", "llmc.is_nan", {}},
    {"Gelu", "llmc.gelu", {{"approximate", AttrKind::String}}, 20},
    {"Where", "llmc.where", {}},
    {"Elu", "llmc.elu", {{"alpha", AttrKind::Float}}, 6},
    {"LeakyRelu", "llmc.leaky_relu", {{"alpha", AttrKind::Float}}, 6},
    {"HardSigmoid", "llmc.hard_sigmoid", {{"alpha", AttrKind::Float}, {"beta", AttrKind::Float}}, 6},
    {"HardSwish", "llmc.hard_swish", {}, 14},
    {"Softplus", "llmc.softplus", {}},
    {"Sign", "llmc.sign", {}},
    {"Round", "llmc.round", {}, 11},
    {"Mod", "llmc.mod", {{"fmod", AttrKind::Int}}},
    {"ArgMax", "llmc.arg_max", {{"axis", AttrKind::Int}, {"keepdims", AttrKind::Int}, {"select_last_index", AttrKind::Int}}},
    {"ArgMin", "llmc.arg_min", {{"axis", AttrKind::Int}, {"keepdims", AttrKind::Int}, {"select_last_index", AttrKind::Int}}},
    {"InstanceNormalization", "llmc.instance_norm", {{"epsilon", AttrKind::Float}}, 6},
    {"GroupNormalization", "llmc.group_norm", {{"num_groups", AttrKind::Int}, {"epsilon", AttrKind::Float}}, 21},
    {"Einsum", "llmc.einsum", {{"equation", AttrKind::String}}, 12},
    {"DequantizeLinear", "llmc.dequantize_linear", {{"axis", AttrKind::Int}, {"block_size", AttrKind::Int}}},
    {"ScatterElements", "llmc.scatter_elements", {{"axis", AttrKind::Int}, {"reduction", AttrKind::String}}, 16},
    {"ScatterND", "llmc.scatter_nd", {{"reduction", AttrKind::String}}, 16},
    {"Identity", "llmc.identity", {}},
    {"MatMul", "llmc.matmul", {}},
    {"Gemm",
     "llmc.gemm",
     {{"alpha", AttrKind::Float}, {"beta", AttrKind::Float}, {"transA", AttrKind::Int}, {"transB", AttrKind::Int}}},
    {"Softmax", "llmc.softmax", {{"axis", AttrKind::Int}}},
    {"LogSoftmax", "llmc.log_softmax", {{"axis", AttrKind::Int}}},
    {"LayerNormalization", "llmc.layer_norm", {{"axis", AttrKind::Int}, {"epsilon", AttrKind::Float}}, 17},
    {"RMSNormalization", "llmc.rms_norm", {{"axis", AttrKind::Int}, {"epsilon", AttrKind::Float}}, 23},
    {"CumSum", "llmc.cumsum", {{"exclusive", AttrKind::Int}, {"reverse", AttrKind::Int}}},
    {"Shape", "llmc.shape", {{"start", AttrKind::Int}, {"end", AttrKind::Int}}},
    {"Reshape", "llmc.reshape", {{"allowzero", AttrKind::Int}}},
    {"Flatten", "llmc.flatten", {{"axis", AttrKind::Int}}},
    {"Transpose", "llmc.transpose", {{"perm", AttrKind::Ints}}},
    {"Concat", "llmc.concat", {{"axis", AttrKind::Int}}},
    {"Gather", "llmc.gather", {{"axis", AttrKind::Int}}},
    {"GatherElements", "llmc.gather_elements", {{"axis", AttrKind::Int}}},
    {"GatherND", "llmc.gather_nd", {{"batch_dims", AttrKind::Int}}},
    {"Expand", "llmc.expand", {}},
    {"Range", "llmc.range", {}},
    {"Trilu", "llmc.trilu", {{"upper", AttrKind::Int}}, 14},
};

const DirectOp *findDirect(const std::string &opType, int64_t opset) {
  for (const DirectOp &op : kDirectOps)
    if (opType == op.onnx && opset >= op.sinceOpset)
      return &op;
  return nullptr;
}

// Present inputs, with trailing absent ones dropped; fails on an absent input in the middle.
FailureOr<SmallVector<Value>> presentInputs(NodeContext &nc) {
  SmallVector<Value> operands(nc.inputs);
  while (!operands.empty() && !operands.back())
    operands.pop_back();
  for (Value v : operands)
    if (!v) {
      (void)nc.fail("an optional input in the middle is absent; not supported");
      return failure();
    }
  return operands;
}

FailureOr<SmallVector<Value>> importDirect(NodeContext &nc) {
  const DirectOp *op = findDirect(nc.node.op_type(), nc.opset);
  auto operands = presentInputs(nc);
  if (failed(operands))
    return failure();
  Builder &b = nc.builder;
  SmallVector<NamedAttribute> attrs;
  for (const AttrSpec &spec : op->attrs) {
    const onnx::AttributeProto *a = nc.attr(spec.name);
    if (!a)
      continue;
    Attribute value;
    switch (spec.kind) {
    case AttrKind::Int: value = b.getI64IntegerAttr(a->i()); break;
    case AttrKind::Float: value = b.getF32FloatAttr(a->f()); break;
    case AttrKind::Ints: value = b.getDenseI64ArrayAttr(SmallVector<int64_t>(a->ints().begin(), a->ints().end())); break;
    case AttrKind::String: value = b.getStringAttr(a->s()); break;
    }
    attrs.push_back(b.getNamedAttr(spec.name, value));
  }
  return nc.create(op->llmc, *operands, attrs);
}

FailureOr<SmallVector<Value>> one(FailureOr<Value> v) {
  if (failed(v))
    return failure();
  return SmallVector<Value>{*v};
}

// Max, Min, Sum, Mean: variadic, folded pairwise.
FailureOr<SmallVector<Value>> importVariadic(NodeContext &nc) {
  const std::string &t = nc.node.op_type();
  const char *name = t == "Max" ? "llmc.max" : t == "Min" ? "llmc.min" : "llmc.add";
  auto operands = presentInputs(nc);
  if (failed(operands) || operands->empty())
    return nc.fail("needs at least one input");
  Value acc = (*operands)[0];
  for (size_t i = 1; i < operands->size(); ++i) {
    auto next = nc.create1(name, {acc, (*operands)[i]});
    if (failed(next))
      return failure();
    acc = *next;
  }
  if (t == "Mean" && operands->size() > 1) {
    auto type = cast<RankedTensorType>(acc.getType());
    auto scalar = RankedTensorType::get({}, type.getElementType());
    if (!isa<FloatType>(type.getElementType()))
      return nc.fail("Mean needs float inputs");
    auto count = nc.create1("llmc.constant", {},
                            {nc.builder.getNamedAttr("value", DenseElementsAttr::get(scalar, FloatAttr::get(
                                                                  type.getElementType(), double(operands->size())).getValue()))});
    if (failed(count))
      return failure();
    return one(nc.create1("llmc.div", {acc, *count}));
  }
  return SmallVector<Value>{acc};
}

FailureOr<SmallVector<Value>> importCast(NodeContext &nc) {
  Type to;
  if (nc.node.op_type() == "CastLike") {
    if (!nc.input(1))
      return nc.fail("CastLike needs a target input");
    to = cast<RankedTensorType>(nc.input(1).getType()).getElementType();
  } else {
    int64_t t = nc.attrInt("to", 0);
    to = elementType(nc.ctx(), int(t));
    if (!to)
      return nc.fail(std::string("cast to unsupported element type ") + onnxTypeName(int(t)));
  }
  return one(nc.create1("llmc.cast", {nc.input(0)}, {nc.builder.getNamedAttr("to", TypeAttr::get(to))}));
}

FailureOr<SmallVector<Value>> importDropout(NodeContext &nc) {
  if (Value mode = nc.input(2)) {
    auto training = constantInts(mode);
    if (!training || training->empty() || (*training)[0] != 0)
      return nc.fail("Dropout in training mode is not supported (inference only)");
  }
  if (nc.node.output_size() < 2 || nc.node.output(1).empty())
    return SmallVector<Value>{nc.input(0)};
  // Inference keeps every element: the mask is all true.
  auto type = cast<RankedTensorType>(nc.input(0).getType());
  if (!type.hasStaticShape())
    return nc.fail("Dropout's mask output needs a static shape");
  auto mask = RankedTensorType::get(type.getShape(), nc.builder.getI1Type());
  auto ones = nc.create1("llmc.constant", {},
                         {nc.builder.getNamedAttr("value", DenseElementsAttr::get(mask, true))});
  if (failed(ones))
    return failure();
  return SmallVector<Value>{nc.input(0), *ones};
}

FailureOr<SmallVector<Value>> importConstant(NodeContext &nc) {
  Builder &b = nc.builder;
  ElementsAttr value;
  if (const auto *a = nc.attr("value")) {
    value = tensorToAttr(nc.ctx(), a->t(), nc.store, nc.error);
    if (!value)
      return failure();
  } else if (const auto *a = nc.attr("value_float")) {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()), a->f());
  } else if (const auto *a = nc.attr("value_floats")) {
    SmallVector<float> v(a->floats().begin(), a->floats().end());
    value = DenseElementsAttr::get(RankedTensorType::get({int64_t(v.size())}, b.getF32Type()), ArrayRef<float>(v));
  } else if (const auto *a = nc.attr("value_int")) {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()), a->i());
  } else if (const auto *a = nc.attr("value_ints")) {
    SmallVector<int64_t> v(a->ints().begin(), a->ints().end());
    value = DenseElementsAttr::get(RankedTensorType::get({int64_t(v.size())}, b.getI64Type()), ArrayRef<int64_t>(v));
  } else {
    return nc.fail("Constant without a supported value attribute");
  }
  return one(nc.create1("llmc.constant", {}, {b.getNamedAttr("value", value)}));
}

FailureOr<SmallVector<Value>> importConstantOfShape(NodeContext &nc) {
  Builder &b = nc.builder;
  Type dtype = b.getF32Type();
  double value = 0;
  if (const auto *a = nc.attr("value")) {
    ElementsAttr attr = tensorToAttr(nc.ctx(), a->t(), nc.store, nc.error);
    auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
    if (!dense || dense.getNumElements() != 1)
      return nc.fail("ConstantOfShape's value must be a one-element tensor");
    dtype = dense.getElementType();
    if (isa<FloatType>(dtype))
      value = (*dense.getValues<APFloat>().begin()).convertToDouble();
    else if (dtype.isInteger(1))
      value = (*dense.getValues<bool>().begin()) ? 1 : 0;
    else
      value = double((*dense.getValues<APInt>().begin()).getSExtValue());
  }
  return one(nc.create1("llmc.constant_of_shape", {nc.input(0)},
                        {b.getNamedAttr("dtype", TypeAttr::get(dtype)), b.getNamedAttr("value", b.getF64FloatAttr(value))}));
}

// Reads a constant integer input (e.g. axes) or, for older opsets, an attribute of that name.
FailureOr<SmallVector<int64_t>> intsFromInputOrAttr(NodeContext &nc, size_t input, const char *name, bool &present) {
  present = false;
  if (Value v = nc.input(input)) {
    auto ints = constantInts(v);
    if (!ints)
      return nc.fail(std::string("'") + name + "' must be a constant (data-dependent " + name +
                     " are not supported yet)");
    present = true;
    return *ints;
  }
  if (auto a = nc.attrInts(name)) {
    present = true;
    return SmallVector<int64_t>(a->begin(), a->end());
  }
  return SmallVector<int64_t>{};
}

FailureOr<SmallVector<Value>> importSqueezeLike(NodeContext &nc) {
  bool present;
  auto axes = intsFromInputOrAttr(nc, 1, "axes", present);
  if (failed(axes))
    return failure();
  const bool unsqueeze = nc.node.op_type() == "Unsqueeze";
  if (unsqueeze && axes->empty())
    return nc.fail("Unsqueeze needs axes");
  return one(nc.create1(unsqueeze ? "llmc.unsqueeze" : "llmc.squeeze", {nc.input(0)},
                        {nc.builder.getNamedAttr("axes", nc.builder.getDenseI64ArrayAttr(*axes))}));
}

// The llmc reduction `name` of x over the node's axes (an input since opset 18, an attribute
// before), with its noop_with_empty_axes and its keepdims, or `keepdims` where that is 0 or 1.
FailureOr<SmallVector<Value>> reduceOf(NodeContext &nc, const char *name, Value x, int64_t keepdims = -1) {
  bool present;
  auto axes = intsFromInputOrAttr(nc, 1, "axes", present);
  if (failed(axes))
    return failure();
  Builder &b = nc.builder;
  return one(nc.create1(
      name, {x},
      {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(*axes)),
       b.getNamedAttr("keepdims", b.getI64IntegerAttr(keepdims >= 0 ? keepdims : nc.attrInt("keepdims", 1))),
       b.getNamedAttr("noop_with_empty_axes", b.getI64IntegerAttr(nc.attrInt("noop_with_empty_axes", 0)))}));
}

FailureOr<SmallVector<Value>> importReduce(NodeContext &nc) {
  static const std::pair<const char *, const char *> kNames[] = {
      {"ReduceSum", "llmc.reduce_sum"},   {"ReduceMean", "llmc.reduce_mean"},
      {"ReduceMax", "llmc.reduce_max"},   {"ReduceMin", "llmc.reduce_min"},
      {"ReduceProd", "llmc.reduce_prod"}, {"ReduceSumSquare", "llmc.reduce_sum_square"},
      {"ReduceL2", "llmc.reduce_l2"}};
  const char *name = nullptr;
  for (auto [onnxName, llmcName] : kNames)
    if (nc.node.op_type() == onnxName)
      name = llmcName;
  return reduceOf(nc, name, nc.input(0));
}

// ReduceL1, ReduceLogSum and ReduceLogSumExp as their parts: reduce_sum(abs(x)),
// log(reduce_sum(x)) and, shifted by the maximum m as ONNX's reference computes it,
// log(reduce_sum(exp(x - m))) + m; each reduction with the node's axes and attributes (with
// noop_with_empty_axes and no axes, abs(x), log(x) and x).
FailureOr<SmallVector<Value>> importReduceByParts(NodeContext &nc) {
  const std::string &type = nc.node.op_type();
  Value x = nc.input(0), shift;
  if (type == "ReduceL1") {
    auto magnitude = nc.create1("llmc.abs", {x});
    if (failed(magnitude))
      return failure();
    return reduceOf(nc, "llmc.reduce_sum", *magnitude);
  }
  if (type == "ReduceLogSumExp") {
    auto peak = reduceOf(nc, "llmc.reduce_max", x, /*keepdims=*/1);
    auto shifted = succeeded(peak) ? nc.create1("llmc.sub", {x, (*peak)[0]}) : FailureOr<Value>(failure());
    auto exp = succeeded(shifted) ? nc.create1("llmc.exp", {*shifted}) : FailureOr<Value>(failure());
    auto kept = succeeded(exp) ? reduceOf(nc, "llmc.reduce_max", x) : FailureOr<SmallVector<Value>>(failure());
    if (failed(kept))
      return failure();
    x = *exp;
    shift = (*kept)[0];
  }
  auto sum = reduceOf(nc, "llmc.reduce_sum", x);
  auto log = succeeded(sum) ? nc.create1("llmc.log", {(*sum)[0]}) : FailureOr<Value>(failure());
  if (failed(log) || !shift)
    return one(log);
  return one(nc.create1("llmc.add", {*log, shift}));
}

FailureOr<SmallVector<Value>> importSlice(NodeContext &nc) {
  auto starts = constantInts(nc.input(1)), ends = constantInts(nc.input(2));
  auto startsType = cast<RankedTensorType>(nc.input(1).getType());
  if (startsType.getRank() != 1 || startsType.isDynamicDim(0))
    return nc.fail("starts must be a 1-D tensor of static length");
  const size_t count = size_t(startsType.getDimSize(0));
  SmallVector<int64_t> axes, steps;
  if (nc.input(3)) {
    auto a = constantInts(nc.input(3));
    if (!a)
      return nc.fail("axes must be a constant");
    axes = *a;
  } else {
    for (size_t i = 0; i < count; ++i)
      axes.push_back(int64_t(i));
  }
  if (nc.input(4)) {
    auto s = constantInts(nc.input(4));
    if (!s)
      return nc.fail("steps must be a constant");
    steps = *s;
  } else {
    steps.assign(count, 1);
  }
  Builder &b = nc.builder;
  if (!starts || !ends) // computed at run time, typically from input shapes
    return one(nc.create1("llmc.dynamic_slice", {nc.input(0), nc.input(1), nc.input(2)},
                          {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes)),
                           b.getNamedAttr("steps", b.getDenseI64ArrayAttr(steps))}));
  return one(nc.create1("llmc.slice", {nc.input(0)},
                        {b.getNamedAttr("starts", b.getDenseI64ArrayAttr(*starts)),
                         b.getNamedAttr("ends", b.getDenseI64ArrayAttr(*ends)),
                         b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes)),
                         b.getNamedAttr("steps", b.getDenseI64ArrayAttr(steps))}));
}

FailureOr<SmallVector<Value>> importSplit(NodeContext &nc) {
  auto type = cast<RankedTensorType>(nc.input(0).getType());
  const int64_t rank = type.getRank();
  int64_t axis = nc.attrInt("axis", 0);
  if (axis < -rank || axis >= rank)
    return nc.fail("axis out of range");
  if (axis < 0)
    axis += rank;
  bool present;
  auto sizes = intsFromInputOrAttr(nc, 1, "split", present);
  if (failed(sizes))
    return failure();
  if (!present) {
    const int64_t parts = nc.attrInt("num_outputs", nc.node.output_size());
    const int64_t dim = type.getDimSize(axis);
    if (parts <= 0)
      return nc.fail("num_outputs must be positive");
    if (ShapedType::isDynamic(dim)) // sizes known once shapes are (fold-shapes, or each run)
      return nc.create("llmc.split", {nc.input(0)},
                       {nc.builder.getNamedAttr("axis", nc.builder.getI64IntegerAttr(axis)),
                        nc.builder.getNamedAttr("num_outputs", nc.builder.getI64IntegerAttr(parts))});
    const int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t i = 0, left = dim; i < parts; ++i, left -= chunk)
      sizes->push_back(std::max<int64_t>(0, std::min(chunk, left)));
  }
  Builder &b = nc.builder;
  return nc.create("llmc.split", {nc.input(0)},
                   {b.getNamedAttr("axis", b.getI64IntegerAttr(axis)),
                    b.getNamedAttr("split", b.getDenseI64ArrayAttr(*sizes))});
}

// Pow allows an exponent of another type; it is converted to the base's type.
FailureOr<SmallVector<Value>> importPow(NodeContext &nc) {
  Value base = nc.input(0), exponent = nc.input(1);
  Type baseType = cast<RankedTensorType>(base.getType()).getElementType();
  if (cast<RankedTensorType>(exponent.getType()).getElementType() != baseType) {
    auto converted = nc.create1("llmc.cast", {exponent}, {nc.builder.getNamedAttr("to", TypeAttr::get(baseType))});
    if (failed(converted))
      return failure();
    exponent = *converted;
  }
  return one(nc.create1("llmc.pow", {base, exponent}));
}

// LayerNormalization; the Mean and InvStdDev outputs come from llmc.layer_norm_stats when used.
FailureOr<SmallVector<Value>> importLayerNorm(NodeContext &nc) {
  auto y = importDirect(nc);
  if (failed(y))
    return failure();
  const bool wantsStats = (nc.node.output_size() > 1 && !nc.node.output(1).empty()) ||
                          (nc.node.output_size() > 2 && !nc.node.output(2).empty());
  if (!wantsStats)
    return y;
  Builder &b = nc.builder;
  auto stats = nc.create("llmc.layer_norm_stats", {nc.input(0)},
                         {b.getNamedAttr("axis", b.getI64IntegerAttr(nc.attrInt("axis", -1))),
                          b.getNamedAttr("epsilon", b.getF32FloatAttr(nc.attrFloat("epsilon", 1e-5f)))});
  if (failed(stats))
    return failure();
  return SmallVector<Value>{y->front(), (*stats)[0], (*stats)[1]};
}

// Clip(x, min, max) with optional bounds becomes max(x, min) then min(., max).
FailureOr<SmallVector<Value>> importClip(NodeContext &nc) {
  Value x = nc.input(0);
  if (Value lo = nc.input(1)) {
    auto v = nc.create1("llmc.max", {x, lo});
    if (failed(v))
      return failure();
    x = *v;
  }
  if (Value hi = nc.input(2)) {
    auto v = nc.create1("llmc.min", {x, hi});
    if (failed(v))
      return failure();
    x = *v;
  }
  return SmallVector<Value>{x};
}

// Explicit begin-then-end paddings for a window op, resolving auto_pad with static input sizes.
FailureOr<SmallVector<int64_t>> windowPads(NodeContext &nc, ArrayRef<int64_t> in, ArrayRef<int64_t> kernel,
                                           ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations) {
  const size_t n = kernel.size();
  const std::string autoPad = nc.attrString("auto_pad", "NOTSET");
  SmallVector<int64_t> pads(2 * n, 0);
  if (autoPad == "NOTSET") {
    if (auto given = nc.attrInts("pads")) {
      if (given->size() != 2 * n)
        return nc.fail("pads must have two entries per spatial dimension");
      pads.assign(given->begin(), given->end());
    }
    return pads;
  }
  if (autoPad == "VALID")
    return pads;
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return nc.fail("unknown auto_pad '" + autoPad + "'");
  for (size_t d = 0; d < n; ++d) {
    if (ShapedType::isDynamic(in[d]))
      return nc.fail("auto_pad needs static spatial dimensions (give --input-shape)");
    const int64_t out = (in[d] + strides[d] - 1) / strides[d];
    const int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - in[d]);
    pads[d] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
    pads[d + n] = total - pads[d];
  }
  return pads;
}

// Conv, MaxPool and AveragePool: defaults filled in, auto_pad resolved.
FailureOr<SmallVector<Value>> importWindowOp(NodeContext &nc) {
  const std::string &type = nc.node.op_type();
  auto xType = cast<RankedTensorType>(nc.input(0).getType());
  if (xType.getRank() < 3 || xType.getRank() > 5)
    return nc.fail("needs an input of rank 3 to 5 (1 to 3 spatial dimensions)");
  const size_t n = size_t(xType.getRank() - 2);
  SmallVector<int64_t> kernel;
  if (type == "Conv") {
    auto wType = cast<RankedTensorType>(nc.input(1).getType());
    if (wType.getRank() != xType.getRank() || !wType.hasStaticShape())
      return nc.fail("the weight must have the input's rank and a static shape");
    kernel.assign(wType.getShape().begin() + 2, wType.getShape().end());
  } else {
    auto k = nc.attrInts("kernel_shape");
    if (!k || k->size() != n)
      return nc.fail("kernel_shape must have one entry per spatial dimension");
    kernel.assign(k->begin(), k->end());
  }
  auto orOnes = [&](const char *name) {
    auto v = nc.attrInts(name);
    return v ? SmallVector<int64_t>(v->begin(), v->end()) : SmallVector<int64_t>(n, 1);
  };
  SmallVector<int64_t> strides = orOnes("strides"), dilations = orOnes("dilations");
  if (strides.size() != n || dilations.size() != n)
    return nc.fail("strides and dilations must have one entry per spatial dimension");
  auto pads = windowPads(nc, xType.getShape().drop_front(2), kernel, strides, dilations);
  if (failed(pads))
    return failure();
  Builder &b = nc.builder;
  SmallVector<NamedAttribute> attrs = {b.getNamedAttr("pads", b.getDenseI64ArrayAttr(*pads)),
                                       b.getNamedAttr("strides", b.getDenseI64ArrayAttr(strides)),
                                       b.getNamedAttr("dilations", b.getDenseI64ArrayAttr(dilations))};
  if (type == "Conv") {
    attrs.push_back(b.getNamedAttr("group", b.getI64IntegerAttr(nc.attrInt("group", 1))));
    auto operands = presentInputs(nc);
    if (failed(operands))
      return failure();
    return one(nc.create1("llmc.conv", *operands, attrs));
  }
  attrs.push_back(b.getNamedAttr("kernel_shape", b.getDenseI64ArrayAttr(kernel)));
  attrs.push_back(b.getNamedAttr("ceil_mode", b.getI64IntegerAttr(nc.attrInt("ceil_mode", 0))));
  if (type == "MaxPool" && nc.node.output_size() > 1 && !nc.node.output(1).empty()) {
    attrs.push_back(b.getNamedAttr("storage_order", b.getI64IntegerAttr(nc.attrInt("storage_order", 0))));
    return nc.create("llmc.max_pool_with_indices", {nc.input(0)}, attrs);
  }
  attrs.push_back(b.getNamedAttr("count_include_pad", b.getI64IntegerAttr(nc.attrInt("count_include_pad", 0))));
  return one(nc.create1(type == "MaxPool" ? "llmc.max_pool" : "llmc.average_pool", {nc.input(0)}, attrs));
}

// GlobalAveragePool / GlobalMaxPool: a mean or max over the spatial axes, kept as size 1.
FailureOr<SmallVector<Value>> importGlobalPool(NodeContext &nc) {
  const int64_t rank = cast<RankedTensorType>(nc.input(0).getType()).getRank();
  if (rank < 3)
    return nc.fail("needs an input of rank 3 or more");
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  Builder &b = nc.builder;
  return one(nc.create1(nc.node.op_type() == "GlobalMaxPool" ? "llmc.reduce_max" : "llmc.reduce_mean",
                        {nc.input(0)},
                        {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes)),
                         b.getNamedAttr("keepdims", b.getI64IntegerAttr(1))}));
}

FailureOr<SmallVector<Value>> importBatchNorm(NodeContext &nc) {
  if (nc.attrInt("training_mode", 0))
    return nc.fail("BatchNormalization in training mode is not supported (inference only)");
  for (int i = 1; i < nc.node.output_size(); ++i)
    if (!nc.node.output(i).empty())
      return nc.fail("BatchNormalization's running statistics outputs are training only; not supported");
  Builder &b = nc.builder;
  return one(nc.create1("llmc.batch_norm", nc.inputs,
                        {b.getNamedAttr("epsilon", b.getF32FloatAttr(nc.attrFloat("epsilon", 1e-5f)))}));
}

// Pad: the pads (and axes) inputs must be constant; they become one begin-then-end list over
// every axis.
FailureOr<SmallVector<Value>> importPad(NodeContext &nc) {
  const int64_t rank = cast<RankedTensorType>(nc.input(0).getType()).getRank();
  auto given = constantInts(nc.input(1));
  if (!given)
    return nc.fail("'pads' must be a constant (data-dependent pads are not supported yet)");
  SmallVector<int64_t> axes;
  if (Value a = nc.input(3)) {
    auto ax = constantInts(a);
    if (!ax)
      return nc.fail("'axes' must be a constant (data-dependent axes are not supported yet)");
    for (int64_t x : *ax)
      axes.push_back(x < 0 ? x + rank : x);
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  if (given->size() != 2 * axes.size())
    return nc.fail("'pads' must have two entries per padded axis");
  SmallVector<int64_t> pads(2 * rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= rank)
      return nc.fail("pad axis out of range");
    pads[axes[i]] = (*given)[i];
    pads[axes[i] + rank] = (*given)[i + axes.size()];
  }
  SmallVector<Value> operands = {nc.input(0)};
  if (Value v = nc.input(2))
    operands.push_back(v);
  Builder &b = nc.builder;
  return one(nc.create1("llmc.pad", operands,
                        {b.getNamedAttr("pads", b.getDenseI64ArrayAttr(pads)),
                         b.getNamedAttr("mode", b.getStringAttr(nc.attrString("mode", "constant")))}));
}

// Size: the element count of a static input, as an i64 scalar constant.
FailureOr<SmallVector<Value>> importSize(NodeContext &nc) {
  auto type = cast<RankedTensorType>(nc.input(0).getType());
  if (!type.hasStaticShape())
    return nc.fail("Size of a dynamic shape is not supported yet");
  auto scalar = RankedTensorType::get({}, nc.builder.getI64Type());
  return one(nc.create1("llmc.constant", {},
                        {nc.builder.getNamedAttr("value", DenseElementsAttr::get(scalar, type.getNumElements()))}));
}

// Tile: constant repeats make llmc.tile. Repeats computed at run time (from input shapes: Bloom
// tiles its ALiBi slopes by the batch) become reshape(expand(x with a unit axis before each of
// its axes, [r0, d0, r1, d1, ...]), [r0 * d0, r1 * d1, ...]), which dynamic shapes take.
FailureOr<SmallVector<Value>> importTile(NodeContext &nc) {
  Builder &b = nc.builder;
  if (auto repeats = constantInts(nc.input(1)))
    return one(nc.create1("llmc.tile", {nc.input(0)}, {b.getNamedAttr("repeats", b.getDenseI64ArrayAttr(*repeats))}));
  Value x = nc.input(0), repeats = nc.input(1);
  const int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  auto repeatsType = cast<RankedTensorType>(repeats.getType());
  if (rank == 0 || repeatsType.getRank() != 1 || repeatsType.getDimSize(0) != rank ||
      !repeatsType.getElementType().isInteger(64))
    return nc.fail("'repeats' must be a constant or an int64 tensor of one repeat per axis");
  SmallVector<int64_t> unitAxes;
  for (int64_t i = 0; i < rank; ++i)
    unitAxes.push_back(2 * i);
  auto spread = nc.create1("llmc.unsqueeze", {x}, {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(unitAxes))});
  auto shape = nc.create1("llmc.shape", {x});
  if (failed(spread) || failed(shape))
    return failure();
  auto element = [&](Value v, int64_t i) {
    return nc.create1("llmc.slice", {v},
                      {b.getNamedAttr("starts", b.getDenseI64ArrayAttr({i})),
                       b.getNamedAttr("ends", b.getDenseI64ArrayAttr({i + 1})),
                       b.getNamedAttr("axes", b.getDenseI64ArrayAttr({0})),
                       b.getNamedAttr("steps", b.getDenseI64ArrayAttr({1}))});
  };
  SmallVector<Value> target; // [r0, d0, r1, d1, ...]
  for (int64_t i = 0; i < rank; ++i) {
    auto r = element(repeats, i), d = element(*shape, i);
    if (failed(r) || failed(d))
      return failure();
    target.append({*r, *d});
  }
  auto targetShape = nc.create1("llmc.concat", target, {b.getNamedAttr("axis", b.getI64IntegerAttr(0))});
  if (failed(targetShape))
    return failure();
  auto expanded = nc.create1("llmc.expand", {*spread, *targetShape});
  auto sizes = nc.create1("llmc.mul", {repeats, *shape});
  if (failed(expanded) || failed(sizes))
    return failure();
  return one(nc.create1("llmc.reshape", {*expanded, *sizes}));
}

// TopK: K a constant, or computed from shapes (DeepSeek-V3.2's min(2048, keys)); the symbolic
// shape analysis rejects a K that depends on tensor data.
FailureOr<SmallVector<Value>> importTopK(NodeContext &nc) {
  auto k = constantInts(nc.input(1));
  auto kType = dyn_cast<RankedTensorType>(nc.input(1).getType());
  if ((k && k->size() != 1) ||
      (!k && (!kType || !kType.hasStaticShape() || kType.getNumElements() != 1 || !kType.getElementType().isInteger())))
    return nc.fail("'K' must be one integer");
  Builder &b = nc.builder;
  SmallVector<Value> operands = {nc.input(0)};
  if (!k)
    operands.push_back(nc.input(1));
  return nc.create("llmc.top_k", operands,
                   {b.getNamedAttr("k", b.getI64IntegerAttr(k ? (*k)[0] : -1)),
                    b.getNamedAttr("axis", b.getI64IntegerAttr(nc.attrInt("axis", -1))),
                    b.getNamedAttr("largest", b.getI64IntegerAttr(nc.attrInt("largest", 1))),
                    b.getNamedAttr("sorted", b.getI64IntegerAttr(nc.attrInt("sorted", 1)))});
}

// QuantizeLinear: the result type is the zero point's, else output_dtype, else uint8.
FailureOr<SmallVector<Value>> importQuantize(NodeContext &nc) {
  Type out;
  if (Value zero = nc.input(2))
    out = cast<RankedTensorType>(zero.getType()).getElementType();
  else if (int64_t dtype = nc.attrInt("output_dtype", 0))
    out = elementType(nc.ctx(), int(dtype));
  else
    out = IntegerType::get(nc.ctx(), 8, IntegerType::Unsigned);
  if (!out || !out.isInteger(8))
    return nc.fail("quantization to this element type is not supported yet (int8 and uint8 are)");
  auto operands = presentInputs(nc);
  if (failed(operands))
    return failure();
  Builder &b = nc.builder;
  return one(nc.create1("llmc.quantize_linear", *operands,
                        {b.getNamedAttr("axis", b.getI64IntegerAttr(nc.attrInt("axis", 1))),
                         b.getNamedAttr("block_size", b.getI64IntegerAttr(nc.attrInt("block_size", 0))),
                         b.getNamedAttr("output_type", TypeAttr::get(out))}));
}

// A 0-element constant: how ops with optional operands in the middle mark an absent one.
FailureOr<Value> emptyTensor(NodeContext &nc, Type elementType) {
  auto type = RankedTensorType::get({0}, elementType);
  return nc.create1("llmc.constant", {},
                    {nc.builder.getNamedAttr("value", DenseElementsAttr::get(type, ArrayRef<Attribute>{}))});
}

// Attention (opset 23+): absent optional inputs become empty tensors, so that the op has a fixed
// operand list; results the node does not name are simply unused.
FailureOr<SmallVector<Value>> importAttention(NodeContext &nc) {
  Builder &b = nc.builder;
  SmallVector<Value> operands = {nc.input(0), nc.input(1), nc.input(2)};
  for (size_t i = 3; i < 7; ++i) {
    if (Value v = nc.input(i)) {
      operands.push_back(v);
      continue;
    }
    Type elem = i == 6 ? Type(b.getI64Type()) : cast<RankedTensorType>(nc.input(0).getType()).getElementType();
    auto empty = emptyTensor(nc, elem);
    if (failed(empty))
      return failure();
    operands.push_back(*empty);
  }
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("is_causal", b.getI64IntegerAttr(nc.attrInt("is_causal", 0))),
      b.getNamedAttr("q_num_heads", b.getI64IntegerAttr(nc.attrInt("q_num_heads", 0))),
      b.getNamedAttr("kv_num_heads", b.getI64IntegerAttr(nc.attrInt("kv_num_heads", 0))),
      b.getNamedAttr("softcap", b.getF32FloatAttr(nc.attrFloat("softcap", 0.f))),
      b.getNamedAttr("qk_matmul_output_mode", b.getI64IntegerAttr(nc.attrInt("qk_matmul_output_mode", 0))),
      b.getNamedAttr("left_window_size", b.getI64IntegerAttr(nc.attrInt("left_window_size", -1))),
      b.getNamedAttr("right_window_size", b.getI64IntegerAttr(nc.attrInt("right_window_size", -1)))};
  if (nc.attr("scale"))
    attrs.push_back(b.getNamedAttr("scale", b.getF32FloatAttr(nc.attrFloat("scale", 1.f))));
  return nc.create("llmc.attention", operands, attrs);
}

// RotaryEmbedding (opset 23+): an absent position_ids becomes an empty tensor.
FailureOr<SmallVector<Value>> importRotary(NodeContext &nc) {
  Builder &b = nc.builder;
  SmallVector<Value> operands = {nc.input(0), nc.input(1), nc.input(2)};
  if (Value pos = nc.input(3)) {
    operands.push_back(pos);
  } else {
    auto empty = emptyTensor(nc, b.getI64Type());
    if (failed(empty))
      return failure();
    operands.push_back(*empty);
  }
  return one(nc.create1("llmc.rotary", operands,
                        {b.getNamedAttr("interleaved", b.getI64IntegerAttr(nc.attrInt("interleaved", 0))),
                         b.getNamedAttr("num_heads", b.getI64IntegerAttr(nc.attrInt("num_heads", 0))),
                         b.getNamedAttr("rotary_embedding_dim",
                                        b.getI64IntegerAttr(nc.attrInt("rotary_embedding_dim", 0)))}));
}

// An op type's importer of its own, from opset `sinceOpset` on, and how many leading inputs it
// reads unchecked: ONNX's required ones, which the driver makes sure are there first (its schema
// check stops at the ONNX library's newest opset; past it, this count still holds).
struct Entry {
  const char *opType;
  ImportFn fn;
  int64_t sinceOpset = 13;
  int requiredInputs = 1;
};

const Entry kCustom[] = {
    {"Max", importVariadic},
    {"Min", importVariadic},
    {"Sum", importVariadic},
    {"Mean", importVariadic},
    {"Cast", importCast},
    {"CastLike", importCast, 15, 2},
    {"Dropout", importDropout},
    {"Pow", importPow, 13, 2},
    {"Clip", importClip},
    {"Pad", importPad, 13, 2},
    {"Size", importSize},
    {"Tile", importTile, 13, 2},
    {"TopK", importTopK, 11, 2},
    {"QuantizeLinear", importQuantize, 13, 2},
    {"Attention", importAttention, 23, 3},
    {"RotaryEmbedding", importRotary, 23, 3},
    {"Conv", importWindowOp, 11, 2},
    {"MaxPool", importWindowOp, 12},
    {"AveragePool", importWindowOp, 11},
    {"GlobalAveragePool", importGlobalPool, 1},
    {"GlobalMaxPool", importGlobalPool, 1},
    {"BatchNormalization", importBatchNorm, 15, 5},
    {"LayerNormalization", importLayerNorm, 17, 2},
    {"Constant", importConstant, 13, 0},
    {"ConstantOfShape", importConstantOfShape},
    {"Squeeze", importSqueezeLike},
    {"Unsqueeze", importSqueezeLike, 13, 2},
    {"ReduceSum", importReduce},
    {"ReduceMean", importReduce},
    {"ReduceMax", importReduce},
    {"ReduceMin", importReduce},
    {"ReduceProd", importReduce},
    {"ReduceSumSquare", importReduce},
    {"ReduceL2", importReduce},
    {"ReduceL1", importReduceByParts},
    {"ReduceLogSum", importReduceByParts},
    {"ReduceLogSumExp", importReduceByParts},
    {"Slice", importSlice, 13, 3},
    {"Split", importSplit},
};

} // namespace

std::vector<std::string> supportedOpTypes() {
  std::vector<std::string> names;
  for (const Entry &e : kCustom)
    names.push_back(e.opType);
  for (const DirectOp &op : kDirectOps)
    names.push_back(op.onnx);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

int requiredInputs(const std::string &opType, int64_t opset) {
  for (const Entry &e : kCustom)
    if (opType == e.opType && opset >= e.sinceOpset)
      return e.requiredInputs;
  return 0; // (a direct op: creating it refuses an absent operand)
}

ImportFn findImporter(const std::string &opType, int64_t opset) {
  if (opset < 13)
    return nullptr; // the driver maps older models to 13 where an op did not change
  for (const Entry &e : kCustom)
    if (opType == e.opType && opset >= e.sinceOpset)
      return e.fn;
  if (findDirect(opType, opset))
    return importDirect;
  return nullptr;
}

} // namespace llmc::importer

// einsum: equation parsing and a direct (loop over every label) kernel; quantize/dequantize.
#include "Einsum.h"

#include "KernelUtil.h"

#include <algorithm>
#include <map>

namespace llmc::rt {

std::string parseEinsum(const std::string &equation, const std::vector<int> &ranks, EinsumSpec &spec) {
  std::string eq;
  for (char c : equation)
    if (c != ' ')
      eq += c;
  const auto arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size())
    return "equation has " + std::to_string(terms.size()) + " operands, got " + std::to_string(ranks.size());
  int ellipsisRank = 0;
  spec.inputs.clear();
  for (size_t i = 0; i < terms.size(); ++i) {
    const auto dots = terms[i].find("...");
    const int letters = int(terms[i].size()) - (dots == std::string::npos ? 0 : 3);
    for (char c : terms[i])
      if (c != '.' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z'))
        return std::string("bad label '") + c + "' in the equation";
    if (dots == std::string::npos) {
      if (letters != ranks[i])
        return "operand " + std::to_string(i) + " has rank " + std::to_string(ranks[i]) + ", the equation gives " +
               std::to_string(letters) + " labels";
      spec.inputs.push_back(terms[i]);
      continue;
    }
    const int extra = ranks[i] - letters;
    if (extra < 0)
      return "operand " + std::to_string(i) + " has too few dimensions for its labels";
    ellipsisRank = std::max(ellipsisRank, extra);
    std::string expanded = terms[i].substr(0, dots);
    for (int k = extra; k > 0; --k)
      expanded += char('0' + k); // placeholder labels '1'..'9' count from the right
    expanded += terms[i].substr(dots + 3);
    spec.inputs.push_back(expanded);
  }
  if (ellipsisRank > 9)
    return "too many broadcast dimensions";
  std::string ellipsisLabels;
  for (int k = ellipsisRank; k > 0; --k)
    ellipsisLabels += char('0' + k);
  if (arrow != std::string::npos) {
    const std::string rhs = eq.substr(arrow + 2);
    const auto dots = rhs.find("...");
    spec.output = dots == std::string::npos ? rhs : rhs.substr(0, dots) + ellipsisLabels + rhs.substr(dots + 3);
  } else { // implicit: broadcast dimensions, then labels seen once, alphabetically
    std::map<char, int> count;
    for (const std::string &t : spec.inputs)
      for (char c : t)
        if (std::isalpha(static_cast<unsigned char>(c)))
          ++count[c];
    spec.output = ellipsisLabels;
    for (const auto &[c, n] : count)
      if (n == 1)
        spec.output += c;
  }
  for (char c : spec.output) {
    bool found = false;
    for (const std::string &t : spec.inputs)
      found = found || t.find(c) != std::string::npos;
    if (!found)
      return std::string("output label '") + c + "' appears in no operand";
  }
  return {};
}

std::string einsumLoops(const EinsumSpec &spec, const std::vector<std::vector<int64_t>> &dims, EinsumLoops &loops) {
  if (dims.size() != spec.inputs.size())
    return "the equation's operands and the shapes differ in number";
  std::map<char, int64_t> size;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].size() != spec.inputs[i].size())
      return "operand " + std::to_string(i) + "'s rank differs from its labels";
    for (size_t d = 0; d < dims[i].size(); ++d) {
      const char c = spec.inputs[i][d];
      const int64_t dim = dims[i][d];
      auto it = size.find(c);
      if (it == size.end() || it->second == 1)
        size[c] = dim;
      else if (dim != 1 && dim != it->second)
        return std::string("label '") + c + "' has sizes " + std::to_string(it->second) + " and " + std::to_string(dim);
    }
  }
  loops = EinsumLoops{};
  loops.labels = spec.output;
  for (const auto &[c, n] : size)
    if (spec.output.find(c) == std::string::npos)
      loops.labels += c; // summed labels after the output's
  for (char c : loops.labels) {
    loops.sizes.push_back(size[c]);
    (spec.output.find(c) == std::string::npos ? loops.summed : loops.outCount) *= size[c];
  }
  loops.strides.assign(dims.size(), std::vector<int64_t>(loops.labels.size(), 0));
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t stride = 1;
    for (int d = int(dims[i].size()) - 1; d >= 0; --d) {
      if (dims[i][size_t(d)] != 1)
        loops.strides[i][loops.labels.find(spec.inputs[i][size_t(d)])] += stride;
      stride *= dims[i][size_t(d)];
    }
  }
  return {};
}

namespace {

std::string einsumKernel(const KernelArgs &args) {
  std::vector<int> ranks;
  std::vector<std::vector<int64_t>> dims;
  for (int i = 0; i < args.numInputs; ++i) {
    const Shape &s = args.in(i).shape;
    ranks.push_back(s.rank);
    dims.emplace_back(s.dims, s.dims + s.rank);
  }
  EinsumSpec spec;
  if (std::string err = parseEinsum(std::string(args.attrs.getString("equation")), ranks, spec); !err.empty())
    return err;
  EinsumLoops loops;
  if (std::string err = einsumLoops(spec, dims, loops); !err.empty())
    return err;
  TensorRef &out = args.out(0);
  if (out.numel() != loops.outCount || int(spec.output.size()) != out.shape.rank)
    return "output shape does not match the equation";
  std::string err;
  LLMC_DISPATCH_NUMERIC(out.dtype, T, err, {
    for (int i = 0; i < args.numInputs; ++i)
      if (args.in(i).dtype != out.dtype)
        err = "operand element types differ";
    if (!err.empty())
      break;
    const int64_t total = loops.outCount * loops.summed;
    std::vector<double> acc(size_t(loops.outCount), 0.0);
    std::vector<int64_t> index(loops.labels.size(), 0);
    for (int64_t flat = 0; flat < total; ++flat) {
      double product = 1;
      for (int i = 0; i < args.numInputs; ++i) {
        int64_t offset = 0;
        for (size_t l = 0; l < loops.labels.size(); ++l)
          offset += index[l] * loops.strides[size_t(i)][l];
        product *= double(args.in(i).as<const T>()[offset]);
      }
      acc[size_t(flat / loops.summed)] += product;
      for (int l = int(loops.labels.size()) - 1; l >= 0; --l) {
        if (++index[size_t(l)] < loops.sizes[size_t(l)])
          break;
        index[size_t(l)] = 0;
      }
    }
    for (int64_t o = 0; o < loops.outCount; ++o)
      out.as<T>()[o] = T(acc[size_t(o)]);
  });
  return err;
}

// Index of the scale (and zero point) that applies to element `i` of x.
struct ScaleIndex {
  int64_t outer = 1, dim = 1, inner = 1, block = 0, count = 1;
  std::string init(const KernelArgs &args) {
    const TensorRef &x = args.in(0), &scale = args.in(1);
    count = scale.numel();
    if (count == 1)
      return {};
    const int rank = x.shape.rank;
    const int axis = normalizeAxis(args.attrs.getInt("axis", 1), rank);
    if (axis < 0 || axis >= rank)
      return "axis out of range";
    splitAround(x.shape, axis, outer, dim, inner);
    block = args.attrs.getInt("block_size", 0);
    if (block > 0) {
      if (count != outer * ((dim + block - 1) / block) * inner)
        return "scale shape does not match the blocks";
    } else if (count != dim) {
      return "per-axis scale must have one value per axis index";
    }
    return {};
  }
  int64_t operator()(int64_t i) const {
    if (count == 1)
      return 0;
    const int64_t a = (i / inner) % dim;
    if (block <= 0)
      return a;
    const int64_t blocks = (dim + block - 1) / block, o = i / (inner * dim), in = i % inner;
    return (o * blocks + a / block) * inner + in;
  }
};

template <typename Q> double readQuant(const TensorRef &t, int64_t i) { return double(t.as<const Q>()[i]); }

std::string dequantizeKernel(const KernelArgs &args) {
  const TensorRef &x = args.in(0), &scale = args.in(1);
  ScaleIndex at;
  if (std::string err = at.init(args); !err.empty())
    return err;
  const bool hasZero = args.hasInput(2);
  if (hasZero && (args.in(2).dtype != x.dtype || args.in(2).numel() != at.count))
    return "zero point must match the input's type and the scale's shape";
  if (scale.dtype != DType::F32 || args.out(0).dtype != DType::F32 || args.out(0).numel() != x.numel())
    return "scale and output must be f32 (f16 through conversion)";
  std::string err;
  LLMC_DISPATCH_NUMERIC(x.dtype, Q, err, {
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t s = at(i);
      const double zero = hasZero ? readQuant<Q>(args.in(2), s) : 0.0;
      args.out(0).as<float>()[i] = float((readQuant<Q>(x, i) - zero) * double(scale.as<const float>()[s]));
    }
  });
  return err;
}

std::string quantizeKernel(const KernelArgs &args) {
  const TensorRef &x = args.in(0), &scale = args.in(1);
  TensorRef &out = args.out(0);
  ScaleIndex at;
  if (std::string err = at.init(args); !err.empty())
    return err;
  const bool hasZero = args.hasInput(2);
  if (hasZero && (args.in(2).dtype != out.dtype || args.in(2).numel() != at.count))
    return "zero point must match the output's type and the scale's shape";
  if (x.dtype != DType::F32 || scale.dtype != DType::F32 || out.numel() != x.numel())
    return "input and scale must be f32 (f16 through conversion)";
  std::string err;
  LLMC_DISPATCH_NUMERIC(out.dtype, Q, err, {
    if constexpr (std::is_floating_point_v<Q>) {
      err = "quantization needs an integer output type";
    } else {
      for (int64_t i = 0; i < x.numel(); ++i) {
        const int64_t s = at(i);
        const double zero = hasZero ? readQuant<Q>(args.in(2), s) : 0.0;
        double q = std::nearbyint(double(x.as<const float>()[i]) / double(scale.as<const float>()[s])) + zero;
        q = std::clamp(q, double(std::numeric_limits<Q>::lowest()), double(std::numeric_limits<Q>::max()));
        out.as<Q>()[i] = Q(q);
      }
    }
  });
  return err;
}

} // namespace

extern const KernelEntry kEinsumKernels[] = {
    {"einsum", withHalf<einsumKernel>},
    {"quantize_linear", withHalf<quantizeKernel>},
    {"dequantize_linear", withHalf<dequantizeKernel>},
    {nullptr, nullptr},
};

} // namespace llmc::rt

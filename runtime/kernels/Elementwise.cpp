// Elementwise kernels: unary math, broadcast binary arithmetic/comparison/logic, where, cast.
#include "KernelUtil.h"

#include <algorithm>
#include <limits>

namespace llmc::rt {
namespace {

template <typename T, typename R, typename Op>
void binaryLoop(const TensorRef &a, const TensorRef &b, TensorRef &out, Op op) {
  const T *pa = a.as<const T>();
  const T *pb = b.as<const T>();
  R *po = out.as<R>();
  const Shape *ins[2] = {&a.shape, &b.shape};
  forEachRow<2>(out.shape, ins, [&](int64_t o, const int64_t *off, const int64_t *st, int64_t n) {
    const T *x = pa + off[0];
    const T *y = pb + off[1];
    R *z = po + o;
    if (st[0] == 1 && st[1] == 1) {
      for (int64_t i = 0; i < n; ++i)
        z[i] = op(x[i], y[i]);
    } else if (st[0] == 1 && st[1] == 0) {
      const T yv = *y;
      for (int64_t i = 0; i < n; ++i)
        z[i] = op(x[i], yv);
    } else {
      for (int64_t i = 0; i < n; ++i)
        z[i] = op(x[i * st[0]], y[i * st[1]]);
    }
  });
}

std::string checkBinary(const KernelArgs &args) {
  if (args.numInputs != 2 || args.numOutputs != 1)
    return "expects 2 inputs and 1 output";
  if (args.in(0).dtype != args.in(1).dtype)
    return std::string("operand element types differ: ") + dtypeName(args.in(0).dtype) + " vs " +
           dtypeName(args.in(1).dtype);
  if (!broadcastsTo(args.in(0).shape, args.out(0).shape) || !broadcastsTo(args.in(1).shape, args.out(0).shape))
    return "operand shapes " + args.in(0).shape.str() + " and " + args.in(1).shape.str() +
           " do not broadcast to " + args.out(0).shape.str();
  return {};
}

// Arithmetic: the result has the operands' element type.
template <typename OpFactory> std::string arithmetic(const KernelArgs &args) {
  std::string err = checkBinary(args);
  if (!err.empty())
    return err;
  LLMC_DISPATCH_NUMERIC(args.in(0).dtype, T, err,
                        binaryLoop<T, T>(args.in(0), args.in(1), args.out(0), OpFactory::template get<T>()));
  return err;
}

// Comparison: the result is bool.
template <typename OpFactory> std::string comparison(const KernelArgs &args) {
  std::string err = checkBinary(args);
  if (!err.empty())
    return err;
  LLMC_DISPATCH_NUMERIC(args.in(0).dtype, T, err,
                        binaryLoop<T, uint8_t>(args.in(0), args.in(1), args.out(0),
                                               OpFactory::template get<T>()));
  return err;
}

#define LLMC_BINARY_OP(NAME, EXPR)                                                                 \
  struct NAME {                                                                                    \
    template <typename T> static auto get() {                                                      \
      return [](T x, T y) { return EXPR; };                                                        \
    }                                                                                              \
  };
LLMC_BINARY_OP(AddOp, T(x + y))
LLMC_BINARY_OP(SubOp, T(x - y))
LLMC_BINARY_OP(MulOp, T(x * y))
LLMC_BINARY_OP(DivOp, T(y == T(0) && !std::is_floating_point_v<T> ? T(0) : T(x / y)))
LLMC_BINARY_OP(PowOp, T(std::pow(double(x), double(y))))
LLMC_BINARY_OP(MaxOp, T(std::isnan(double(x)) || x > y ? x : y))
LLMC_BINARY_OP(MinOp, T(std::isnan(double(x)) || x < y ? x : y))
LLMC_BINARY_OP(EqualOp, uint8_t(x == y))
LLMC_BINARY_OP(LessOp, uint8_t(x < y))
LLMC_BINARY_OP(LessEqualOp, uint8_t(x <= y))
LLMC_BINARY_OP(GreaterOp, uint8_t(x > y))
LLMC_BINARY_OP(GreaterEqualOp, uint8_t(x >= y))
LLMC_BINARY_OP(AndOp, T(x && y))
LLMC_BINARY_OP(OrOp, T(x || y))
LLMC_BINARY_OP(XorOp, T(bool(x) != bool(y)))
#undef LLMC_BINARY_OP

// pow for float32 keeps float precision (matches what ONNX Runtime computes).
struct PowF32Op {
  template <typename T> static auto get() {
    return [](T x, T y) {
      if constexpr (std::is_same_v<T, float>)
        return y == 2.0f ? x * x : std::pow(x, y);
      else
        return T(std::pow(double(x), double(y)));
    };
  }
};

template <typename T, typename Op> void unaryLoop(const TensorRef &in, TensorRef &out, Op op) {
  const T *x = in.as<const T>();
  T *y = out.as<T>();
  const int64_t n = in.numel();
  for (int64_t i = 0; i < n; ++i)
    y[i] = op(x[i]);
}

std::string checkUnary(const KernelArgs &args) {
  if (args.numInputs != 1 || args.numOutputs != 1)
    return "expects 1 input and 1 output";
  if (args.in(0).numel() != args.out(0).numel())
    return "input and output sizes differ";
  return {};
}

#define LLMC_FLOAT_UNARY(NAME, EXPR)                                                               \
  std::string NAME(const KernelArgs &args) {                                                       \
    std::string err = checkUnary(args);                                                            \
    if (!err.empty())                                                                              \
      return err;                                                                                  \
    LLMC_DISPATCH_FLOAT(args.in(0).dtype, T, err,                                                  \
                        unaryLoop<T>(args.in(0), args.out(0), [](T x) { return T(EXPR); }));       \
    return err;                                                                                    \
  }
LLMC_FLOAT_UNARY(sqrtKernel, std::sqrt(x))
LLMC_FLOAT_UNARY(reciprocalKernel, T(1) / x)
LLMC_FLOAT_UNARY(expKernel, std::exp(x))
LLMC_FLOAT_UNARY(logKernel, std::log(x))
LLMC_FLOAT_UNARY(tanhKernel, std::tanh(x))
LLMC_FLOAT_UNARY(erfKernel, std::erf(x))
LLMC_FLOAT_UNARY(siluKernel, x >= 0 ? x / (T(1) + std::exp(-x)) : x * std::exp(x) / (T(1) + std::exp(x)))
LLMC_FLOAT_UNARY(sigmoidKernel, sigmoidOf(x))
LLMC_FLOAT_UNARY(cosKernel, std::cos(x))
LLMC_FLOAT_UNARY(sinKernel, std::sin(x))
LLMC_FLOAT_UNARY(floorKernel, std::floor(x))
LLMC_FLOAT_UNARY(ceilKernel, std::ceil(x))
LLMC_FLOAT_UNARY(roundKernel, std::nearbyint(x))
#undef LLMC_FLOAT_UNARY

#define LLMC_NUMERIC_UNARY(NAME, EXPR)                                                             \
  std::string NAME(const KernelArgs &args) {                                                       \
    std::string err = checkUnary(args);                                                            \
    if (!err.empty())                                                                              \
      return err;                                                                                  \
    LLMC_DISPATCH_NUMERIC(args.in(0).dtype, T, err,                                                \
                          unaryLoop<T>(args.in(0), args.out(0), [](T x) { return T(EXPR); }));     \
    return err;                                                                                    \
  }
LLMC_NUMERIC_UNARY(negKernel, -x)
LLMC_NUMERIC_UNARY(absKernel, x < T(0) ? T(-x) : x)
LLMC_NUMERIC_UNARY(reluKernel, x > T(0) ? x : T(0))
LLMC_NUMERIC_UNARY(notKernel, !x)
#undef LLMC_NUMERIC_UNARY

// Activations with attributes.
template <typename MakeOp> std::string floatActivation(const KernelArgs &args, MakeOp makeOp) {
  std::string err = checkUnary(args);
  if (!err.empty())
    return err;
  LLMC_DISPATCH_FLOAT(args.in(0).dtype, T, err, unaryLoop<T>(args.in(0), args.out(0), makeOp(T())));
  return err;
}

std::string eluKernel(const KernelArgs &args) {
  const double alpha = args.attrs.getFloat("alpha", 1.0);
  return floatActivation(args, [alpha](auto zero) {
    using T = decltype(zero);
    return [alpha](T x) { return x >= T(0) ? x : T(alpha * std::expm1(double(x))); };
  });
}

std::string leakyReluKernel(const KernelArgs &args) {
  const double alpha = args.attrs.getFloat("alpha", 0.01);
  return floatActivation(args, [alpha](auto zero) {
    using T = decltype(zero);
    return [alpha](T x) { return x >= T(0) ? x : T(alpha * double(x)); };
  });
}

std::string hardSigmoidKernel(const KernelArgs &args) {
  const double alpha = args.attrs.getFloat("alpha", 0.2), beta = args.attrs.getFloat("beta", 0.5);
  return floatActivation(args, [alpha, beta](auto zero) {
    using T = decltype(zero);
    return [alpha, beta](T x) { return T(std::clamp(alpha * double(x) + beta, 0.0, 1.0)); };
  });
}

std::string hardSwishKernel(const KernelArgs &args) {
  return floatActivation(args, [](auto zero) {
    using T = decltype(zero);
    return [](T x) { return T(double(x) * std::clamp(double(x) / 6.0 + 0.5, 0.0, 1.0)); };
  });
}

std::string softplusKernel(const KernelArgs &args) {
  return floatActivation(args, [](auto zero) {
    using T = decltype(zero);
    // log(1 + e^x) without overflow for large x.
    return [](T x) { return T(x > T(0) ? double(x) + std::log1p(std::exp(-double(x))) : std::log1p(std::exp(double(x)))); };
  });
}

std::string signKernel(const KernelArgs &args) {
  std::string err = checkUnary(args);
  if (!err.empty())
    return err;
  LLMC_DISPATCH_NUMERIC(args.in(0).dtype, T, err,
                        unaryLoop<T>(args.in(0), args.out(0), [](T x) { return T(x > T(0) ? 1 : x < T(0) ? -1 : 0); }));
  return err;
}

// mod: fmod = 0 takes the divisor's sign (integers), fmod = 1 the dividend's (C fmod).
std::string modKernel(const KernelArgs &args) {
  std::string err = checkBinary(args);
  if (!err.empty())
    return err;
  const bool cMod = args.attrs.getInt("fmod", 0);
  LLMC_DISPATCH_NUMERIC(args.in(0).dtype, T, err, {
    binaryLoop<T, T>(args.in(0), args.in(1), args.out(0), [cMod](auto x, auto y) {
      using V = decltype(x); // a generic lambda, so that only one branch is instantiated
      if constexpr (std::is_floating_point_v<V>) {
        V r = std::fmod(x, y);
        if (!cMod && r != V(0) && ((r < 0) != (y < 0)))
          r += y;
        return r;
      } else {
        if (y == V(0))
          return V(0);
        V r = V(x % y);
        if (!cMod && r != V(0) && ((r < 0) != (y < 0)))
          r = V(r + y);
        return r;
      }
    });
  });
  return err;
}

std::string geluKernel(const KernelArgs &args) {
  std::string err = checkUnary(args);
  if (!err.empty())
    return err;
  const bool tanhApprox = args.attrs.getString("approximate") == "tanh";
  LLMC_DISPATCH_FLOAT(args.in(0).dtype, T, err, {
    if (tanhApprox)
      unaryLoop<T>(args.in(0), args.out(0), [](T x) {
        const T c = T(0.7978845608028654); // sqrt(2/pi)
        return T(0.5) * x * (T(1) + std::tanh(c * (x + T(0.044715) * x * x * x)));
      });
    else
      unaryLoop<T>(args.in(0), args.out(0),
                   [](T x) { return T(0.5) * x * (T(1) + std::erf(x * T(0.7071067811865476))); });
  });
  return err;
}

std::string isNanKernel(const KernelArgs &args) {
  std::string err = checkUnary(args);
  if (!err.empty())
    return err;
  uint8_t *y = args.out(0).as<uint8_t>();
  const int64_t n = args.in(0).numel();
  LLMC_DISPATCH_FLOAT(args.in(0).dtype, T, err, {
    const T *x = args.in(0).as<const T>();
    for (int64_t i = 0; i < n; ++i)
      y[i] = std::isnan(x[i]);
  });
  return err;
}

std::string whereKernel(const KernelArgs &args) {
  if (args.numInputs != 3 || args.numOutputs != 1)
    return "expects 3 inputs and 1 output";
  const TensorRef &c = args.in(0), &x = args.in(1), &y = args.in(2);
  if (c.dtype != DType::Bool)
    return "condition must be bool";
  if (x.dtype != y.dtype)
    return "branch element types differ";
  TensorRef &out = args.out(0);
  if (!broadcastsTo(c.shape, out.shape) || !broadcastsTo(x.shape, out.shape) || !broadcastsTo(y.shape, out.shape))
    return "operand shapes do not broadcast to " + out.shape.str();
  std::string err;
  const Shape *ins[3] = {&c.shape, &x.shape, &y.shape};
  LLMC_DISPATCH_NUMERIC(x.dtype, T, err, {
    const uint8_t *pc = c.as<const uint8_t>();
    const T *px = x.as<const T>(), *py = y.as<const T>();
    T *po = out.as<T>();
    forEachRow<3>(out.shape, ins, [&](int64_t o, const int64_t *off, const int64_t *st, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        po[o + i] = pc[off[0] + i * st[0]] ? px[off[1] + i * st[1]] : py[off[2] + i * st[2]];
    });
  });
  return err;
}

template <typename From> std::string castFrom(const From *src, TensorRef &out, int64_t n) {
  std::string err;
  if (isHalfWidth(out.dtype)) {
    uint16_t *dst = out.as<uint16_t>();
    for (int64_t i = 0; i < n; ++i)
      if constexpr (std::is_same_v<From, float>)
        dst[i] = toHalfWidth(src[i], out.dtype);
      else // rounded once, through f32 rounded to odd
        dst[i] = toHalfWidth(roundToOddFloat(static_cast<long double>(src[i])), out.dtype);
    return err;
  }
  if (out.dtype == DType::Bool) {
    uint8_t *dst = out.as<uint8_t>();
    for (int64_t i = 0; i < n; ++i)
      dst[i] = src[i] != From(0);
    return err;
  }
  LLMC_DISPATCH_NUMERIC(out.dtype, To, err, {
    To *dst = out.as<To>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_floating_point_v<From> && !std::is_floating_point_v<To>) {
        // Saturate NaN and out-of-range values instead of invoking undefined behaviour.
        double v = double(src[i]);
        if (std::isnan(v))
          v = 0;
        v = std::clamp(v, double(std::numeric_limits<To>::lowest()), double(std::numeric_limits<To>::max()));
        dst[i] = To(v);
      } else {
        dst[i] = To(src[i]);
      }
    }
  });
  return err;
}

std::string castKernel(const KernelArgs &args) {
  std::string err = checkUnary(args);
  if (!err.empty())
    return err;
  const TensorRef &in = args.in(0);
  const int64_t n = in.numel();
  if (in.dtype == args.out(0).dtype) {
    std::memcpy(args.out(0).data, in.data, in.bytes());
    return {};
  }
  if (isHalfWidth(in.dtype)) {
    std::vector<float> tmp(n);
    const uint16_t *src = in.as<const uint16_t>();
    for (int64_t i = 0; i < n; ++i)
      tmp[i] = widenFloat(src[i], in.dtype);
    return castFrom<float>(tmp.data(), args.out(0), n);
  }
  LLMC_DISPATCH_NUMERIC(in.dtype, From, err, err = castFrom<From>(in.as<const From>(), args.out(0), n));
  return err;
}

} // namespace

extern const KernelEntry kElementwiseKernels[] = {
    {"add", withHalf<arithmetic<AddOp>>},
    {"sub", withHalf<arithmetic<SubOp>>},
    {"mul", withHalf<arithmetic<MulOp>>},
    {"div", withHalf<arithmetic<DivOp>>},
    {"pow", withHalf<arithmetic<PowF32Op>>},
    {"max", withHalf<arithmetic<MaxOp>>},
    {"min", withHalf<arithmetic<MinOp>>},
    {"and", arithmetic<AndOp>},
    {"or", arithmetic<OrOp>},
    {"xor", arithmetic<XorOp>},
    {"equal", withHalf<comparison<EqualOp>>},
    {"less", withHalf<comparison<LessOp>>},
    {"less_equal", withHalf<comparison<LessEqualOp>>},
    {"greater", withHalf<comparison<GreaterOp>>},
    {"greater_equal", withHalf<comparison<GreaterEqualOp>>},
    {"sqrt", withHalf<sqrtKernel>},
    {"reciprocal", withHalf<reciprocalKernel>},
    {"exp", withHalf<expKernel>},
    {"log", withHalf<logKernel>},
    {"tanh", withHalf<tanhKernel>},
    {"erf", withHalf<erfKernel>},
    {"sigmoid", withHalf<sigmoidKernel>},
    {"silu", withHalf<siluKernel>},
    {"cos", withHalf<cosKernel>},
    {"sin", withHalf<sinKernel>},
    {"floor", withHalf<floorKernel>},
    {"ceil", withHalf<ceilKernel>},
    {"neg", withHalf<negKernel>},
    {"abs", withHalf<absKernel>},
    {"relu", withHalf<reluKernel>},
    {"not", notKernel},
    {"gelu", withHalf<geluKernel>},
    {"elu", withHalf<eluKernel>},
    {"leaky_relu", withHalf<leakyReluKernel>},
    {"hard_sigmoid", withHalf<hardSigmoidKernel>},
    {"hard_swish", withHalf<hardSwishKernel>},
    {"softplus", withHalf<softplusKernel>},
    {"sign", withHalf<signKernel>},
    {"round", withHalf<roundKernel>},
    {"mod", withHalf<modKernel>},
    {"is_nan", withHalf<isNanKernel>},
    {"where", withHalf<whereKernel>},
    {"cast", castKernel},
    {nullptr, nullptr},
};

} // namespace llmc::rt

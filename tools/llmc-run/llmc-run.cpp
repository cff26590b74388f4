// llmc-run: runs a plan on inputs from .npy files (or random ones), writes outputs as .npy,
// compares them with references and benchmarks latency. Uses only the runtime's C API.
#include "Npy.h"
#include "Common.h"
#include "Generate.h"
#include "Tokenize.h"
#include "llmc/llmc.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

namespace npy = llmc::npy;

const char *kUsage = R"(usage: llmc-run PLAN [options]
       llmc-run tokenize PLAN (--text TEXT | --hex-lines FILE | --decode ID...)
       llmc-run generate PLAN --prompt TEXT [--max-tokens N] ...   (see llmc-run generate --help)

Runs an llmc plan on the CPU, or on a CUDA GPU (--device cuda; the default for a --target cuda plan).

  --input NAME=FILE.npy    an input tensor (repeatable); for an f16 or bf16 input a float32 file is
                           rounded to it (NumPy has no bf16; ml_dtypes' bfloat16 files read as such)
  --random                 fill inputs not given with random values
  --seed N                 seed for --random (default 0)
  --int-max N              random integers are drawn from [0, N) (default 100)
  --dim SYMBOL=N           size of a dynamic dimension for --random inputs (seq=7; repeatable)
  --output-dir DIR         write each output to DIR/NAME.npy (a bf16 output as float32)
  --compare NAME=REF.npy   compare an output with a reference (repeatable)
  --compare-dir DIR        compare every output with DIR/NAME.npy
  --atol A --rtol R        comparison tolerances: |out - ref| <= A + R * |ref| (default 1e-4, 1e-4)
  --benchmark N            run N more times and print latency median and p90
  --warmup N               untimed runs before the benchmark (default 3)
  --threads N              threads for GEMMs (default: the library's choice)
  --device cpu|cuda        where to run (default: the device the plan was built for; cuda: the CUDA
                           executor, work in progress; any plan also runs on the cpu)
  --no-cuda-graphs         CUDA: launch every kernel every run instead of replaying a captured graph
  --no-cuda-gemv           CUDA: every linear on cuBLASLt, those of 1 to 8 rows too (for comparison)
  --no-cuda-overlap        CUDA: no programmatic dependent launch of the decode kernels (for comparison)
  --check-cuda             check, without a GPU, that the CUDA executor has a kernel for every op
  --profile                time every kernel and print the total per kernel type
  --quiet                  print no output values
  --help, --version
)";

struct Options {
  std::string plan;
  std::map<std::string, std::string> inputs, compares;
  std::map<std::string, int64_t> dims; // --dim: symbol sizes for random inputs
  bool random = false, quiet = false, profile = false;
  uint64_t seed = 0;
  int64_t intMax = 100;
  std::string outputDir, compareDir;
  double atol = 1e-4, rtol = 1e-4;
  int benchmark = 0, warmup = 3, threads = 0;
  llmc_device device = LLMC_DEVICE_CPU;
  bool deviceGiven = false; // else the plan's target
  llmcrun::CudaFlags cuda;
  bool checkCuda = false;
};

using llmcrun::fail;

// Prints and frees a status; true when it was an error.
bool check(llmc_status status, const std::string &what) {
  if (!status)
    return false;
  std::fprintf(stderr, "llmc-run: error: %s: %s\n", what.c_str(), llmc_status_message(status));
  llmc_status_free(status);
  return true;
}

bool splitPair(const std::string &s, std::string &key, std::string &value) {
  auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0)
    return false;
  key = s.substr(0, eq);
  value = s.substr(eq + 1);
  return true;
}

// Gives the dynamic dimensions of random input `index` their --dim sizes.
std::string sizeDynamicDims(llmc_plan plan, int32_t index, const char *name, const std::map<std::string, int64_t> &dims,
                            std::vector<int64_t> &shape) {
  for (size_t d = 0; d < shape.size(); ++d) {
    int32_t symbol = -1;
    llmc_status_free(llmc_plan_input_dim_symbol(plan, index, int32_t(d), &symbol));
    if (symbol < 0)
      continue;
    const char *symbolName = nullptr;
    int64_t max = 0;
    llmc_status_free(llmc_plan_symbol_info(plan, symbol, &symbolName, &max));
    auto it = dims.find(symbolName);
    if (it == dims.end())
      return std::string("input '") + name + "' dimension " + std::to_string(d) + " is dynamic ('" + symbolName +
             "', 1.." + std::to_string(max) + "): give its size for --random with --dim " + symbolName + "=N";
    shape[d] = it->second;
  }
  return {};
}

// Returns "" when the arguments parse, "-" for --help/--version (already printed), else an error.
std::string parseArgs(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](std::string &out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    std::string v, key, value;
    try {
      if (a == "--help" || a == "-h") {
        std::printf("%s", kUsage);
        return "-";
      } else if (a == "--version") {
        std::printf("llmc-run %s\n", llmc_version());
        return "-";
      } else if (a == "--random") {
        o.random = true;
      } else if (a == "--quiet") {
        o.quiet = true;
      } else if (a == "--profile") {
        o.profile = true;
      } else if ((a == "--input" || a == "--compare") && next(v)) {
        if (!splitPair(v, key, value))
          return a + " expects NAME=FILE.npy, got '" + v + "'";
        (a == "--input" ? o.inputs : o.compares)[key] = value;
      } else if (a == "--dim" && next(v)) {
        if (!splitPair(v, key, value))
          return "--dim expects SYMBOL=N, got '" + v + "'";
        size_t used = 0;
        o.dims[key] = std::stoll(value, &used);
        if (used != value.size())
          throw std::invalid_argument(value);
      } else if (a == "--seed" && next(v)) {
        o.seed = std::stoull(v);
      } else if (a == "--int-max" && next(v)) {
        o.intMax = std::stoll(v);
      } else if (a == "--output-dir" && next(v)) {
        o.outputDir = v;
      } else if (a == "--compare-dir" && next(v)) {
        o.compareDir = v;
      } else if (a == "--atol" && next(v)) {
        o.atol = std::stod(v);
      } else if (a == "--rtol" && next(v)) {
        o.rtol = std::stod(v);
      } else if (a == "--benchmark" && next(v)) {
        o.benchmark = std::stoi(v);
      } else if (a == "--warmup" && next(v)) {
        o.warmup = std::stoi(v);
      } else if (a == "--threads" && next(v)) {
        o.threads = std::stoi(v);
      } else if (a == "--check-cuda") {
        o.checkCuda = true;
      } else if (o.cuda.take(a)) {
      } else if (a == "--device" && next(v)) {
        if (v != "cpu" && v != "cuda")
          return "--device must be cpu or cuda, not '" + v + "'";
        o.device = v == "cuda" ? LLMC_DEVICE_CUDA : LLMC_DEVICE_CPU;
        o.deviceGiven = true;
      } else if (!a.empty() && a[0] != '-' && o.plan.empty()) {
        o.plan = a;
      } else {
        return "unknown or incomplete option '" + a + "' (see --help)";
      }
    } catch (const std::exception &) {
      return "bad value for " + a + ": '" + v + "'";
    }
  }
  if (o.plan.empty())
    return "no plan given (see --help)";
  return {};
}

std::string shapeStr(const llmc_tensor &t) {
  std::string s;
  for (int d = 0; d < t.rank; ++d)
    s += (d ? "x" : "") + std::to_string(t.dims[d]);
  return s.empty() ? "scalar" : s;
}

int64_t numel(const llmc_tensor &t) {
  int64_t n = 1;
  for (int d = 0; d < t.rank; ++d)
    n *= t.dims[d];
  return n;
}

double element(const llmc_tensor &t, int64_t i) {
  switch (t.dtype) {
  case LLMC_DTYPE_F32: return static_cast<const float *>(t.data)[i];
  case LLMC_DTYPE_F64: return static_cast<const double *>(t.data)[i];
  case LLMC_DTYPE_F16:
  case LLMC_DTYPE_BF16: return npy::widen16(static_cast<const uint16_t *>(t.data)[i], t.dtype);
  case LLMC_DTYPE_I64: return double(static_cast<const int64_t *>(t.data)[i]);
  case LLMC_DTYPE_I32: return static_cast<const int32_t *>(t.data)[i];
  case LLMC_DTYPE_I8: return static_cast<const int8_t *>(t.data)[i];
  case LLMC_DTYPE_U8:
  case LLMC_DTYPE_BOOL: return static_cast<const uint8_t *>(t.data)[i];
  }
  return NAN;
}

void fillRandom(npy::Array &a, std::mt19937_64 &rng, int64_t intMax) {
  const size_t n = a.data.size() / npy::dtypeSize(a.dtype);
  std::uniform_real_distribution<float> real(-1.f, 1.f);
  std::uniform_int_distribution<int64_t> integer(0, std::max<int64_t>(intMax, 1) - 1);
  for (size_t i = 0; i < n; ++i) {
    switch (a.dtype) {
    case LLMC_DTYPE_F32: reinterpret_cast<float *>(a.data.data())[i] = real(rng); break;
    case LLMC_DTYPE_F64: reinterpret_cast<double *>(a.data.data())[i] = real(rng); break;
    case LLMC_DTYPE_F16:
    case LLMC_DTYPE_BF16: reinterpret_cast<uint16_t *>(a.data.data())[i] = npy::narrow16(real(rng), a.dtype); break;
    case LLMC_DTYPE_I64: reinterpret_cast<int64_t *>(a.data.data())[i] = integer(rng); break;
    case LLMC_DTYPE_I32: reinterpret_cast<int32_t *>(a.data.data())[i] = int32_t(integer(rng)); break;
    case LLMC_DTYPE_BOOL: a.data[i] = char(rng() & 1); break;
    default: a.data[i] = char(integer(rng)); break;
    }
  }
}

// `a`'s float32 values rounded to `to` (F16 or BF16), to nearest even.
void narrowInput(npy::Array &a, llmc_dtype to) {
  std::vector<char> narrow(a.data.size() / 2);
  for (size_t i = 0; i < narrow.size() / 2; ++i) {
    float v;
    std::memcpy(&v, a.data.data() + 4 * i, 4);
    const uint16_t bits = npy::narrow16(v, to);
    std::memcpy(narrow.data() + 2 * i, &bits, 2);
  }
  a.data = std::move(narrow);
  a.dtype = to;
}

// Compares an output with a reference; prints the errors and returns whether it is within tolerance.
bool compare(const std::string &name, const llmc_tensor &out, const std::string &refPath, const Options &o,
             bool &ok) {
  npy::Array ref;
  if (std::string err = npy::read(refPath, ref); !err.empty()) {
    fail(err);
    return false;
  }
  bool sameShape = int(ref.shape.size()) == out.rank;
  for (int d = 0; sameShape && d < out.rank; ++d)
    sameShape = ref.shape[d] == out.dims[d];
  if (!sameShape) {
    fail("output '" + name + "' has shape " + shapeStr(out) + " but the reference '" + refPath + "' differs");
    return false;
  }
  llmc_tensor r{ref.dtype, int32_t(ref.shape.size()), {}, ref.data.data()};
  double maxAbs = 0, maxRel = 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < numel(out); ++i) {
    double a = element(out, i), b = element(r, i);
    double diff = std::fabs(a - b);
    if (std::isnan(a) != std::isnan(b))
      diff = INFINITY;
    else if (std::isnan(a) || a == b) // (equal infinities too: a masked score is -inf on both sides)
      diff = 0;
    maxAbs = std::max(maxAbs, diff);
    if (b != 0)
      maxRel = std::max(maxRel, diff / std::fabs(b));
    if (diff > o.atol + o.rtol * std::fabs(b))
      ++bad;
  }
  std::printf("compare %s: max abs error %.3g, max rel error %.3g, %lld of %lld elements outside tolerance: %s\n",
              name.c_str(), maxAbs, maxRel, (long long)bad, (long long)numel(out), bad ? "MISMATCH" : "ok");
  ok = ok && bad == 0;
  return true;
}

// Time per kernel type over all runs, largest first.
void printProfile(llmc_context ctx, llmc_plan plan) {
  std::map<std::string, std::pair<double, int>> byKernel;
  double total = 0;
  for (int32_t i = 0; i < llmc_plan_kernel_count(plan); ++i) {
    const char *kernel = nullptr;
    double ms = 0;
    if (llmc_status s = llmc_context_kernel_time(ctx, i, &kernel, nullptr, &ms)) {
      llmc_status_free(s);
      return;
    }
    byKernel[kernel].first += ms;
    byKernel[kernel].second++;
    total += ms;
  }
  std::vector<std::pair<double, std::string>> sorted;
  for (const auto &[name, entry] : byKernel)
    sorted.emplace_back(entry.first, name);
  std::sort(sorted.rbegin(), sorted.rend());
  std::printf("profile (all runs): %.3f ms in kernels\n", total);
  for (const auto &[ms, name] : sorted)
    std::printf("  %-20s %5d launches %10.3f ms %5.1f%%\n", name.c_str(), byKernel[name].second, ms,
                total > 0 ? 100 * ms / total : 0);
}

int run(Options o) {
  llmc_plan plan = nullptr;
  if (check(llmc_plan_load(o.plan.c_str(), nullptr, &plan), "loading '" + o.plan + "'"))
    return 1;
  if (o.checkCuda) { // no device needed
    const bool ok = !check(llmc_plan_check_cuda(plan), "checking the plan for the CUDA executor");
    size_t weights = 0, activations = 0, other = 0;
    if (ok && llmc_plan_cuda_device_bytes(plan, &weights, &activations, &other))
      std::printf("the CUDA executor has a kernel for every op of the plan\n"
                  "a CUDA context of it holds %.1f MB: weights %.1f MB, activations %.1f MB (one arena), "
                  "workspaces and staging %.1f MB\n",
                  double(weights + activations + other) / 1e6, double(weights) / 1e6, double(activations) / 1e6,
                  double(other) / 1e6);
    else if (ok)
      std::printf("the CUDA executor has a kernel for every op of the plan\n");
    char graphs[1024];
    if (ok && llmc_plan_cuda_graph_report(plan, graphs, sizeof graphs))
      std::printf("%s\n", graphs);
    llmc_plan_release(plan);
    return ok ? 0 : 1;
  }
  if (!o.deviceGiven)
    o.device = static_cast<llmc_device>(llmc_plan_target(plan));
  llmc_context_options copts = llmcrun::contextOptions(o.device, o.threads, o.cuda);
  copts.collect_times = o.profile;
  llmc_context ctx = nullptr;
  int rc = 0;
  if (check(llmc_context_create(plan, &copts, &ctx), "creating a context")) {
    llmc_plan_release(plan);
    return 1;
  }
  if (o.device == LLMC_DEVICE_CUDA)
    std::printf("device memory: %.1f MB (weights, activations and workspaces, allocated once)\n",
                double(llmc_context_device_bytes(ctx)) / 1e6);
  if (!o.outputDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.outputDir, ec);
    if (ec) {
      llmc_context_release(ctx);
      llmc_plan_release(plan);
      return fail("cannot create '" + o.outputDir + "': " + ec.message());
    }
  }
  std::mt19937_64 rng(o.seed);
  std::map<std::string, bool> used;
  for (int32_t i = 0; i < llmc_plan_input_count(plan) && rc == 0; ++i) {
    const char *name = nullptr;
    llmc_tensor info;
    llmc_plan_input_info(plan, i, &name, &info);
    npy::Array a;
    auto given = o.inputs.find(name);
    if (given != o.inputs.end()) {
      used[name] = true;
      if (std::string err = npy::read(given->second, a); !err.empty()) {
        rc = fail(err);
        break;
      }
      if ((info.dtype == LLMC_DTYPE_BF16 || info.dtype == LLMC_DTYPE_F16) && a.dtype == LLMC_DTYPE_F32)
        narrowInput(a, info.dtype); // (NumPy has no bf16: float32 files are rounded to the input's type)
    } else if (o.random) {
      a.dtype = info.dtype;
      a.shape.assign(info.dims, info.dims + info.rank);
      if (std::string err = sizeDynamicDims(plan, i, name, o.dims, a.shape); !err.empty()) {
        rc = fail(err);
        break;
      }
      int64_t elements = 1;
      for (int64_t d : a.shape)
        elements *= d;
      a.data.resize(size_t(elements) * npy::dtypeSize(info.dtype));
      fillRandom(a, rng, o.intMax);
    } else {
      rc = fail(std::string("missing input '") + name + "' (" + npy::dtypeName(info.dtype) + "[" + shapeStr(info) +
                "]): pass --input " + name + "=FILE.npy, or --random");
      break;
    }
    llmc_tensor t{a.dtype, int32_t(a.shape.size()), {}, a.data.data()};
    if (a.shape.size() > LLMC_MAX_RANK) {
      rc = fail(std::string("input '") + name + "' has too many dimensions");
      break;
    }
    std::copy(a.shape.begin(), a.shape.end(), t.dims);
    if (check(llmc_context_set_input(ctx, i, &t), "cannot set input"))
      rc = 1;
  }
  for (const auto &[name, path] : o.inputs)
    if (rc == 0 && !used.count(name))
      rc = fail("the plan has no input named '" + name + "'");
  if (rc == 0) {
    auto start = std::chrono::steady_clock::now();
    if (check(llmc_context_run(ctx), "run"))
      rc = 1;
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (rc == 0)
      std::printf("latency: %.3f ms (first run, %d kernels)\n", ms, llmc_plan_kernel_count(plan));
  }
  bool ok = true;
  for (int32_t i = 0; i < llmc_plan_output_count(plan) && rc == 0; ++i) {
    const char *name = nullptr;
    llmc_tensor info, out;
    llmc_plan_output_info(plan, i, &name, &info);
    llmc_context_output(ctx, i, &out);
    if (!o.quiet) {
      std::printf("output %s: %s[%s] =", name, npy::dtypeName(out.dtype), shapeStr(out).c_str());
      for (int64_t k = 0; k < std::min<int64_t>(numel(out), 6); ++k)
        std::printf(" %.6g", element(out, k));
      std::printf("%s\n", numel(out) > 6 ? " ..." : "");
    }
    if (!o.outputDir.empty()) {
      std::string err = npy::write(o.outputDir + "/" + name + ".npy", out.dtype,
                                   std::vector<int64_t>(out.dims, out.dims + out.rank), out.data,
                                   size_t(numel(out)) * npy::dtypeSize(out.dtype));
      if (!err.empty())
        rc = fail(err);
    }
    auto cmp = o.compares.find(name);
    std::string ref = cmp != o.compares.end() ? cmp->second
                      : !o.compareDir.empty() ? o.compareDir + "/" + name + ".npy"
                                              : std::string();
    if (!ref.empty() && !compare(name, out, ref, o, ok))
      rc = 1;
  }
  for (const auto &[name, path] : o.compares) {
    bool found = false;
    for (int32_t i = 0; i < llmc_plan_output_count(plan); ++i) {
      const char *n = nullptr;
      llmc_tensor info;
      llmc_plan_output_info(plan, i, &n, &info);
      found = found || name == n;
    }
    if (!found && rc == 0)
      rc = fail("the plan has no output named '" + name + "'");
  }
  if (rc == 0 && !ok)
    rc = 2;
  if (rc == 0 && o.benchmark > 0) {
    for (int i = 0; i < o.warmup; ++i)
      llmc_status_free(llmc_context_run(ctx));
    std::vector<double> times;
    for (int i = 0; i < o.benchmark; ++i) {
      auto start = std::chrono::steady_clock::now();
      if (check(llmc_context_run(ctx), "run")) {
        rc = 1;
        break;
      }
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    if (!times.empty()) {
      std::sort(times.begin(), times.end());
      auto at = [&](double q) { return times[std::min(times.size() - 1, size_t(q * double(times.size() - 1) + 0.5))]; };
      std::printf("benchmark: %zu runs, median %.3f ms, p90 %.3f ms, min %.3f ms\n", times.size(), at(0.5), at(0.9),
                  times.front());
      if (o.device == LLMC_DEVICE_CUDA)
        std::printf("CUDA graphs: %zu captured (%s)\n", llmc_context_cuda_graph_count(ctx),
                    o.cuda.graphs ? "each run replays one" : "off: kernels launched one by one");
    }
  }
  if (rc == 0 && o.profile)
    printProfile(ctx, plan);
  llmc_context_release(ctx);
  llmc_plan_release(plan);
  return rc;
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::string(argv[1]) == "tokenize")
    return tokenizeMain(argc - 1, argv + 1);
  if (argc > 1 && std::string(argv[1]) == "generate")
    return generateMain(argc - 1, argv + 1);
  Options o;
  std::string err = parseArgs(argc, argv, o);
  if (err == "-")
    return 0;
  if (!err.empty())
    return fail(err);
  return run(o);
}

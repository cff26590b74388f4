// llmc: compiles an ONNX model into a plan file.
//
//   llmc model.onnx -o model.llmc --input-shape input_ids=1x16
//   llmc model.onnx -o model.llmc --input-shape batch=1 --max-shape seq=512
//
// Options for IR dumps and pass timing come from MLIR (--mlir-print-ir-after-all,
// --mlir-timing, ...); --emit=mlir writes the IR after the pipeline instead of a plan.
#include "Npy.h"
#include "OnnxImporter.h"
#include "Passes.h"
#include "PlanWriter.h"
#include "RewriteStats.h"
#include "llmc/Dialect/LlmcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <regex>

#ifdef LLMC_HAVE_NVRTC
#include "FusedElementwiseCuda.h"
#include "Nvrtc.h"
#endif
#include <sys/resource.h>

namespace cl = llvm::cl;

static cl::OptionCategory category("llmc options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"), cl::cat(category));
static cl::opt<bool> listOnnxOps("list-onnx-ops", cl::desc("Print the ONNX op types the importer supports and exit"),
                                 cl::cat(category));
static cl::opt<std::string> outputFile("o", cl::desc("Output file (default: the model's name with .llmc)"),
                                       cl::value_desc("file"), cl::cat(category));
static cl::list<std::string> inputShapes("input-shape",
                                         cl::desc("Static input shapes: NAME=DIMS (input_ids=1x16) or "
                                                  "SYMBOL=N (seq=16); repeat or separate with commas"),
                                         cl::value_desc("spec"), cl::cat(category));
static cl::list<std::string> maxShapes("max-shape",
                                       cl::desc("Keep symbolic dimensions dynamic up to a bound: SYMBOL=N "
                                                "(seq=512,batch=4); one plan then serves every size from 1 to N"),
                                       cl::value_desc("spec"), cl::cat(category));
static cl::opt<std::string> tokenizerFile("tokenizer",
                                          cl::desc("Store this Hugging Face tokenizer.json (byte-level BPE) in the plan"),
                                          cl::value_desc("tokenizer.json"), cl::cat(category));
static cl::list<std::string> freezeInputs("freeze-input",
                                          cl::desc("Bake a graph input into the plan as a constant: NAME=FILE.npy "
                                                   "(for inputs that decide shapes, such as axes or a target shape)"),
                                          cl::value_desc("spec"), cl::cat(category));
enum class Emit { Plan, Mlir, Import };
static cl::opt<Emit> emit("emit", cl::desc("What to write"), cl::init(Emit::Plan),
                          cl::values(clEnumValN(Emit::Plan, "plan", "the plan file (default)"),
                                     clEnumValN(Emit::Mlir, "mlir", "the llmc IR after the pipeline"),
                                     clEnumValN(Emit::Import, "import", "the llmc IR straight from the importer")),
                          cl::cat(category));
static cl::opt<bool> disableFusion("disable-fusion",
                                   cl::desc("Skip the raising and fusion passes (to compare with the fused plan)"),
                                   cl::cat(category));
static cl::opt<bool> disableMerging("disable-merging",
                                    cl::desc("Skip the weight-merging passes (to compare with the merged plan)"),
                                    cl::cat(category));
static cl::opt<std::string> mlaFactors("mla-factors",
                                       cl::desc("DeepSeek MLA absorption: keep W_UK/W_UV as per-head factors "
                                                "('separate'), multiply them into the projections ('multiplied'), "
                                                "or choose by the cost estimate ('auto', the default)"),
                                       cl::init("auto"), cl::value_desc("auto|separate|multiplied"), cl::cat(category));
static cl::list<std::string> skipPasses("skip-pass",
                                        cl::desc("Leave one optimization pass out of the pipeline, to measure what it "
                                                 "does (llmc-absorb-mla, llmc-merge-parallel-linears, ...); repeat or "
                                                 "separate with commas"),
                                        cl::value_desc("name"), cl::CommaSeparated, cl::cat(category));
static cl::list<std::string> lastPosition("last-position",
                                          cl::desc("Return only the last sequence position of these [batch, seq, ...] "
                                                   "outputs ([batch, 1, ...]) and compute no more of them: a "
                                                   "decoder's logits, of which generation reads the last row"),
                                          cl::value_desc("output"), cl::CommaSeparated, cl::cat(category));
static cl::opt<std::string> target("target", cl::desc("The device the plan is built for: cpu (default) or cuda "
                                                     "(the fused regions are compiled for --cuda-arch and stored in "
                                                     "the plan; any plan also runs on the CPU)"),
                                   cl::init("cpu"), cl::value_desc("cpu|cuda"), cl::cat(category));
static cl::list<std::string> cudaArchs("cuda-arch",
                                       cl::desc("CUDA architectures of a --target cuda plan, preferred first "
                                                "(default sm_90a,sm_80)"),
                                       cl::value_desc("sm_XY"), cl::CommaSeparated, cl::cat(category));
static cl::opt<std::string> precision("precision",
                                      cl::desc("Activations and weights on the GPU: f32 (default), tf32 (f32 with "
                                               "the GEMMs on TF32 tensor cores), f16 or bf16 (16-bit storage, f32 "
                                               "accumulation; the plan stores those weights in 16 bits, and the CPU "
                                               "executor widens them to f32)"),
                                      cl::init("f32"), cl::value_desc("f32|tf32|f16|bf16"), cl::cat(category));
static cl::opt<bool> randomWeights("random-weights",
                                   cl::desc("Leave the float weights of 1024 elements or more out of the plan; the "
                                            "runtime fills them with seeded random values at load (benchmarks of "
                                            "large models without their weights; the outputs mean nothing)"),
                                   cl::cat(category));
static cl::opt<uint64_t> randomSeed("random-seed", cl::desc("The seed of --random-weights (default 0)"), cl::init(0),
                                    cl::value_desc("N"), cl::cat(category));
static cl::opt<bool> printStats("print-stats", cl::desc("Print op counts after import and after the pipeline, "
                                                        "what each pass rewrote, and the plan's kernel count"),
                                cl::cat(category));

static std::map<std::string, int> countOps(mlir::ModuleOp module, int &total) {
  std::map<std::string, int> counts;
  total = 0;
  module.walk([&](mlir::Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "llmc") {
      ++counts[op->getName().getStringRef().str()];
      ++total;
    }
  });
  return counts;
}

static void printCounts(const char *title, mlir::ModuleOp module) {
  int total;
  auto counts = countOps(module, total);
  llvm::errs() << title << ": " << total << " ops\n";
  for (const auto &[name, n] : counts)
    llvm::errs() << "  " << name << " " << n << "\n";
}

static int fail(const std::string &message) {
  llvm::errs() << "llmc: error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // Passes first: --mlir-print-ir-after=llmc-... names them, and the pass manager's options take
  // the names registered when they are made.
  llmc::registerAllPasses();
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  cl::AddExtraVersionPrinter([](llvm::raw_ostream &os) { os << "llmc " LLMC_VERSION_STRING "\n"; });
  // Weights never reach IR dumps: elide large constants and resource blobs unless the user asks
  // otherwise (a later occurrence of the same option wins).
  std::vector<const char *> args(argv, argv + argc);
  args.insert(args.begin() + 1, {"--mlir-elide-elementsattrs-if-larger=16", "--mlir-elide-resource-strings-if-larger=64"});
  // --help lists llmc's own options; --help-hidden also the MLIR and LLVM ones (IR dumps, timing).
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(int(args.size()), args.data(),
                              "llmc: compile an ONNX model into an llmc plan\n\n"
                              "  --help-hidden also lists MLIR's debugging options, e.g.\n"
                              "  --mlir-print-ir-after=llmc-raise-attention or --mlir-timing\n");

  if (listOnnxOps) {
    for (const std::string &op : llmc::supportedOnnxOps())
      llvm::outs() << op << "\n";
    return 0;
  }
  if (inputFile.empty())
    return fail("no input model given (see --help)");

  llmc::ImportOptions options;
  for (const std::string &spec : inputShapes)
    if (std::string err = llmc::parseInputShapes(spec, options); !err.empty())
      return fail(err);

  for (const std::string &spec : maxShapes)
    if (std::string err = llmc::parseMaxShapes(spec, options); !err.empty())
      return fail(err);

  for (const std::string &spec : freezeInputs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail("--freeze-input expects NAME=FILE.npy, got '" + spec + "'");
    llmc::npy::Array array;
    if (std::string err = llmc::npy::read(spec.substr(eq + 1), array); !err.empty())
      return fail(err);
    llmc::FrozenInput &f = options.frozenInputs[spec.substr(0, eq)];
    f.dtype = int(array.dtype);
    f.shape = array.shape;
    f.bytes = std::move(array.data);
  }

  mlir::MLIRContext context;
  context.loadDialect<llmc::LlmcDialect, mlir::func::FuncDialect>();
  // Diagnostics (e.g. from passes) print as one line each, with the node name as location.
  mlir::ScopedDiagnosticHandler handler(&context, [](mlir::Diagnostic &diag) {
    std::string where;
    if (auto name = mlir::dyn_cast<mlir::NameLoc>(diag.getLocation()))
      where = "node '" + name.getName().str() + "': ";
    llvm::errs() << "llmc: " << (diag.getSeverity() == mlir::DiagnosticSeverity::Error ? "error: " : "note: ")
                 << where << diag.str() << "\n";
    return mlir::success();
  });

  std::string error;
  llmc::ImportStats importStats;
  mlir::OwningOpRef<mlir::ModuleOp> module = llmc::importOnnxFile(context, inputFile, options, error, &importStats);
  if (!module)
    return fail(error);
  if (printStats) {
    int nodes = 0;
    for (const auto &[type, n] : importStats.nodesByOpType)
      nodes += n;
    llvm::errs() << "onnx graph (opset " << importStats.opset << "): " << nodes << " nodes, "
                 << importStats.initializers << " initializers\n";
    for (const auto &[type, n] : importStats.nodesByOpType)
      llvm::errs() << "  " << type << " " << n << "\n";
    printCounts("after import (constant operands folded as nodes are imported)", *module);
  }

  mlir::OpPrintingFlags flags; // from the --mlir-elide-* options set above
  std::string outPath = outputFile;
  auto writeIR = [&](mlir::ModuleOp m) -> int {
    if (outPath.empty() || outPath == "-") {
      m->print(llvm::outs(), flags);
      return 0;
    }
    std::error_code ec;
    llvm::raw_fd_ostream os(outPath, ec);
    if (ec)
      return fail("cannot write '" + outPath + "': " + ec.message());
    m->print(os, flags);
    return 0;
  };
  if (emit == Emit::Import)
    return writeIR(*module);

  mlir::PassManager pm(&context);
  if (mlir::failed(mlir::applyPassManagerCLOptions(pm)))
    return fail("bad pass manager options");
  mlir::applyDefaultTimingPassManagerCLOptions(pm);
  llmc::PipelineOptions pipeline;
  pipeline.fusion = !disableFusion;
  pipeline.merging = !disableMerging;
  if (target != "cpu" && target != "cuda")
    return fail("--target must be cpu or cuda, not '" + target + "'");
  for (const std::string &arch : cudaArchs) {
    static const std::regex archForm("sm_([0-9]+)a?");
    std::smatch m;
    if (!std::regex_match(arch, m, archForm) || std::stoi(m[1]) < 80)
      return fail("--cuda-arch: '" + arch + "' is not an architecture from sm_80 on (sm_80, sm_86, sm_90a, ...)");
  }
  if (!cudaArchs.empty() && target != "cuda")
    return fail("--cuda-arch needs --target cuda");
  const llmc::rt::DType planPrecision = llmc::rt::dtypeFromName(precision == "tf32" ? std::string("f32") : std::string(precision));
  if (planPrecision != llmc::rt::DType::F32 && planPrecision != llmc::rt::DType::F16 &&
      planPrecision != llmc::rt::DType::BF16)
    return fail("--precision must be f32, tf32, f16 or bf16, not '" + precision + "'");
  if (mlaFactors != "auto" && mlaFactors != "separate" && mlaFactors != "multiplied")
    return fail("--mla-factors must be auto, separate or multiplied, not '" + mlaFactors + "'");
  pipeline.mlaFactors = mlaFactors;
  const std::vector<std::string> optional = llmc::optionalPassNames();
  for (const std::string &name : skipPasses) {
    if (!llvm::is_contained(optional, name))
      return fail("--skip-pass: '" + name + "' is not an optional pass; these are: " + llvm::join(optional, ", "));
    pipeline.skipPasses.push_back(name);
  }
  pipeline.lastPosition.assign(lastPosition.begin(), lastPosition.end());
  pipeline.linearWeightsByOutput = target == "cuda";
  llmc::buildDefaultPipeline(pm, pipeline);

  if (mlir::failed(pm.run(*module)))
    return 1; // the diagnostic handler printed why
  if (printStats) {
    for (const llmc::RewriteCount &c : llmc::takeRewriteCounts())
      llvm::errs() << c.pass << ": " << c.count << " " << c.what << "\n";
    for (const std::string &note : llmc::takeRewriteNotes())
      llvm::errs() << note << "\n";
    printCounts("after the pipeline", *module);
  }
  if (emit == Emit::Mlir)
    return writeIR(*module);

  mlir::PassManager preparation(&context);
  llmc::buildPlanPreparation(preparation);
  if (mlir::failed(preparation.run(*module)))
    return 1;
  if (outPath.empty()) {
    llvm::StringRef in(inputFile);
    in.consume_back(".onnx");
    outPath = in.str() + ".llmc";
  }
  llmc::TokenizerData tokenizer;
  if (!tokenizerFile.empty())
    if (std::string err = llmc::readTokenizerJson(tokenizerFile, tokenizer); !err.empty())
      return fail(err);
  llmc::PlanStats stats;
  llmc::RandomWeights random;
  random.seed = randomSeed;
  llmc::CudaTarget cuda;
  if (target == "cuda") {
#ifdef LLMC_HAVE_NVRTC
    cuda.archs = cudaArchs.empty() ? std::vector<std::string>{"sm_90a", "sm_80"}
                                   : std::vector<std::string>(cudaArchs.begin(), cudaArchs.end());
    cuda.compileFused = [](const llmc::rt::AttrList &attrs, const std::vector<llmc::rt::DType> &inputs,
                           const std::vector<llmc::rt::DType> &outputs, const std::string &name, const std::string &arch,
                           std::vector<char> &cubin) -> std::string {
      std::vector<llmc::rt::fused::Instruction> program;
      std::vector<int> results;
      if (std::string err = llmc::rt::fused::parseProgram(attrs, int(inputs.size()), int(outputs.size()), program, results);
          !err.empty())
        return err;
      std::string error;
      const std::string source = llmc::rt::cuda::fusedElementwiseSource(program, results, inputs, outputs, name, error);
      return error.empty() ? llmc::rt::cuda::compileToCubin(source, name, arch, cubin) : error;
    };
#else
    return fail("this llmc was built without the CUDA toolkit, so it cannot build --target cuda plans");
#endif
  }
  llmc::PlanOptions planOptions;
  planOptions.tokenizer = tokenizerFile.empty() ? nullptr : &tokenizer;
  planOptions.cuda = target == "cuda" ? &cuda : nullptr;
  planOptions.random = randomWeights ? &random : nullptr;
  planOptions.precision = planPrecision;
  planOptions.tf32 = precision == "tf32";
  if (std::string err = llmc::writePlan(*module, outPath, planOptions, &stats); !err.empty())
    return fail(err);
  if (printStats) {
    llvm::errs() << "plan: " << stats.kernels << " kernels, " << stats.weights << " weights (" << stats.weightBytes
                 << " bytes), file " << stats.fileBytes << " bytes\n";
    if (precision == "tf32")
      llvm::errs() << "precision: tf32 (f32 values; the GPU's GEMMs on TF32 tensor cores)\n";
    if (planPrecision != llmc::rt::DType::F32)
      llvm::errs() << "precision: " << precision << " (" << stats.reducedValues
                   << " values kept in 16 bits on the GPU, the rest f32)\n";
    if (target == "cuda")
      llvm::errs() << "cuda: " << stats.cudaKernels << " fused kernels compiled with NVRTC (" << cuda.archs.size()
                   << " architectures: " << llvm::join(cuda.archs, ", ") << ")\n";
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    const double peak = double(usage.ru_maxrss) * 1024.0;
    llvm::errs() << llvm::format("peak memory: %.1f MB (%.2fx the weight bytes)\n", peak / 1e6,
                                 stats.weightBytes ? peak / double(stats.weightBytes) : 0.0);
  }
  return 0;
}

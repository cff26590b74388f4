// `llmc-run generate`: text generation with a past/present decoder plan, streaming tokens.
#include "Generate.h"

#include "Common.h"

#include "Npy.h"
#include "llmc/llmc.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char *kUsage = R"(usage: llmc-run generate PLAN (--prompt TEXT | --prompt-ids 1,2,3) [options]

  --max-tokens N           tokens to generate (default 64)
                           (several --prompt or --prompt-ids: one batch; each result on its own line)
  --temperature T          0 (default): greedy; otherwise sample
  --top-k K, --top-p P     sampling filters (default off)
  --repetition-penalty R   > 1 penalizes tokens already in the context (default 1)
  --seed S                 seed for sampling (default 0)
  --chat                   wrap the prompt as a user turn (<|im_start|>user ... <|im_start|>assistant)
  --ids                    print token ids instead of text
  --ignore-eos             do not stop at end-of-turn tokens
  --logits-dir DIR         write the logits of each step to DIR/step_K.npy (K = 0 after the prompt)
  --threads N              threads for GEMMs
  --device cpu|cuda        where to run (cuda: work in progress, see docs/cuda.md)
  --no-cuda-graphs         CUDA: launch every kernel of each step instead of replaying a graph
  --no-cuda-gemv           CUDA: every linear on cuBLASLt, decode steps' too (for comparison)
  --no-cuda-overlap        CUDA: no programmatic dependent launch of the decode kernels (for comparison)
  --decode-ahead on|off    greedy decoding starts each step before the host has the token before it
                           (default: on with CUDA, off on the CPU; off waits for each token)
  --repeat N               generate N times from an empty cache, timing each (benchmarks: the
                           first includes one-off work such as capturing CUDA graphs)
)";

using llmcrun::fail;
using llmcrun::ok;

// Bytes of `text` that form complete UTF-8 characters: a token may end inside a character.
size_t completeUtf8(const std::string &text) {
  size_t end = text.size();
  for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    const unsigned char c = static_cast<unsigned char>(text[text.size() - back]);
    if ((c & 0xC0) == 0x80)
      continue; // a continuation byte: look further back for the lead byte
    const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (need > back)
      end = text.size() - back;
    break;
  }
  return end;
}

struct Args {
  std::string plan, prompt, logitsDir;
  std::vector<int32_t> promptIds;
  std::vector<std::string> prompts;              // every --prompt (more than one: a batch)
  std::vector<std::vector<int32_t>> promptIdLists; // every --prompt-ids
  bool haveIds = false, chat = false, printIds = false, ignoreEos = false;
  llmcrun::CudaFlags cuda;
  int maxTokens = 64, threads = 0, repeat = 1;
  int decodeAhead = -1; // llmc_context_options.decode_ahead: -1 the library's choice
  llmc_device device = LLMC_DEVICE_CPU;
  llmc_sampling sampling;
};

llmc_context_options contextOptions(const Args &a) {
  llmc_context_options options = llmcrun::contextOptions(a.device, a.threads, a.cuda);
  options.decode_ahead = a.decodeAhead;
  return options;
}

std::string parse(int argc, char **argv, Args &a) {
  llmc_sampling_init(&a.sampling);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
    try {
      if (arg == "--prompt") {
        a.prompt = value();
        a.prompts.push_back(a.prompt);
      }
      else if (arg == "--prompt-ids") {
        a.haveIds = true;
        a.promptIds.clear();
        std::string list = value();
        for (size_t start = 0; start < list.size();) {
          size_t comma = list.find(',', start);
          a.promptIds.push_back(int32_t(std::stol(list.substr(start, comma - start))));
          start = comma == std::string::npos ? list.size() : comma + 1;
        }
        a.promptIdLists.push_back(a.promptIds);
        if (a.promptIdLists.size() > 1)
          a.promptIds = a.promptIdLists.front();
      } else if (arg == "--max-tokens")
        a.maxTokens = std::stoi(value());
      else if (arg == "--temperature")
        a.sampling.temperature = std::stof(value());
      else if (arg == "--top-k")
        a.sampling.top_k = std::stoi(value());
      else if (arg == "--top-p")
        a.sampling.top_p = std::stof(value());
      else if (arg == "--repetition-penalty")
        a.sampling.repetition_penalty = std::stof(value());
      else if (arg == "--seed")
        a.sampling.seed = std::stoull(value());
      else if (arg == "--threads")
        a.threads = std::stoi(value());
      else if (arg == "--repeat") {
        a.repeat = std::stoi(value());
        if (a.repeat < 1)
          throw std::invalid_argument("--repeat");
      }
      else if (arg == "--device") {
        const std::string d = value();
        if (d != "cpu" && d != "cuda")
          throw std::invalid_argument("--device must be cpu or cuda");
        a.device = d == "cuda" ? LLMC_DEVICE_CUDA : LLMC_DEVICE_CPU;
      }
      else if (arg == "--logits-dir")
        a.logitsDir = value();
      else if (arg == "--chat")
        a.chat = true;
      else if (arg == "--ids")
        a.printIds = true;
      else if (arg == "--ignore-eos")
        a.ignoreEos = true;
      else if (a.cuda.take(arg))
        continue;
      else if (arg == "--decode-ahead") {
        const std::string v = value();
        if (v != "on" && v != "off")
          throw std::invalid_argument("--decode-ahead must be on or off");
        a.decodeAhead = v == "on";
      }
      else if (arg == "--help" || arg == "-h")
        return "-";
      else if (a.plan.empty() && !arg.empty() && arg[0] != '-')
        a.plan = arg;
      else
        return "unknown or incomplete option '" + arg + "'";
    } catch (const std::exception &) {
      return "bad value for " + arg;
    }
  }
  if (a.plan.empty())
    return "no plan given";
  if (!a.haveIds && a.prompt.empty())
    return "give --prompt TEXT or --prompt-ids 1,2,3";
  return {};
}

// Token ids of the special tokens that end a turn, where the tokenizer has them.
std::vector<int32_t> stopTokens(llmc_plan plan) {
  std::vector<int32_t> stops;
  for (const char *s : {"<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "</s>"}) {
    int32_t id = -1, n = 0;
    llmc_status st = llmc_tokenize(plan, s, std::strlen(s), &id, 1, &n);
    if (!st && n == 1)
      stops.push_back(id);
    llmc_status_free(st);
  }
  return stops;
}

// What a generation on CUDA captured, on stderr (cuda_vs_cpu.py and gpu_benchmark.py read it).
void printCudaGraphs(llmc_generator gen) {
  std::fprintf(stderr, "CUDA graphs captured: %zu\nnodes of the decode steps' graph (else of the last captured): %zu\n",
               llmc_context_cuda_graph_count(llmc_generator_context(gen)),
               llmc_context_cuda_graph_nodes(llmc_generator_context(gen)));
}

} // namespace

// Several prompts at once: one generator with a batch, greedy or sampled, each sequence stopping at
// its end-of-turn token; the results are printed one per line when all are done.
// The token ids of `prompt`, wrapped as a user turn with --chat.
bool tokenizePrompt(llmc_plan plan, const Args &a, const std::string &prompt, std::vector<int32_t> &ids,
                    std::string &error) {
  const std::string wrapped = a.chat ? "<|im_start|>user\n" + prompt + "<|im_end|>\n<|im_start|>assistant\n" : prompt;
  return llmcrun::encode(plan, wrapped, ids, error);
}

int generateBatch(llmc_plan plan, const Args &a, const std::vector<std::vector<int32_t>> &prompts, bool text) {
  std::string error;
  const llmc_context_options options = contextOptions(a);
  llmc_generator gen = nullptr;
  if (!ok(llmc_generator_create_batch(plan, &options, int32_t(prompts.size()), &gen), error))
    return fail(error);
  const std::vector<int32_t> stops = text && !a.ignoreEos ? stopTokens(plan) : std::vector<int32_t>();
  const size_t B = prompts.size();
  std::vector<const int32_t *> lists(B);
  std::vector<int32_t> counts(B), tokens(B);
  for (size_t b = 0; b < B; ++b) {
    lists[b] = prompts[b].data();
    counts[b] = int32_t(prompts[b].size());
  }
  std::vector<std::vector<int32_t>> generated(B);
  std::vector<bool> done(B, false);
  int rc = 0;
  if (!ok(llmc_generator_feed_batch(gen, lists.data(), counts.data()), error))
    rc = fail(error);
  for (int step = 0; rc == 0 && step < a.maxTokens; ++step) {
    if (!ok(llmc_generator_sample_batch(gen, &a.sampling, tokens.data()), error)) {
      rc = fail(error);
      break;
    }
    bool all = true;
    for (size_t b = 0; b < B; ++b) {
      counts[b] = 0;
      if (done[b])
        continue;
      if (std::find(stops.begin(), stops.end(), tokens[b]) != stops.end()) {
        done[b] = true;
        continue;
      }
      generated[b].push_back(tokens[b]);
      lists[b] = &tokens[b];
      counts[b] = 1;
      all = false;
    }
    if (all || step + 1 == a.maxTokens)
      break;
    if (llmc_generator_length(gen) >= llmc_generator_capacity(gen)) {
      std::fprintf(stderr, "llmc-run: note: the context is full (%d slots); generation stops here\n",
                   llmc_generator_capacity(gen));
      break;
    }
    if (!ok(llmc_generator_feed_batch(gen, lists.data(), counts.data()), error))
      rc = fail(error);
  }
  for (size_t b = 0; rc == 0 && b < B; ++b) {
    if (a.printIds || !text) {
      for (size_t i = 0; i < generated[b].size(); ++i)
        std::printf(i ? " %d" : "%d", generated[b][i]);
    } else {
      std::string out, error;
      llmcrun::decode(plan, generated[b], out, error); // the ids came from the model: in the vocabulary
      std::printf("%s", out.c_str());
    }
    std::printf("\n");
  }
  if (rc == 0 && a.device == LLMC_DEVICE_CUDA)
    printCudaGraphs(gen);
  llmc_generator_release(gen);
  return rc;
}

int generateMain(int argc, char **argv) {
  Args a;
  if (std::string err = parse(argc, argv, a); !err.empty()) {
    if (err == "-") {
      std::printf("%s", kUsage);
      return 0;
    }
    return fail(err + " (see llmc-run generate --help)");
  }
  std::string error;
  llmc_plan plan = nullptr;
  if (!ok(llmc_plan_load(a.plan.c_str(), nullptr, &plan), error))
    return fail("loading '" + a.plan + "': " + error);
  const bool text = llmc_plan_has_tokenizer(plan);
  if (a.prompts.size() > 1 || a.promptIdLists.size() > 1) { // a batch
    std::vector<std::vector<int32_t>> prompts = a.promptIdLists;
    for (const std::string &p : a.haveIds ? std::vector<std::string>() : a.prompts) {
      if (!text) {
        llmc_plan_release(plan);
        return fail("the plan has no tokenizer (compile it with llmc --tokenizer tokenizer.json, or give --prompt-ids)");
      }
      prompts.emplace_back();
      tokenizePrompt(plan, a, p, prompts.back(), error);
    }
    const int rc = generateBatch(plan, a, prompts, text);
    llmc_plan_release(plan);
    return rc;
  }
  std::vector<int32_t> prompt = a.promptIds;
  if (!a.haveIds) {
    if (!text) {
      llmc_plan_release(plan);
      return fail("the plan has no tokenizer (compile it with llmc --tokenizer tokenizer.json, or give --prompt-ids)");
    }
    if (!tokenizePrompt(plan, a, a.prompt, prompt, error)) {
      llmc_plan_release(plan);
      return fail(error);
    }
  }
  const llmc_context_options options = contextOptions(a);
  llmc_generator gen = nullptr;
  if (!ok(llmc_generator_create(plan, &options, &gen), error)) {
    llmc_plan_release(plan);
    return fail(error);
  }
  const std::vector<int32_t> stops = text && !a.ignoreEos ? stopTokens(plan) : std::vector<int32_t>();
  auto saveLogits = [&](int step) {
    if (a.logitsDir.empty())
      return;
    const float *logits = nullptr;
    int32_t vocab = 0;
    llmc_status_free(llmc_generator_logits(gen, &logits, &vocab));
    if (std::string err = llmc::npy::write(a.logitsDir + "/step_" + std::to_string(step) + ".npy", LLMC_DTYPE_F32,
                                           {vocab}, logits, sizeof(float) * size_t(vocab));
        !err.empty())
      std::fprintf(stderr, "llmc-run: warning: %s\n", err.c_str());
  };

  using Clock = std::chrono::steady_clock;
  // Streams through llmc_generator_generate's callback: logits, the first token's time, the text.
  struct Stream {
    const Args &a;
    llmc_plan plan;
    bool text, quiet; // quiet: a --repeat run before the last prints nothing
    std::function<void(int)> saveLogits;
    Clock::time_point start, decodeStart;
    double firstTokenMs = 0;
    std::vector<int32_t> generated;
    std::string pending; // decoded bytes not printed yet: a token may end inside a character
  };
  auto onToken = [](int32_t token, void *user) -> int {
    Stream &st = *static_cast<Stream *>(user);
    if (st.generated.empty()) {
      st.firstTokenMs = std::chrono::duration<double, std::milli>(Clock::now() - st.start).count();
      st.decodeStart = Clock::now();
    }
    st.generated.push_back(token);
    if (st.quiet)
      return 0;
    if (st.a.printIds || !st.text) {
      std::printf(st.generated.size() > 1 ? " %d" : "%d", token);
    } else { // print what the new token completes (a token's text is its bytes, so one at a time)
      std::string piece, error;
      llmcrun::decode(st.plan, {token}, piece, error); // sampled from the logits: in the vocabulary
      st.pending += piece;
      const size_t ready = completeUtf8(st.pending);
      std::fwrite(st.pending.data(), 1, ready, stdout);
      st.pending.erase(0, ready);
    }
    std::fflush(stdout);
    st.saveLogits(int(st.generated.size()) - 1); // the logits this token was drawn from (not fed yet)
    return 0;
  };
  int rc = 0;
  // --repeat N: the same generation N times from an empty cache; the timings of each are printed
  // (the first includes one-off work such as capturing CUDA graphs), the tokens of the last.
  for (int repeat = 0; rc == 0 && repeat < a.repeat; ++repeat) {
    const bool last = repeat + 1 == a.repeat;
    llmc_generator_reset(gen);
    const auto start = Clock::now();
    if (!ok(llmc_generator_feed(gen, prompt.data(), int32_t(prompt.size())), error))
      rc = fail(error);
    const double prefillMs = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    Stream stream{a, plan, text, !last, saveLogits, start, Clock::now(), 0, {}, {}};
    int32_t count = 0;
    if (rc == 0 && !ok(llmc_generator_generate(gen, &a.sampling, a.maxTokens, stops.data(), int32_t(stops.size()),
                                               onToken, &stream, nullptr, &count),
                       error))
      rc = fail(error);
    if (last && rc == 0 && count < a.maxTokens && llmc_generator_length(gen) >= llmc_generator_capacity(gen))
      std::fprintf(stderr, "\nllmc-run: note: the context is full (%d tokens); generation stops here\n",
                   llmc_generator_capacity(gen));
    const double decodeMs = std::chrono::duration<double, std::milli>(Clock::now() - stream.decodeStart).count();
    if (last) {
      std::printf("\n");
      std::fflush(stdout); // before the timings on stderr
    }
    const std::vector<int32_t> &generated = stream.generated;
    if (rc == 0)
      std::fprintf(stderr,
                   "prompt: %zu tokens in %.1f ms (%.1f tokens/s); first token after %.1f ms; %zu tokens generated, "
                   "%.2f ms per output token\n",
                   prompt.size(), prefillMs, prefillMs > 0 ? 1000.0 * double(prompt.size()) / prefillMs : 0.0,
                   stream.firstTokenMs, generated.size(),
                   generated.size() > 1 ? decodeMs / double(generated.size() - 1) : 0.0);
  }
  if (rc == 0 && a.device == LLMC_DEVICE_CUDA) {
    std::fprintf(stderr, "device memory: %.1f MB (weights, activations, KV cache, workspaces; allocated once); ",
                 double(llmc_context_device_bytes(llmc_generator_context(gen))) / 1e6);
    printCudaGraphs(gen);
  }
  llmc_generator_release(gen);
  llmc_plan_release(plan);
  return rc;
}

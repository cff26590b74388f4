// libllmc_kernel_trace.so: where a program's GPU time goes, kernel by kernel, on a machine without
// Nsight Systems (the GPU machine lent to us has none). Preloaded into any CUDA program
// (LD_PRELOAD), it records every kernel's start and end through CUPTI's activity API, CUDA
// graphs' kernels included, and prints a summary to stderr when the program exits: the kernels'
// total time by name and, for each graph that takes a twentieth of that time or more (a
// generator's decode step, replayed; its prompt, launched once), what one replay costs: its span,
// the time some kernel runs, the gaps, and its kernels in order of time;
// and the CUDA runtime calls the host made (how long each took, and how long the host spent
// between one replay's synchronisation and the next replay's launch: its own work per step).
// tools/gpu-check.sh profile runs the benchmark's generation under it.
#include <cupti.h>

#include <cxxabi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Kernel {
  uint64_t start, end, graphNode;
  uint32_t graph;
  std::string name;
};

struct ApiCall {
  uint64_t start, end;
  std::string name;
};

std::mutex gMutex;
std::vector<Kernel> gKernels;
std::vector<ApiCall> gCalls;

// A kernel's name without its namespaces' noise, cut to fit a line.
std::string readable(const char *mangled) {
  int status = 0;
  char *plain = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && plain ? plain : mangled;
  std::free(plain);
  for (const std::string noise : {"llmc::rt::cuda::", "(anonymous namespace)::", "__nv_bfloat16"})
    for (size_t at; (at = name.find(noise)) != std::string::npos;)
      name.replace(at, noise.size(), noise == "__nv_bfloat16" ? "bf16" : "");
  if (const size_t args = name.find('('); args != std::string::npos)
    name.resize(args);
  return name.size() > 90 ? name.substr(0, 87) + "..." : name;
}

constexpr size_t kBufferBytes = 8u << 20;

void CUPTIAPI bufferRequested(uint8_t **buffer, size_t *size, size_t *maxRecords) {
  *buffer = static_cast<uint8_t *>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *maxRecords = 0;
}

void CUPTIAPI bufferCompleted(CUcontext, uint32_t, uint8_t *buffer, size_t, size_t validSize) {
  CUpti_Activity *record = nullptr;
  std::lock_guard<std::mutex> lock(gMutex);
  while (cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
      const auto *call = reinterpret_cast<const CUpti_ActivityAPI *>(record);
      const char *name = nullptr;
      cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, call->cbid, &name);
      gCalls.push_back({call->start, call->end, name ? name : "?"});
      continue;
    }
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    const auto *k = reinterpret_cast<const CUpti_ActivityKernel10 *>(record);
    gKernels.push_back({k->start, k->end, k->graphNodeId, k->graphId, readable(k->name)});
  }
  std::free(buffer);
}

struct Totals {
  double ns = 0;
  size_t calls = 0;
};

void printTable(const std::map<std::string, Totals> &byName, double per, const char *unit) {
  std::vector<std::pair<std::string, Totals>> rows(byName.begin(), byName.end());
  std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) { return a.second.ns > b.second.ns; });
  double all = 0;
  for (const auto &row : rows)
    all += row.second.ns;
  for (const auto &row : rows)
    std::fprintf(stderr, "  %5.1f%% %10.2f %s %7.1f calls %8.2f us each  %s\n", 100.0 * row.second.ns / all,
                 row.second.ns / per / 1e3, unit, double(row.second.calls) / per,
                 row.second.ns / double(row.second.calls) / 1e3, row.first.c_str());
}

// The replays of graph `graph` (its kernels in order of start; a replay begins where the node that
// starts the first one comes again): span, busy time and gaps per replay, and its kernels.
void printGraph(uint32_t graph) {
  std::vector<const Kernel *> nodes;
  for (const Kernel &k : gKernels)
    if (k.graph == graph)
      nodes.push_back(&k);
  std::sort(nodes.begin(), nodes.end(), [](const Kernel *a, const Kernel *b) { return a->start < b->start; });
  std::vector<size_t> replayStarts;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i]->graphNode == nodes[0]->graphNode)
      replayStarts.push_back(i);
  replayStarts.push_back(nodes.size());
  const size_t replays = replayStarts.size() - 1;
  // The first replay warms up: left out where there are more (a decode step's graph; a prompt's
  // is launched once).
  const size_t skip = replays >= 3 ? 1 : 0;
  double span = 0, busy = 0, between = 0;
  std::map<std::string, Totals> byName;
  for (size_t r = skip; r < replays; ++r) {
    const size_t first = replayStarts[r], last = replayStarts[r + 1];
    uint64_t coveredUntil = nodes[first]->start, end = 0;
    for (size_t i = first; i < last; ++i) {
      const Kernel &k = *nodes[i];
      // Busy: the union of the kernels' intervals (overlapping launches overlap).
      if (k.end > coveredUntil)
        busy += double(k.end - std::max(k.start, coveredUntil)), coveredUntil = k.end;
      end = std::max(end, k.end);
      Totals &t = byName[k.name];
      t.ns += double(k.end - k.start), ++t.calls;
    }
    span += double(end - nodes[first]->start);
    if (r + 1 < replays)
      between += double(nodes[replayStarts[r + 1]]->start - nodes[first]->start);
  }
  const double n = double(replays - skip);
  std::fprintf(stderr,
               "graph %u, replayed %zu times, %zu kernels each (%s):\n"
               "  per replay: %.1f us from its first kernel's start to its last one's end, a kernel running "
               "for %.1f us of it, gaps %.1f us",
               graph, replays, (nodes.size() + replays - 1) / replays,
               skip ? "the first replay left out" : "every replay counted", span / n / 1e3, busy / n / 1e3,
               (span - busy) / n / 1e3);
  if (skip)
    std::fprintf(stderr, "; %.1f us from one replay's start to the next", between / (n - 1) / 1e3);
  std::fprintf(stderr, "\n");
  printTable(byName, n, "us/replay");
  if (!skip)
    return;
  // The host between replays: from the end of the synchronisation after replay r's launch to the
  // next replay's launch call, and from a launch call to its first kernel.
  std::vector<uint64_t> launches;
  for (const ApiCall &c : gCalls)
    if (c.name.rfind("cudaGraphLaunch", 0) == 0)
      launches.push_back(c.start);
  std::sort(launches.begin(), launches.end());
  // The last launch call before time t (0: none).
  auto launchBefore = [&](uint64_t t) {
    auto it = std::upper_bound(launches.begin(), launches.end(), t);
    return it == launches.begin() ? uint64_t(0) : *(it - 1);
  };
  double hostBetween = 0, toFirstKernel = 0;
  size_t counted = 0;
  for (size_t r = 1; r + 1 < replays; ++r) {
    const uint64_t replayStart = nodes[replayStarts[r]]->start, nextStart = nodes[replayStarts[r + 1]]->start;
    const uint64_t launch = launchBefore(replayStart), nextLaunch = launchBefore(nextStart);
    uint64_t syncEnd = 0;
    for (const ApiCall &c : gCalls)
      if (c.name.rfind("cudaStreamSynchronize", 0) == 0 && c.start > launch && c.end < nextLaunch)
        syncEnd = std::max(syncEnd, c.end);
    if (!launch || !syncEnd)
      continue;
    hostBetween += double(nextLaunch - syncEnd), toFirstKernel += double(replayStart - launch), ++counted;
  }
  if (counted)
    std::fprintf(stderr,
                 "  host: %.1f us per step from a synchronisation's return to the next graph launch call; "
                 "%.1f us from a launch call to the graph's first kernel\n",
                 hostBetween / double(counted) / 1e3, toFirstKernel / double(counted) / 1e3);
}

// The runtime calls by total time.
void printCalls() {
  std::map<std::string, Totals> byName;
  for (const ApiCall &c : gCalls) {
    Totals &t = byName[c.name];
    t.ns += double(c.end - c.start), ++t.calls;
  }
  std::fprintf(stderr, "CUDA runtime calls, by total time:\n");
  std::vector<std::pair<std::string, Totals>> rows(byName.begin(), byName.end());
  std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) { return a.second.ns > b.second.ns; });
  for (size_t i = 0; i < rows.size() && i < 15; ++i)
    std::fprintf(stderr, "  %10.2f ms %8zu calls %9.2f us each  %s\n", rows[i].second.ns / 1e6, rows[i].second.calls,
                 rows[i].second.ns / double(rows[i].second.calls) / 1e3, rows[i].first.c_str());
}

void report() {
  cuptiActivityFlushAll(1);
  std::lock_guard<std::mutex> lock(gMutex);
  if (gKernels.empty()) {
    std::fprintf(stderr, "kernel trace: no kernels recorded\n");
    return;
  }
  std::map<std::string, Totals> byName;
  std::map<uint32_t, double> graphNs;
  double allNs = 0;
  for (const Kernel &k : gKernels) {
    Totals &t = byName[k.name];
    t.ns += double(k.end - k.start), ++t.calls;
    allNs += double(k.end - k.start);
    if (k.graph)
      graphNs[k.graph] += double(k.end - k.start);
  }
  std::fprintf(stderr, "== kernel trace: %zu kernels\nall kernels, by total time:\n", gKernels.size());
  printTable(byName, 1.0, "us total");
  // The graphs that take a twentieth of the kernels' time or more, the most first: a generator's
  // decode step (replayed) and its prompt (launched once: where the time to the first token goes).
  std::vector<std::pair<double, uint32_t>> graphs;
  for (const auto &[graph, ns] : graphNs)
    if (ns >= allNs / 20)
      graphs.push_back({ns, graph});
  std::sort(graphs.rbegin(), graphs.rend());
  for (const auto &[ns, graph] : graphs)
    printGraph(graph);
  printCalls();
}

struct Tracer {
  Tracer() {
    if (cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) != CUPTI_SUCCESS) {
      std::fprintf(stderr, "kernel trace: CUPTI would not record kernels\n");
      return;
    }
    std::atexit(report);
  }
} gTracer;

} // namespace

#include "RewriteStats.h"

#include <mutex>
#include <utility>

namespace llmc {
namespace {
std::mutex mutex;
std::vector<RewriteCount> counts;
} // namespace

void countRewrite(const char *pass, const char *what, int64_t n) {
  std::lock_guard<std::mutex> lock(mutex);
  for (RewriteCount &c : counts)
    if (c.pass == pass && c.what == what) {
      c.count += n;
      return;
    }
  counts.push_back({pass, what, n});
}

std::vector<RewriteCount> takeRewriteCounts() {
  std::lock_guard<std::mutex> lock(mutex);
  return std::exchange(counts, {});
}

} // namespace llmc

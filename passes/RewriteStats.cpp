#include "RewriteStats.h"

#include <mutex>
#include <utility>

namespace llmc {
namespace {
std::mutex mutex;
std::vector<RewriteCount> counts;
std::vector<std::string> notes;
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

void noteRewrite(const char *pass, std::string text) {
  std::lock_guard<std::mutex> lock(mutex);
  notes.push_back(std::string(pass) + ": " + std::move(text));
}

std::vector<std::string> takeRewriteNotes() {
  std::lock_guard<std::mutex> lock(mutex);
  return std::exchange(notes, {});
}

} // namespace llmc

// Rewrite counts per pass, for `llmc --print-stats` (MLIR's pass statistics compile to nothing
// in release builds of LLVM, which is what Debian ships).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace llmc {

struct RewriteCount {
  std::string pass, what;
  int64_t count;
};

// Adds `n` to the count of `what` rewritten by `pass`. Thread safe.
void countRewrite(const char *pass, const char *what, int64_t n = 1);

// Every count so far, in the order first counted; clears them.
std::vector<RewriteCount> takeRewriteCounts();

// A line of text about what `pass` did (a cost estimate, a size before and after).
void noteRewrite(const char *pass, std::string text);

// Every note so far, as "pass: text", in order; clears them.
std::vector<std::string> takeRewriteNotes();

// A counter a pass or pattern holds: `++counter` records one rewrite.
class RewriteCounter {
public:
  RewriteCounter(const char *pass, const char *what) : pass_(pass), what_(what) {}
  RewriteCounter &operator++() {
    countRewrite(pass_, what_);
    return *this;
  }
  RewriteCounter &operator+=(int64_t n) {
    if (n)
      countRewrite(pass_, what_, n);
    return *this;
  }

private:
  const char *pass_, *what_;
};

} // namespace llmc

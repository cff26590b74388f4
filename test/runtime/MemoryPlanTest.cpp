// The arena planner: values live at the same time never share bytes, offsets are aligned, and
// the arena is no larger than all values side by side (and no smaller than the most that is
// live at once).
#include "MemoryPlan.h"

#include <gtest/gtest.h>

#include <random>

using llmc::rt::aliasCopies;
using llmc::rt::Lifetime;
using llmc::rt::planArena;

namespace {

TEST(MemoryPlan, LiveValuesNeverShareBytes) {
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::vector<Lifetime> values;
    const int ops = 50;
    for (int i = 0; i < 120; ++i) {
      const int first = int(rng() % (ops + 1)) - 1, last = first + int(rng() % 10);
      values.push_back({size_t(rng() % 5000), first, std::min(last, ops)});
    }
    const size_t align = 256;
    const auto plan = planArena(values, align);
    size_t sum = 0;
    for (const Lifetime &l : values)
      sum += (l.bytes + align - 1) / align * align;
    EXPECT_LE(plan.total, sum);
    size_t peakLive = 0;
    for (int t = -1; t <= ops; ++t) {
      size_t live = 0;
      for (const Lifetime &l : values)
        if (l.first <= t && t <= l.last)
          live += (l.bytes + align - 1) / align * align;
      peakLive = std::max(peakLive, live);
    }
    EXPECT_GE(plan.total, peakLive);
    for (size_t a = 0; a < values.size(); ++a) {
      EXPECT_EQ(plan.offsets[a] % align, 0u);
      if (values[a].bytes == 0)
        continue;
      EXPECT_LE(plan.offsets[a] + values[a].bytes, plan.total);
      for (size_t b = a + 1; b < values.size(); ++b) {
        if (values[b].bytes == 0 || values[a].last < values[b].first || values[b].last < values[a].first)
          continue;
        const bool apart = plan.offsets[a] + values[a].bytes <= plan.offsets[b] ||
                           plan.offsets[b] + values[b].bytes <= plan.offsets[a];
        ASSERT_TRUE(apart) << "values " << a << " and " << b << " are live together and overlap";
      }
    }
  }
}

TEST(MemoryPlan, AChainReusesMemory) {
  // x -> a -> b -> c -> y: each value is dead once the next is written, so two slots suffice.
  std::vector<Lifetime> chain = {{1000, -1, 0}, {1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  EXPECT_EQ(planArena(chain, 8).total, 2000u);
}

// Copies share their input's bytes: a chain x -> reshape -> unsqueeze becomes one slot live from
// x's first op to the last reader of the chain; a weight's copy uses the weight; kept values
// (a linked cache) are left alone.
TEST(MemoryPlan, CopiesShareTheirInputsBytes) {
  //                       0: x        1: reshape(x) 2: unsqueeze(1) 3: weight  4: copy(w)  5: kept   6: copy(5)
  std::vector<Lifetime> l = {{400, 0, 1}, {400, 1, 2}, {512, 2, 6},   {0, -1, 3}, {64, 3, 4}, {80, -1, 5}, {80, 5, 6}};
  std::vector<bool> keep(l.size(), false);
  keep[5] = true;
  const std::vector<int> owner = aliasCopies({{0, 1}, {1, 2}, {3, 4}, {5, 6}}, keep, l);
  EXPECT_EQ(owner, (std::vector<int>{0, 0, 0, 3, 3, 5, 6}));
  EXPECT_EQ(l[0].bytes, 512u); // the largest of the group
  EXPECT_EQ(l[0].first, 0);
  EXPECT_EQ(l[0].last, 6);
  EXPECT_EQ(l[1].bytes, 0u);
  EXPECT_EQ(l[2].bytes, 0u);
  EXPECT_EQ(l[3].bytes, 0u); // the weight stays out of the arena
  EXPECT_EQ(l[4].bytes, 0u);
  EXPECT_EQ(l[6].bytes, 80u); // its input is kept: a copy of its own
  const auto plan = planArena(l, 256);
  EXPECT_EQ(plan.total, 512u + 256u + 256u); // x's group, and values 5 and 6, live together at op 5
}

// Random programs with copy ops: after aliasing and planning, two values live at the same time
// share bytes only when one is a copy of the other (the same owner).
TEST(MemoryPlan, AliasedCopiesNeverOverlapOtherLiveValues) {
  std::mt19937 rng(11);
  for (int round = 0; round < 50; ++round) {
    const int n = 60; // value i is made by op i from earlier values; some ops are copies
    std::vector<Lifetime> lifetimes(n);
    std::vector<std::pair<int, int>> copies;
    for (int i = 0; i < n; ++i) {
      lifetimes[size_t(i)] = {size_t(1 + rng() % 4000), i, i};
      const int inputs = i == 0 ? 0 : 1 + int(rng() % 2);
      for (int k = 0; k < inputs; ++k) {
        const int in = int(rng() % size_t(i));
        lifetimes[size_t(in)].last = std::max(lifetimes[size_t(in)].last, i);
        if (inputs == 1 && rng() % 3 == 0)
          copies.emplace_back(in, i);
      }
    }
    const std::vector<Lifetime> original = lifetimes;
    std::vector<bool> keep(size_t(n), false);
    keep[size_t(rng() % n)] = true;
    const std::vector<int> owner = aliasCopies(copies, keep, lifetimes);
    const auto plan = planArena(lifetimes, 64);
    for (int a = 0; a < n; ++a) {
      const size_t oa = plan.offsets[size_t(owner[size_t(a)])];
      EXPECT_GE(lifetimes[size_t(owner[size_t(a)])].bytes, original[size_t(a)].bytes); // the owner holds it
      for (int b = a + 1; b < n; ++b) {
        if (owner[size_t(a)] == owner[size_t(b)])
          continue;
        const Lifetime &la = original[size_t(a)], &lb = original[size_t(b)];
        if (la.last < lb.first || lb.last < la.first)
          continue;
        const size_t ob = plan.offsets[size_t(owner[size_t(b)])];
        const bool apart = oa + la.bytes <= ob || ob + lb.bytes <= oa;
        EXPECT_TRUE(apart) << "round " << round << ": values " << a << " and " << b;
      }
    }
  }
}

} // namespace

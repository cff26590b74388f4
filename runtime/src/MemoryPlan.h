// Offsets in one arena for values with known lifetimes: two values share bytes only when no op
// runs while both are live. The CUDA executor sizes its device arena with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

struct llmc_plan_t;

namespace llmc::rt {

struct Lifetime {
  size_t bytes;
  int first, last; // op indices: written by op `first` (-1: before the run), read until op `last`
};

struct ArenaPlan {
  std::vector<size_t> offsets; // per lifetime, multiples of `alignment`
  size_t total = 0;
};

// Greedy placement, largest first, each at the lowest offset that no overlapping lifetime holds.
ArenaPlan planArena(const std::vector<Lifetime> &lifetimes, size_t alignment);

// Lifetimes of a plan's values (weights get bytes 0): inputs from before the first op, outputs
// to after the last, every other value from the op that writes it to the last op that reads it.
// Ops run in `order` (op indices; empty: the plan's order), and lifetimes count its positions.
std::vector<Lifetime> planLifetimes(const llmc_plan_t &plan, const std::vector<int> &order = {});

// Outputs that need no bytes of their own: for ops that hand their input through unchanged
// (`copies`: (input, output) value pairs in program order: reshape, squeeze, ...), the output
// shares its input's bytes, transitively, which is safe because no value is written after the
// op that makes it. Returns per value the value whose bytes it uses (itself when none); the
// owner's lifetime grows to cover its group and its bytes to the group's largest (a weight, with
// 0 bytes, stays out of the arena), and a value that uses another's gets 0 bytes. Values with
// keep[v] are left alone.
std::vector<int> aliasCopies(const std::vector<std::pair<int, int>> &copies, const std::vector<bool> &keep,
                             std::vector<Lifetime> &lifetimes);

} // namespace llmc::rt

// Named op attributes as the kernels read them, independent of where they came from
// (a plan file at load time, or MLIR attributes during constant folding).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmc::rt {

struct Attr {
  enum class Kind : uint8_t { Int = 0, Float = 1, Ints = 2, Floats = 3, String = 4 };
  std::string name;
  Kind kind = Kind::Int;
  int64_t i = 0;
  double f = 0;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::string s;
};

class AttrList {
public:
  void add(Attr attr) { attrs_.push_back(std::move(attr)); }
  const Attr *find(std::string_view name) const {
    for (const Attr &a : attrs_)
      if (a.name == name)
        return &a;
    return nullptr;
  }
  int64_t getInt(std::string_view name, int64_t fallback) const {
    const Attr *a = find(name);
    return a && a->kind == Attr::Kind::Int ? a->i : fallback;
  }
  double getFloat(std::string_view name, double fallback) const {
    const Attr *a = find(name);
    if (!a)
      return fallback;
    if (a->kind == Attr::Kind::Float)
      return a->f;
    if (a->kind == Attr::Kind::Int)
      return double(a->i);
    return fallback;
  }
  // Empty when absent.
  std::vector<int64_t> getInts(std::string_view name) const {
    const Attr *a = find(name);
    return a && a->kind == Attr::Kind::Ints ? a->ints : std::vector<int64_t>{};
  }
  std::vector<double> getFloats(std::string_view name) const {
    const Attr *a = find(name);
    return a && a->kind == Attr::Kind::Floats ? a->floats : std::vector<double>{};
  }
  std::string_view getString(std::string_view name) const {
    const Attr *a = find(name);
    return a && a->kind == Attr::Kind::String ? std::string_view(a->s) : std::string_view();
  }
  const std::vector<Attr> &all() const { return attrs_; }

private:
  std::vector<Attr> attrs_;
};

} // namespace llmc::rt

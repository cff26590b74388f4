// Reads a Hugging Face tokenizer.json (byte-level BPE: GPT-2, Llama 3, SmolLM2 families) into
// what the plan stores, so that a plan alone can tokenize and detokenize.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace llmc {

struct TokenizerData {
  uint8_t preTokenizer = 0;        // llmc::plan::PreTokenizer: 0 GPT-2, 1 Llama 3
  std::vector<std::string> vocab;  // by id
  std::vector<int32_t> merges;     // (left, right) id pairs, highest priority first
  struct Added {
    int32_t id;
    std::string content;
    bool special;
  };
  std::vector<Added> added;
};

// Fills `out` from the file at `path`; "" or a message saying what is missing or unsupported.
std::string readTokenizerJson(const std::string &path, TokenizerData &out);

} // namespace llmc

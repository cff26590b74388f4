// The byte-level BPE tokenizer a plan can carry (GPT-2, Llama 3, SmolLM2 families): text to token
// ids and back, with the same ids as Hugging Face `tokenizers` for the same tokenizer.json.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace llmc::plan {
struct Tokenizer;
}

namespace llmc::rt {

class Tokenizer {
public:
  enum class PreTokenizer : uint8_t { Gpt2 = 0, Llama3 = 1 };

  // Reads and checks the plan's tokenizer table; "" or what is wrong with it.
  std::string load(const llmc::plan::Tokenizer &table);

  // Appends the ids of `text` (UTF-8; invalid bytes are tokenized as bytes) to `ids`.
  void encode(std::string_view text, std::vector<int32_t> &ids) const;
  // The text of `ids`; "" on success, else the message for an id out of range.
  std::string decode(const int32_t *ids, size_t count, std::string &text) const;
  size_t vocabSize() const { return vocab_.size(); }

private:
  struct Added {
    int32_t id;
    std::string content;
  };
  void encodePiece(std::string_view piece, std::vector<int32_t> &ids) const;
  void pretokenize(std::string_view text, std::vector<std::string_view> &pieces) const;

  PreTokenizer kind_ = PreTokenizer::Gpt2;
  std::vector<std::string> vocab_;
  std::unordered_map<std::string, int32_t> ids_;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_; // (left, right) -> (rank, merged id)
  std::vector<Added> added_;                                         // longest first
  std::array<int32_t, 256> byteToken_{};                             // the single-byte tokens (-1: none)
  std::unordered_map<uint32_t, uint8_t> charToByte_;                 // byte-level character -> byte
};

} // namespace llmc::rt

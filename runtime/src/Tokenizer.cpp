// Byte-level BPE: added tokens first, then the pre-tokenizer's regular expression (written out as
// a scanner, with Unicode letter/number tables), then BPE merges by rank on each piece's bytes.
#include "Tokenizer.h"

#include "plan_generated.h"

#include <algorithm>
#include <cctype>

namespace llmc::rt {
namespace {

struct CodeRange {
  uint32_t lo, hi;
};
#include "UnicodeTables.inc"

template <size_t N> bool inRanges(const CodeRange (&ranges)[N], uint32_t cp) {
  auto it = std::upper_bound(ranges, ranges + N, cp, [](uint32_t c, const CodeRange &r) { return c < r.lo; });
  return it != ranges && cp <= (it - 1)->hi;
}

bool isLetter(uint32_t cp) { return inRanges(kLetters, cp); }
bool isNumber(uint32_t cp) { return inRanges(kNumbers, cp); }
// Unicode White_Space, which is what \s means in the regular expressions tokenizers use.
bool isSpace(uint32_t cp) {
  return (cp >= 0x9 && cp <= 0xD) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

// The code point at `i` and its length in bytes; a byte that starts no valid UTF-8 sequence is
// one code point of its own (0xFFFD, "other").
uint32_t decodeAt(std::string_view s, size_t i, size_t &len) {
  const uint8_t c = uint8_t(s[i]);
  len = 1;
  if (c < 0x80)
    return c;
  const int n = (c >= 0xC2 && c < 0xE0) ? 1 : (c >= 0xE0 && c < 0xF0) ? 2 : (c >= 0xF0 && c < 0xF5) ? 3 : -1;
  if (n < 0 || i + size_t(n) >= s.size())
    return 0xFFFD;
  uint32_t cp = c & (0x3F >> n);
  for (int k = 1; k <= n; ++k) {
    const uint8_t b = uint8_t(s[i + size_t(k)]);
    if ((b & 0xC0) != 0x80)
      return 0xFFFD;
    cp = (cp << 6) | (b & 0x3F);
  }
  len = size_t(n) + 1;
  return cp;
}

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

// GPT-2's reversible map from bytes to printable characters: printable Latin-1 bytes stand for
// themselves, the others for 256, 257, ... in order.
std::array<uint32_t, 256> byteLevelChars() {
  std::array<uint32_t, 256> chars{};
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    chars[b] = printable ? b : next++;
  }
  return chars;
}

// A scanner over the text's code points.
struct Scanner {
  std::string_view s;
  size_t at(size_t i, uint32_t &cp) const { // length of the code point at i (0 at the end)
    if (i >= s.size())
      return 0;
    size_t len;
    cp = decodeAt(s, i, len);
    return len;
  }
  template <typename Pred> size_t run(size_t i, Pred pred, size_t maxCount = SIZE_MAX) const {
    uint32_t cp;
    size_t count = 0;
    for (size_t len; count < maxCount && (len = at(i, cp)) && pred(cp); i += len)
      ++count;
    return i;
  }
  bool is(size_t i, bool (*pred)(uint32_t)) const {
    uint32_t cp;
    return at(i, cp) && pred(cp);
  }
};

bool isOther(uint32_t cp) { return !isSpace(cp) && !isLetter(cp) && !isNumber(cp); }
bool isNewline(uint32_t cp) { return cp == '\r' || cp == '\n'; }

// 's 't 're 've 'm 'll 'd (case-insensitively for Llama 3): the end, or i when none matches.
size_t contraction(std::string_view s, size_t i, bool anyCase) {
  if (s[i] != '\'')
    return i;
  auto lower = [&](size_t k) { return k < s.size() ? char(anyCase ? std::tolower(uint8_t(s[k])) : s[k]) : '\0'; };
  const char a = lower(i + 1), b = lower(i + 2);
  if (a == 's' || a == 't' || a == 'm' || a == 'd')
    return i + 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
    return i + 3;
  return i;
}

// \s+(?!\S) then \s+: a whitespace run, leaving its last character to the word that follows.
size_t whitespace(const Scanner &sc, size_t i) {
  size_t end = sc.run(i, isSpace), last = i;
  for (size_t k = i; k < end;) { // start of the run's last code point
    uint32_t cp;
    last = k;
    k += sc.at(k, cp);
  }
  if (end < sc.s.size() && last > i)
    return last;
  return end;
}

size_t nextGpt2(const Scanner &sc, size_t i) {
  if (size_t e = contraction(sc.s, i, false); e != i)
    return e;
  uint32_t cp;
  const size_t len = sc.at(i, cp);
  const size_t j = cp == ' ' ? i + len : i; // the optional leading space
  if (sc.is(j, isLetter))
    return sc.run(j, isLetter);
  if (sc.is(j, isNumber))
    return sc.run(j, isNumber);
  if (sc.is(j, isOther))
    return sc.run(j, isOther);
  return whitespace(sc, i);
}

size_t nextLlama3(const Scanner &sc, size_t i) {
  if (size_t e = contraction(sc.s, i, true); e != i)
    return e;
  uint32_t cp;
  const size_t len = sc.at(i, cp);
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (isLetter(cp))
    return sc.run(i, isLetter);
  if (!isNewline(cp) && !isNumber(cp) && sc.is(i + len, isLetter))
    return sc.run(i + len, isLetter);
  // \p{N}{1,3}
  if (isNumber(cp))
    return sc.run(i, isNumber, 3);
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  const size_t j = cp == ' ' ? i + len : i;
  if (sc.is(j, isOther))
    return sc.run(sc.run(j, isOther), isNewline);
  // \s*[\r\n]+ : up to the last newline of the whitespace run
  const size_t end = sc.run(i, isSpace);
  size_t lastNewline = i;
  for (size_t k = i; k < end;) {
    uint32_t c;
    const size_t l = sc.at(k, c);
    if (isNewline(c))
      lastNewline = k + l;
    k += l;
  }
  if (lastNewline > i)
    return lastNewline;
  return whitespace(sc, i);
}

uint64_t pairKey(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

} // namespace

std::string Tokenizer::load(const llmc::plan::Tokenizer &t) {
  kind_ = static_cast<PreTokenizer>(t.pre_tokenizer());
  if (uint8_t(kind_) > uint8_t(PreTokenizer::Llama3))
    return "the tokenizer's pre-tokenizer is unknown";
  for (const flatbuffers::String *s : *t.vocab()) {
    ids_.emplace(s->str(), int32_t(vocab_.size()));
    vocab_.push_back(s->str());
  }
  const std::array<uint32_t, 256> chars = byteLevelChars();
  for (uint32_t b = 0; b < 256; ++b) {
    std::string c;
    appendUtf8(c, chars[b]);
    // A vocabulary may lack rare bytes (control characters): like Hugging Face's BPE without an
    // unknown token, such bytes are dropped.
    auto it = ids_.find(c);
    byteToken_[b] = it == ids_.end() ? -1 : it->second;
    charToByte_[chars[b]] = uint8_t(b);
  }
  const auto *merges = t.merges();
  if (merges->size() % 2)
    return "the tokenizer's merges are not pairs";
  for (uint32_t k = 0; k + 1 < merges->size(); k += 2) {
    const int32_t a = merges->Get(k), b = merges->Get(k + 1);
    if (a < 0 || b < 0 || size_t(a) >= vocab_.size() || size_t(b) >= vocab_.size())
      return "a tokenizer merge names a token that does not exist";
    auto merged = ids_.find(vocab_[size_t(a)] + vocab_[size_t(b)]);
    if (merged == ids_.end())
      return "a tokenizer merge makes a token that is not in the vocabulary";
    merges_.emplace(pairKey(a, b), std::make_pair(int32_t(k / 2), merged->second));
  }
  if (t.added())
    for (const llmc::plan::AddedToken *a : *t.added()) {
      if (a->id() < 0 || a->content()->size() == 0)
        return "an added token has a bad id or no text";
      added_.push_back({a->id(), a->content()->str()});
    }
  std::stable_sort(added_.begin(), added_.end(),
                   [](const Added &x, const Added &y) { return x.content.size() > y.content.size(); });
  return {};
}

void Tokenizer::pretokenize(std::string_view text, std::vector<std::string_view> &pieces) const {
  const Scanner sc{text};
  for (size_t i = 0; i < text.size();) {
    size_t end = kind_ == PreTokenizer::Gpt2 ? nextGpt2(sc, i) : nextLlama3(sc, i);
    if (end <= i) { // cannot happen with these expressions; never loop forever
      uint32_t cp;
      end = i + sc.at(i, cp);
    }
    pieces.push_back(text.substr(i, end - i));
    i = end;
  }
}

void Tokenizer::encodePiece(std::string_view piece, std::vector<int32_t> &ids) const {
  std::vector<int32_t> symbols;
  symbols.reserve(piece.size());
  for (char c : piece)
    if (byteToken_[uint8_t(c)] >= 0)
      symbols.push_back(byteToken_[uint8_t(c)]);
  // Merge the adjacent pair of lowest rank (leftmost on ties) until none merges.
  while (symbols.size() > 1) {
    int32_t bestRank = INT32_MAX, merged = -1;
    size_t at = 0;
    for (size_t k = 0; k + 1 < symbols.size(); ++k) {
      auto it = merges_.find(pairKey(symbols[k], symbols[k + 1]));
      if (it != merges_.end() && it->second.first < bestRank) {
        bestRank = it->second.first;
        merged = it->second.second;
        at = k;
      }
    }
    if (merged < 0)
      break;
    symbols[at] = merged;
    symbols.erase(symbols.begin() + long(at) + 1);
  }
  ids.insert(ids.end(), symbols.begin(), symbols.end());
}

void Tokenizer::encode(std::string_view text, std::vector<int32_t> &ids) const {
  std::vector<std::string_view> pieces;
  size_t start = 0;
  auto flush = [&](size_t end) {
    pieces.clear();
    pretokenize(text.substr(start, end - start), pieces);
    for (std::string_view p : pieces)
      encodePiece(p, ids);
  };
  for (size_t i = 0; i < text.size();) {
    const Added *hit = nullptr;
    for (const Added &a : added_)
      if (text.compare(i, a.content.size(), a.content) == 0) {
        hit = &a;
        break;
      }
    if (!hit) {
      ++i;
      continue;
    }
    flush(i);
    ids.push_back(hit->id);
    i += hit->content.size();
    start = i;
  }
  flush(text.size());
}

std::string Tokenizer::decode(const int32_t *ids, size_t count, std::string &text) const {
  for (size_t k = 0; k < count; ++k) {
    const int32_t id = ids[k];
    if (id < 0 || size_t(id) >= vocab_.size())
      return "token id " + std::to_string(id) + " is outside the vocabulary (0.." + std::to_string(vocab_.size() - 1) +
             ")";
    auto added = std::find_if(added_.begin(), added_.end(), [&](const Added &a) { return a.id == id; });
    if (added != added_.end()) {
      text += added->content;
      continue;
    }
    const std::string &token = vocab_[size_t(id)];
    for (size_t i = 0; i < token.size();) {
      size_t len;
      const uint32_t cp = decodeAt(token, i, len);
      auto it = charToByte_.find(cp);
      if (it != charToByte_.end())
        text += char(it->second);
      else
        text.append(token, i, len); // not a byte-level character: keep it as it is
      i += len;
    }
  }
  return {};
}

} // namespace llmc::rt

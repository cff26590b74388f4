#include "TokenizerImport.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>

namespace llmc {
namespace {

using llvm::json::Array;
using llvm::json::Object;

std::string fail(const std::string &path, const std::string &what) { return "tokenizer '" + path + "': " + what; }

// The pre-tokenizer kind: ByteLevel with its own (GPT-2) expression, or a Split with Llama 3's
// expression followed by ByteLevel without one. Anything else is refused by name.
std::string preTokenizerKind(const Object *pre, uint8_t &kind) {
  if (!pre)
    return "has no pre_tokenizer (only byte-level BPE tokenizers are supported)";
  auto type = pre->getString("type");
  if (type && *type == "ByteLevel") {
    if (pre->getBoolean("add_prefix_space").value_or(false))
      return "ByteLevel pre_tokenizer with add_prefix_space is not supported";
    if (!pre->getBoolean("use_regex").value_or(true))
      return "ByteLevel pre_tokenizer without its regular expression is not supported";
    kind = 0;
    return {};
  }
  if (type && *type == "Sequence") {
    const Array *list = pre->getArray("pretokenizers");
    if (list && list->size() == 2) {
      const Object *split = (*list)[0].getAsObject(), *bytes = (*list)[1].getAsObject();
      const Object *pattern = split ? split->getObject("pattern") : nullptr;
      auto regex = pattern ? pattern->getString("Regex") : std::nullopt;
      if (regex && regex->contains("\\p{N}{1,3}") && bytes && bytes->getString("type") == "ByteLevel" &&
          !bytes->getBoolean("use_regex").value_or(true)) {
        kind = 1;
        return {};
      }
    }
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(Object(*pre));
  return "pre_tokenizer " + text.substr(0, 200) + " is not supported (GPT-2 or Llama 3 byte-level BPE only)";
}

} // namespace

std::string readTokenizerJson(const std::string &path, TokenizerData &out) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return fail(path, "cannot read it: " + buffer.getError().message());
  auto parsed = llvm::json::parse((*buffer)->getBuffer());
  if (!parsed)
    return fail(path, "not valid JSON: " + llvm::toString(parsed.takeError()));
  const Object *root = parsed->getAsObject();
  const Object *model = root ? root->getObject("model") : nullptr;
  if (!model || model->getString("type") != "BPE")
    return fail(path, "the model is not BPE (only byte-level BPE tokenizers are supported)");
  if (root->get("normalizer") && root->get("normalizer")->kind() != llvm::json::Value::Null)
    return fail(path, "normalizers are not supported");
  if (model->getBoolean("byte_fallback").value_or(false))
    return fail(path, "byte_fallback BPE (SentencePiece style) is not supported");
  if (std::string err = preTokenizerKind(root->getObject("pre_tokenizer"), out.preTokenizer); !err.empty())
    return fail(path, err);

  const Object *vocab = model->getObject("vocab");
  if (!vocab || vocab->empty())
    return fail(path, "model.vocab is missing or empty");
  out.vocab.assign(vocab->size(), std::string());
  std::vector<bool> seen(vocab->size(), false);
  std::map<std::string, int32_t> ids;
  for (const auto &[token, id] : *vocab) {
    auto n = id.getAsInteger();
    if (!n || *n < 0 || size_t(*n) >= out.vocab.size() || seen[size_t(*n)])
      return fail(path, "model.vocab ids must be 0..size-1, each once");
    seen[size_t(*n)] = true;
    out.vocab[size_t(*n)] = token.str();
    ids[token.str()] = int32_t(*n);
  }
  const Array *merges = model->getArray("merges");
  if (!merges)
    return fail(path, "model.merges is missing");
  for (const llvm::json::Value &m : *merges) {
    std::string left, right;
    if (auto s = m.getAsString()) { // "a b"
      auto space = s->find(' ');
      if (space == llvm::StringRef::npos)
        return fail(path, "merge '" + s->str() + "' is not two tokens");
      left = s->substr(0, space).str();
      right = s->substr(space + 1).str();
    } else if (const Array *pair = m.getAsArray(); pair && pair->size() == 2 && (*pair)[0].getAsString() &&
                                                   (*pair)[1].getAsString()) { // ["a", "b"]
      left = (*pair)[0].getAsString()->str();
      right = (*pair)[1].getAsString()->str();
    } else {
      return fail(path, "a merge is neither \"a b\" nor [\"a\", \"b\"]");
    }
    auto a = ids.find(left), b = ids.find(right);
    if (a == ids.end() || b == ids.end() || !ids.count(left + right))
      return fail(path, "merge '" + left + " " + right + "' uses or makes a token missing from the vocabulary");
    out.merges.push_back(a->second);
    out.merges.push_back(b->second);
  }
  if (const Array *added = root->getArray("added_tokens"))
    for (const llvm::json::Value &v : *added) {
      const Object *a = v.getAsObject();
      auto id = a ? a->getInteger("id") : std::nullopt;
      auto content = a ? a->getString("content") : std::nullopt;
      if (!id || !content || *id < 0 || content->empty())
        return fail(path, "an added token lacks an id or content");
      if (size_t(*id) >= out.vocab.size()) // tokens beyond the BPE vocabulary extend it
        out.vocab.resize(size_t(*id) + 1);
      if (out.vocab[size_t(*id)].empty())
        out.vocab[size_t(*id)] = content->str();
      out.added.push_back({int32_t(*id), content->str(), a->getBoolean("special").value_or(false)});
    }
  return {};
}

} // namespace llmc

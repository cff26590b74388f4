// `llmc-run tokenize`: the plan's tokenizer from the command line.
//
//   llmc-run tokenize PLAN --text "Hello world"     prints the ids
//   llmc-run tokenize PLAN --hex-lines FILE         one hex-encoded UTF-8 string per line: prints
//                                                   each one's ids, and checks that decoding them
//                                                   gives the string back
//   llmc-run tokenize PLAN --decode 9906 1917       prints the text of ids
#include "Tokenize.h"

#include "Common.h"

#include "llmc/llmc.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

using llmcrun::decode;
using llmcrun::encode;
using llmcrun::fail;

bool unhex(const std::string &hex, std::string &out) {
  if (hex.size() % 2)
    return false;
  out.clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    const std::string byte = hex.substr(i, 2);
    char *end = nullptr;
    const long v = std::strtol(byte.c_str(), &end, 16);
    if (end != byte.c_str() + 2)
      return false;
    out += char(v);
  }
  return true;
}

void printIds(const std::vector<int32_t> &ids) {
  for (size_t i = 0; i < ids.size(); ++i)
    std::printf(i ? " %d" : "%d", ids[i]);
  std::printf("\n");
}

} // namespace

int tokenizeMain(int argc, char **argv) {
  if (argc < 3)
    return fail("usage: llmc-run tokenize PLAN (--text TEXT | --hex-lines FILE | --decode ID...)");
  llmc_plan plan = nullptr;
  std::string error;
  if (!llmcrun::ok(llmc_plan_load(argv[1], nullptr, &plan), error))
    return fail("loading '" + std::string(argv[1]) + "': " + error);
  const std::string mode = argv[2];
  int rc = 0;
  if (mode == "--text" && argc == 4) {
    std::vector<int32_t> ids;
    if (encode(plan, argv[3], ids, error))
      printIds(ids);
    else
      rc = fail(error);
  } else if (mode == "--decode") {
    std::vector<int32_t> ids;
    for (int i = 3; i < argc; ++i)
      ids.push_back(int32_t(std::strtol(argv[i], nullptr, 10)));
    std::string text;
    if (decode(plan, ids, text, error))
      std::printf("%s\n", text.c_str());
    else
      rc = fail(error);
  } else if (mode == "--hex-lines" && argc == 4) {
    std::ifstream in(argv[3]);
    if (!in)
      rc = fail(std::string("cannot read '") + argv[3] + "'");
    std::string line, text, back;
    for (int n = 1; rc == 0 && std::getline(in, line); ++n) {
      std::vector<int32_t> ids;
      if (!unhex(line, text))
        rc = fail("line " + std::to_string(n) + " is not hex");
      else if (!encode(plan, text, ids, error) || !decode(plan, ids, back, error))
        rc = fail("line " + std::to_string(n) + ": " + error);
      else if (back != text)
        rc = fail("line " + std::to_string(n) + ": decoding the ids does not give the text back");
      else
        printIds(ids);
    }
  } else {
    rc = fail("usage: llmc-run tokenize PLAN (--text TEXT | --hex-lines FILE | --decode ID...)");
  }
  llmc_plan_release(plan);
  return rc;
}

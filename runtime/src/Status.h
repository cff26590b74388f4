// Internal helpers for building llmc_status values.
#pragma once

#include "llmc/llmc.h"

#include <string>

struct llmc_status_t {
  llmc_status_code code;
  std::string message;
};

namespace llmc::rt {

inline llmc_status makeStatus(llmc_status_code code, std::string message) {
  return new (std::nothrow) llmc_status_t{code, std::move(message)};
}

} // namespace llmc::rt

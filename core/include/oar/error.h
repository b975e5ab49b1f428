/// \file error.h
/// The one exception type of oar: a code and a sentence.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace oar {

/// What went wrong; mirrors the ABI's OarStatus codes.
enum class ErrorCode : int32_t {
  invalid_argument = 1,
  out_of_memory = 2,
  unsupported = 3,
  device = 4,
  timeout = 5,
  internal = 6,
  no_device = 7,
};

/// Every error oar reports. The message is a sentence naming the op or file,
/// what was expected and what was found.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

/// Throws Error(invalid_argument, message) when `condition` is false. The
/// message is built only on failure, so checks stay cheap on hot paths.
#define OAR_CHECK_ARG(condition, message)                                        \
  do {                                                                           \
    if (!(condition)) throw ::oar::Error(::oar::ErrorCode::invalid_argument, (message)); \
  } while (0)

}  // namespace oar

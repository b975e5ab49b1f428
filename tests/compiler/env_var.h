// Shared by the compiler's C++ tests: sets (or, with nullptr, unsets) an
// environment variable for one scope and restores it when the scope ends.
#pragma once

#include <cstdlib>
#include <string>

struct EnvVar {
  std::string name, old;
  bool had;
  EnvVar(const char* n, const char* value) : name(n) {
    const char* o = std::getenv(n);
    had = o != nullptr;
    if (had) old = o;
    if (value) setenv(n, value, 1);
    else unsetenv(n);
  }
  ~EnvVar() {
    if (had) setenv(name.c_str(), old.c_str(), 1);
    else unsetenv(name.c_str());
  }
};

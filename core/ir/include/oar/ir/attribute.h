/// \file attribute.h
/// Typed attributes of an operation. They are the op registry's AttrValue
/// (int64, double, bool, string, int64 list, double list) so an operation's
/// attributes are exactly what its meta rule, kernels and VJP rule read.
#pragma once

#include <string>

#include "oar/op.h"

namespace oar::ir {

using Attribute = AttrValue;
using AttributeMap = Attrs;

/// Printer form: 3, 2.5 (always with a '.' or exponent so it reads as a
/// float), true, "text", [1, 2], [0.5, 1.0]. Non-finite floats print as
/// inf, -inf, nan.
std::string attribute_str(const Attribute& attr);
/// Type tag used by JSON serialization: "int", "float", "bool", "str",
/// "ints", "floats".
const char* attribute_kind(const Attribute& attr);

}  // namespace oar::ir

/// \file printer.h
/// The readable text form of a program. Example:
///
///   program {
///     input %x: f32[-1, 4]
///     param %fc.weight: f32[4, 8]
///     %0: f32[-1, 8] = matmul(%x, %fc.weight) {transpose_a=false, transpose_b=false}
///     output out: %0
///   }
///
/// Results are numbered densely in order of definition, so equal programs
/// print equally.
#pragma once

#include <ostream>
#include <string>

#include "oar/ir/program.h"

namespace oar::ir {

std::string to_string(const Program& program);
std::ostream& operator<<(std::ostream& os, const Program& program);

}  // namespace oar::ir

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
/// print equally. An operation's regions print below it, indented, each as
/// "region { ... }"; its results are numbered before their operations:
///
///     %0: f32[2, 3] = some_op(%x)
///       region {
///         %1: f32[2, 3] = exp(%x)
///       }
#pragma once

#include <ostream>
#include <string>

#include "oar/ir/program.h"

namespace oar::ir {

std::string to_string(const Program& program);
std::ostream& operator<<(std::ostream& os, const Program& program);

}  // namespace oar::ir

/// \file fusion_group.h
/// The op `fusion_group` (core/src/ops/fusion_group.cpp): a group of
/// operations the compiler plugin fused, carried as one operation whose
/// attribute `program` holds the group as a JSON sub-program. Its meta rule
/// is the sub-program's shape inference and its decomposition replays the
/// sub-program, so a program with fusion groups runs, traces and
/// differentiates without the plugin (Note [Fusion groups]).
#pragma once

#include <memory>
#include <string>

#include "oar/ir/program.h"

namespace oar::ir {

/// The sub-program of a fusion group: `program_json` (the op's `program`
/// attribute, ir::to_json of a program without parameters or constants)
/// parsed once per distinct text and kept for the process. `name` names the
/// group in errors. Throws oar::Error naming the group when the text is not
/// such a program. Thread-safe.
std::shared_ptr<const Program> fusion_group_program(const std::string& program_json, const std::string& name);

}  // namespace oar::ir

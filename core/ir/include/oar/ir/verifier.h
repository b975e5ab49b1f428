/// \file verifier.h
/// Checks a program's well-formedness.
#pragma once

#include "oar/ir/program.h"

namespace oar::ir {

/// Throws oar::Error (invalid_argument) with a sentence naming the operation
/// (its position and op name) when: an operand is used before it is defined
/// or belongs to no live definition; an operation has the wrong number of
/// operands or results; a result's type disagrees with the op's meta rule
/// (dynamic dims are checked for rank and dtype; static dims exactly); an
/// output or update refers to an undefined value; an update's type differs
/// from its parameter's; a constant's tensor differs from its type; an
/// operation in a region uses a value not visible there, or one outside
/// uses a value defined in a region (Note [Regions] in block.h); the
/// blocks, regions, producers or use lists disagree with the operations
/// (Note [Use lists] in value.h). Operations in regions are named by their
/// place: "operation 0 (add) in region 0 of operation 2 (cond)".
void verify(const Program& program);

}  // namespace oar::ir

// Operations.
#include "oar/ir/operation.h"

namespace oar::ir {

bool has_side_effects(const OpDef& def) { return def.random; }

}  // namespace oar::ir

// Blocks: ordered lists of operations.
#include "oar/ir/block.h"

#include <algorithm>

namespace oar::ir {

Operation* Block::push_back(std::unique_ptr<Operation> op) {
  ops_.push_back(std::move(op));
  return ops_.back().get();
}

Operation* Block::insert(size_t pos, std::unique_ptr<Operation> op) {
  if (pos > ops_.size()) pos = ops_.size();
  auto it = ops_.insert(ops_.begin() + static_cast<std::ptrdiff_t>(pos), std::move(op));
  return it->get();
}

void Block::erase_if(const std::function<bool(const Operation&)>& pred) {
  std::erase_if(ops_, [&](const std::unique_ptr<Operation>& op) { return pred(*op); });
}

}  // namespace oar::ir

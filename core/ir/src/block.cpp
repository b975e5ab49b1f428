// Blocks: intrusive lists of operations (Note [Blocks as intrusive lists]).
#include "oar/ir/block.h"

#include "oar/error.h"

namespace oar::ir {

Block::iterator& Block::iterator::operator--() {
  op_ = op_ ? op_->prev() : block_->back();
  return *this;
}

Block::~Block() { clear(); }

Block::Block(Block&& other) noexcept
    : first_(other.first_), last_(other.last_), size_(other.size_), parent_op_(other.parent_op_),
      args_(std::move(other.args_)) {
  other.first_ = other.last_ = nullptr;
  other.size_ = 0;
  other.drop_index();
  for (Operation* op = first_; op; op = op->next_) op->block_ = this;
  drop_index();
}

Block& Block::operator=(Block&& other) noexcept {
  if (this == &other) return *this;
  clear();
  first_ = other.first_;
  last_ = other.last_;
  size_ = other.size_;
  parent_op_ = other.parent_op_;
  args_ = std::move(other.args_);
  other.first_ = other.last_ = nullptr;
  other.size_ = 0;
  other.drop_index();
  for (Operation* op = first_; op; op = op->next_) op->block_ = this;
  drop_index();
  return *this;
}

void Block::build_index() const {
  std::lock_guard<std::mutex> lock(index_mutex_);
  if (index_valid_.load(std::memory_order_relaxed)) return;
  index_.clear();
  index_.reserve(size_);
  for (Operation* op = first_; op; op = op->next_) index_.push_back(op);
  index_valid_.store(true, std::memory_order_release);
}

Operation& Block::op(size_t i) const {
  if (!index_valid_.load(std::memory_order_acquire)) build_index();
  if (i >= index_.size()) {
    throw Error(ErrorCode::invalid_argument, "block: operation " + std::to_string(i) +
                                                 " asked of a block of " + std::to_string(size_) +
                                                 " operations");
  }
  return *index_[i];
}

size_t Block::index_of(const Operation* op) const {
  OAR_CHECK_ARG(op != nullptr && op->block() == this,
                "block: index_of asked for an operation that is not in this block");
  if (!index_valid_.load(std::memory_order_acquire)) build_index();
  // The index is in list order; a linear search from the nearer end would
  // also do, but positions are asked for in error messages only.
  for (size_t i = 0; i < index_.size(); ++i) {
    if (index_[i] == op) return i;
  }
  throw Error(ErrorCode::internal,
              "block: operation " + op->name() + " is linked to the block but not listed");
}

void Block::link(Operation* before, Operation* op) {
  OAR_CHECK_ARG(op->block_ == nullptr, "block: operation " + op->name() + " is already in a block");
  OAR_CHECK_ARG(before == nullptr || before->block_ == this,
                "block: cannot insert " + op->name() + " before an operation of another block");
  op->block_ = this;
  if (before == nullptr) {
    op->prev_ = last_;
    op->next_ = nullptr;
    if (last_)
      last_->next_ = op;
    else
      first_ = op;
    last_ = op;
    // Appending keeps the index valid (the common case: tracing).
    if (index_valid_.load(std::memory_order_relaxed)) index_.push_back(op);
  } else {
    op->next_ = before;
    op->prev_ = before->prev_;
    if (before->prev_)
      before->prev_->next_ = op;
    else
      first_ = op;
    before->prev_ = op;
    drop_index();
  }
  ++size_;
}

void Block::unlink(Operation* op) {
  OAR_CHECK_ARG(op != nullptr && op->block_ == this,
                "block: cannot remove an operation that is not in this block");
  if (op == last_ && index_valid_.load(std::memory_order_relaxed) && !index_.empty()) {
    index_.pop_back();  // removing the last one keeps the index valid
  } else {
    drop_index();
  }
  if (op->prev_)
    op->prev_->next_ = op->next_;
  else
    first_ = op->next_;
  if (op->next_)
    op->next_->prev_ = op->prev_;
  else
    last_ = op->prev_;
  op->prev_ = op->next_ = nullptr;
  op->block_ = nullptr;
  --size_;
}

Operation* Block::push_back(std::unique_ptr<Operation> op) {
  return insert(nullptr, std::move(op));
}

Operation* Block::insert(Operation* before, std::unique_ptr<Operation> op) {
  OAR_CHECK_ARG(op != nullptr, "block: cannot insert a null operation");
  Operation* raw = op.get();
  link(before, raw);
  op.release();  // owned through the list from here on
  return raw;
}

Operation* Block::insert(size_t pos, std::unique_ptr<Operation> op) {
  return insert(pos >= size_ ? nullptr : &this->op(pos), std::move(op));
}

std::unique_ptr<Operation> Block::remove(Operation* op) {
  unlink(op);
  return std::unique_ptr<Operation>(op);
}

void Block::erase(Operation* op) {
  std::unique_ptr<Operation> owned = remove(op);
  for (size_t i = 0; i < owned->results().size(); ++i)
    owned->result(i)->set_producer(nullptr, static_cast<int>(i));
}

void Block::erase_if(const std::function<bool(const Operation&)>& pred) {
  for (Operation* op = first_; op;) {
    Operation* next = op->next_;
    if (pred(*op)) erase(op);
    op = next;
  }
}

void Block::move_before(Operation* before, Operation* first, Operation* last) {
  OAR_CHECK_ARG(first != nullptr && first->block_ == this,
                "block: move_before needs operations of this block");
  if (first == last) return;
  std::vector<Operation*> moved;
  for (Operation* op = first; op != last; op = op->next_) {
    OAR_CHECK_ARG(op != nullptr,
                  "block: move_before was given a range that does not end in this block");
    OAR_CHECK_ARG(op != before,
                  "block: move_before cannot move operations before one of themselves");
    moved.push_back(op);
  }
  for (Operation* op : moved) {
    unlink(op);
    link(before, op);
  }
}

void Block::clear() {
  // From the back: each operation drops its uses before the values it read
  // lose their producers, and no list node is visited after deletion.
  while (last_) erase(last_);
}

}  // namespace oar::ir

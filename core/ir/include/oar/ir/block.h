/// \file block.h
/// A block: operations in execution order. A program has one top-level
/// block; an operation may own blocks of its own, its regions.
///
/// Note [Blocks as intrusive lists]
/// A block owns its operations through an intrusive doubly-linked list
/// (Operation::prev/next), so inserting before any operation and erasing
/// one are O(1) and pointers to operations stay valid while others come
/// and go. Position-based access (op(i), index_of, insert(pos, ...)) goes
/// through an index of the list built on demand: appending keeps it, any
/// other insertion or erasure drops it, and the next positional access
/// rebuilds it in O(n). Loops that only read, or read and append, stay
/// linear; passes that edit in the middle walk the list by pointer. The
/// rebuild is guarded, so const use from several threads is safe.
///
/// Note [Regions]
/// A region is a Block owned by an Operation (Operation::add_region); its
/// parent_op() is that operation. Operations in a region may use values
/// defined before them in the region and values visible at the parent
/// operation (defined earlier in enclosing blocks); values defined in a
/// region are visible only inside it, and the parent's own results are not
/// visible in its regions. The verifier checks these rules; JSON and the
/// printer carry regions. Control-flow ops (cond, while) build on this
/// (core/ir/include/oar/ir/control_flow.h).
///
/// Note [Region arguments]
/// A region may define values of its own at its start: its arguments
/// (Value kind argument), which its parent operation binds each time it
/// runs the region (the loop-carried values of a while body). They are
/// visible in the region only, like the region's results. A region of a
/// control-flow op ends with a `yield` operation whose operands are the
/// region's results; the verifier checks both (control_flow.h). Arguments
/// are made by Program::add_argument and belong to the program like every
/// value.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <vector>

#include "oar/ir/operation.h"

namespace oar::ir {

/// What iterating a block yields: an operation pointer that reads like the
/// std::unique_ptr the block used to hold (op->name(), *op, op.get()).
class OpRef {
 public:
  OpRef(Operation* op) : op_(op) {}  // NOLINT(google-explicit-constructor)
  Operation* operator->() const { return op_; }
  Operation& operator*() const { return *op_; }
  Operation* get() const { return op_; }
  operator Operation*() const { return op_; }  // NOLINT(google-explicit-constructor)

 private:
  Operation* op_;  // not owned
};

class Block {
 public:
  /// Walks the operations of a block in order (bidirectional).
  class iterator {
   public:
    using iterator_category = std::bidirectional_iterator_tag;
    using value_type = OpRef;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = OpRef;

    iterator() = default;
    iterator(Operation* op, const Block* block) : op_(op), block_(block) {}
    OpRef operator*() const { return OpRef(op_); }
    Operation* operator->() const { return op_; }
    iterator& operator++() {
      op_ = op_->next();
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++*this;
      return old;
    }
    iterator& operator--();
    iterator operator--(int) {
      iterator old = *this;
      --*this;
      return old;
    }
    bool operator==(const iterator& o) const { return op_ == o.op_; }

   private:
    Operation* op_ = nullptr;       // not owned; nullptr is end()
    const Block* block_ = nullptr;  // not owned (for --end())
  };

  /// The operations of a block as a range (what ops() returns).
  class OpRange {
   public:
    explicit OpRange(const Block& block) : block_(&block) {}
    iterator begin() const { return iterator(block_->first_, block_); }
    iterator end() const { return iterator(nullptr, block_); }
    size_t size() const { return block_->size(); }
    bool empty() const { return block_->empty(); }
    /// Positional access (Note [Blocks as intrusive lists]).
    OpRef operator[](size_t i) const { return OpRef(&block_->op(i)); }

   private:
    const Block* block_;  // not owned
  };

  /// A top-level block (parent_op() is nullptr).
  Block() = default;
  /// A region of `parent_op`.
  explicit Block(Operation* parent_op) : parent_op_(parent_op) {}
  /// Deletes the operations (each drops its uses).
  ~Block();
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  /// Moves the operations over (they learn their new block in O(n)).
  Block(Block&& other) noexcept;
  Block& operator=(Block&& other) noexcept;

  OpRange ops() const { return OpRange(*this); }
  iterator begin() const { return iterator(first_, this); }
  iterator end() const { return iterator(nullptr, this); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// The first and last operation (nullptr when empty).
  Operation* front() const { return first_; }
  Operation* back() const { return last_; }
  /// The operation at position `i` (Note [Blocks as intrusive lists]).
  Operation& op(size_t i) const;
  /// The position of `op`, which must be in this block.
  size_t index_of(const Operation* op) const;

  /// The operation owning this block as a region (nullptr at top level).
  Operation* parent_op() const { return parent_op_; }
  /// The region's arguments (Note [Region arguments]); empty at top level.
  const std::vector<Value*>& arguments() const { return args_; }
  Value* argument(size_t i) const { return args_.at(i); }

  Operation* push_back(std::unique_ptr<Operation> op);
  /// Inserts before `before` (nullptr appends), in O(1).
  Operation* insert(Operation* before, std::unique_ptr<Operation> op);
  /// Inserts before position `pos` (pos >= size() appends, in O(1);
  /// elsewhere the position is looked up in the index).
  Operation* insert(size_t pos, std::unique_ptr<Operation> op);
  /// Unlinks `op` from the block and returns it (its uses stay).
  std::unique_ptr<Operation> remove(Operation* op);
  /// Removes and deletes `op`. Its results must have no remaining uses (the
  /// caller checks); their producer becomes nullptr.
  void erase(Operation* op);
  /// Erases the operations for which `pred` is true (one walk). Their
  /// results must have no remaining uses outside the erased ones.
  void erase_if(const std::function<bool(const Operation&)>& pred);
  /// Moves the operations from `first` up to (not including) `last`
  /// (nullptr: to the end) of this block before `before` (nullptr: to the
  /// end), keeping their order; `before` must not be among them.
  void move_before(Operation* before, Operation* first, Operation* last);
  /// Erases every operation.
  void clear();

 private:
  friend class Program;  // adds arguments

  void link(Operation* before, Operation* op);
  void unlink(Operation* op);
  void drop_index() { index_valid_.store(false, std::memory_order_relaxed); }
  void build_index() const;

  Operation* first_ = nullptr;  // owned, with every op reachable from it
  Operation* last_ = nullptr;   // not owned (the end of the same list)
  size_t size_ = 0;
  Operation* parent_op_ = nullptr;  // not owned: the op this block is a region of
  std::vector<Value*> args_;        // not owned (the program's): Note [Region arguments]
  // The index of Note [Blocks as intrusive lists].
  mutable std::vector<Operation*> index_;  // not owned
  mutable std::atomic<bool> index_valid_{true};
  mutable std::mutex index_mutex_;
};

}  // namespace oar::ir

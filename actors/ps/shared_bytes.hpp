// Bytes shared by every copy: copying a shared_bytes shares the bytes, nothing copies them. What
// a run hands back of each shard's final parameters (run_summary::final_parameters), read by
// final_parameters().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace actorps {

class shared_bytes {
public:
  shared_bytes() = default;
  /// The `size` bytes at `data`, which `owner` keeps alive and unchanged.
  shared_bytes(std::shared_ptr<const void> owner, const uint8_t* data, std::size_t size)
    : owner_(std::move(owner)), data_(data), size_(size) {}

  const uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const std::shared_ptr<const void>& owner() const { return owner_; }

private:
  std::shared_ptr<const void> owner_;
  const uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

} // namespace actorps

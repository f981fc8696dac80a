#include "checkpoint_store/checkpoint_store_interface.h"

#include "checkpoint_store/buffer_pool.h"

namespace overseer {
namespace {

// Buffers of ReadTensors calls, shared by every store of the process: a fresh buffer
// per call would fault in its pages (see buffer_pool.h).
BufferPool* ConsumerBuffers() {
  static BufferPool* pool = new BufferPool(size_t{256} << 20);
  return pool;
}

// Receives each tensor into one reused buffer and hands it to a TensorConsumer.
class ConsumerReceiver : public TensorReceiver {
 public:
  explicit ConsumerReceiver(const TensorConsumer* consumer)
      : consumer_(consumer), buffer_(ConsumerBuffers()->Take()) {}
  ~ConsumerReceiver() override { ConsumerBuffers()->Give(std::move(buffer_)); }

  absl::StatusOr<char*> Allocate(const TensorHeader& header) override {
    const size_t size = static_cast<size_t>(header.size());
    // Only growth writes (zeroes); a buffer already that long is reused as it is.
    if (buffer_.size() < size) {
      ReserveBuffer(&buffer_, size);
      buffer_.resize(size);
    }
    return buffer_.data();
  }

  absl::Status Received(const TensorHeader& header) override {
    if (*consumer_ == nullptr) return absl::OkStatus();
    return (*consumer_)(header,
                        absl::string_view(buffer_.data(), static_cast<size_t>(header.size())));
  }

 private:
  const TensorConsumer* const consumer_;
  std::string buffer_;
};

}  // namespace

absl::Status CheckpointStoreInterface::ReadTensors(const std::string& run, const std::string& name,
                                                   const std::vector<std::string>& tensor_names,
                                                   const TensorConsumer& consumer) {
  ConsumerReceiver receiver(&consumer);
  return ReadTensorsInto(run, name, tensor_names, &receiver);
}

}  // namespace overseer

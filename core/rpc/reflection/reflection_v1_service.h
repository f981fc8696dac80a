#ifndef OVERSEER_CORE_RPC_REFLECTION_REFLECTION_V1_SERVICE_H_
#define OVERSEER_CORE_RPC_REFLECTION_REFLECTION_V1_SERVICE_H_

// grpc.reflection.v1.ServerReflection on gRPC's synchronous API, answered from the
// process's generated descriptor pool like gRPC's own v1alpha service (which
// ServerRunner serves beside it): list_services, file_by_filename,
// file_containing_symbol, file_containing_extension and all_extension_numbers_of_type.
// A file is sent with the files it imports that the stream has not sent yet.

#include <string>
#include <vector>

#include "core/rpc/reflection/reflection_v1.grpc.pb.h"

namespace overseer {

// Thread-safe.
class ReflectionV1Service final : public grpc::reflection::v1::ServerReflection::Service {
 public:
  // `services`: the full names that list_services answers.
  explicit ReflectionV1Service(std::vector<std::string> services)
      : services_(std::move(services)) {}

  grpc::Status ServerReflectionInfo(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<grpc::reflection::v1::ServerReflectionResponse,
                               grpc::reflection::v1::ServerReflectionRequest>* stream) override;

 private:
  const std::vector<std::string> services_;
};

}  // namespace overseer

#endif  // OVERSEER_CORE_RPC_REFLECTION_REFLECTION_V1_SERVICE_H_

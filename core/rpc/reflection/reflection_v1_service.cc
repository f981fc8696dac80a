#include "core/rpc/reflection/reflection_v1_service.h"

#include <set>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"

namespace overseer {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::DescriptorPool;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::FileDescriptorProto;
using grpc::reflection::v1::ServerReflectionRequest;
using grpc::reflection::v1::ServerReflectionResponse;

void SetError(grpc::StatusCode code, const std::string& message,
              ServerReflectionResponse* response) {
  response->mutable_error_response()->set_error_code(code);
  response->mutable_error_response()->set_error_message(message);
}

// Adds `file` and the files it imports, each unless `sent` has it, dependencies first.
void AddFile(const FileDescriptor* file, std::set<std::string>* sent,
             ServerReflectionResponse* response) {
  if (!sent->insert(file->name()).second) return;
  for (int i = 0; i < file->dependency_count(); ++i) {
    AddFile(file->dependency(i), sent, response);
  }
  FileDescriptorProto proto;
  file->CopyTo(&proto);
  proto.SerializeToString(
      response->mutable_file_descriptor_response()->add_file_descriptor_proto());
}

}  // namespace

grpc::Status ReflectionV1Service::ServerReflectionInfo(
    grpc::ServerContext*,
    grpc::ServerReaderWriter<ServerReflectionResponse, ServerReflectionRequest>* stream) {
  const DescriptorPool* pool = DescriptorPool::generated_pool();
  std::set<std::string> sent;
  ServerReflectionRequest request;
  while (stream->Read(&request)) {
    ServerReflectionResponse response;
    response.set_valid_host(request.host());
    *response.mutable_original_request() = request;
    const FileDescriptor* file = nullptr;
    std::string missing;
    switch (request.message_request_case()) {
      case ServerReflectionRequest::kListServices:
        for (const std::string& name : services_) {
          response.mutable_list_services_response()->add_service()->set_name(name);
        }
        break;
      case ServerReflectionRequest::kFileByFilename:
        file = pool->FindFileByName(request.file_by_filename());
        missing = "file " + request.file_by_filename();
        break;
      case ServerReflectionRequest::kFileContainingSymbol:
        file = pool->FindFileContainingSymbol(request.file_containing_symbol());
        missing = "symbol " + request.file_containing_symbol();
        break;
      case ServerReflectionRequest::kFileContainingExtension: {
        const auto& wanted = request.file_containing_extension();
        const Descriptor* type = pool->FindMessageTypeByName(wanted.containing_type());
        const FieldDescriptor* extension =
            type == nullptr ? nullptr
                            : pool->FindExtensionByNumber(type, wanted.extension_number());
        file = extension == nullptr ? nullptr : extension->file();
        missing = "extension " + std::to_string(wanted.extension_number()) + " of " +
                  wanted.containing_type();
        break;
      }
      case ServerReflectionRequest::kAllExtensionNumbersOfType: {
        const Descriptor* type =
            pool->FindMessageTypeByName(request.all_extension_numbers_of_type());
        if (type == nullptr) {
          SetError(grpc::StatusCode::NOT_FOUND,
                   "type " + request.all_extension_numbers_of_type() + " not found", &response);
          break;
        }
        std::vector<const FieldDescriptor*> extensions;
        pool->FindAllExtensions(type, &extensions);
        auto* numbers = response.mutable_all_extension_numbers_response();
        numbers->set_base_type_name(type->full_name());
        for (const FieldDescriptor* extension : extensions) {
          numbers->add_extension_number(extension->number());
        }
        break;
      }
      default:
        SetError(grpc::StatusCode::UNIMPLEMENTED, "unknown reflection request", &response);
        break;
    }
    if (!missing.empty()) {
      if (file == nullptr) {
        SetError(grpc::StatusCode::NOT_FOUND, missing + " not found", &response);
      } else {
        AddFile(file, &sent, &response);
        // An empty list would read as "not found" to some clients: resend the file.
        if (response.file_descriptor_response().file_descriptor_proto_size() == 0) {
          FileDescriptorProto proto;
          file->CopyTo(&proto);
          proto.SerializeToString(
              response.mutable_file_descriptor_response()->add_file_descriptor_proto());
        }
      }
    }
    if (!stream->Write(response)) break;
  }
  return grpc::Status::OK;
}

}  // namespace overseer

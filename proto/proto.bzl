"""One macro compiles a .proto with protoc (and grpc_cpp_plugin for services)."""

def overseer_proto(name, src, deps = [], grpc = False, visibility = ["//visibility:public"]):
    """Declares cc_library `name` for `src`, a file in this package.

    Args:
      name: the cc_library target, e.g. "tensor_cc_proto".
      src: the .proto file name.
      deps: other overseer_proto targets whose .proto files `src` imports.
      grpc: also generate the gRPC service stubs (.grpc.pb.{h,cc}).
      visibility: of the cc_library.
    """
    base = src[:-len(".proto")]
    outs = [base + ".pb.h", base + ".pb.cc"]
    if grpc:
        outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]
    dep_srcs = [d + "_srcs" for d in deps]
    native.filegroup(
        name = name + "_srcs",
        srcs = [src] + dep_srcs,
        visibility = visibility,
    )
    cmd = "protoc -I. --cpp_out=$(GENDIR)"
    if grpc:
        cmd += " --grpc_out=$(GENDIR) --plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin"
    cmd += " $(location %s)" % src
    native.genrule(
        name = name + "_gen",
        srcs = [src] + dep_srcs,
        outs = outs,
        cmd = cmd,
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        deps = deps + ["//third_party:protobuf"] + (["//third_party:grpc"] if grpc else []),
        visibility = visibility,
    )

#include <memory>
#include <string>
#include <vector>

#include "core/kernels/testing/kernel_test_util.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using test::AsScalar;
using test::AsTensor;
using test::ExpectTensorEqual;
using test::KernelRunner;
using test::Ref;
using test::Value;

// Runs a VariableV2 node named `name` against `mgr` and returns its variable.
std::shared_ptr<Var> RunVariable(ResourceMgr* mgr, const std::string& name,
                                 const PartialShape& shape = PartialShape({2}),
                                 const std::string& shared_name = "",
                                 const std::string& container = "") {
  KernelRunner k("VariableV2", name);
  k.set_resource_mgr(mgr);
  k.Attr("shape", shape).Attr("dtype", DT_FLOAT).Attr("shared_name", shared_name);
  k.Attr("container", container);
  auto out = k.RunRaw({});
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return nullptr;
  EXPECT_TRUE(out->at(0).is_ref());
  return out->at(0).ref;
}

absl::StatusOr<std::vector<Tensor>> RunUpdate(const std::string& op,
                                              const std::shared_ptr<Var>& var, const Tensor& value,
                                              bool validate = true) {
  KernelRunner k(op);
  k.Attr("T", value.dtype()).Input("v").Input("value");
  if (op == "Assign") k.Attr("validate_shape", validate);
  return k.Run({Ref(var), Value(value)});
}

bool IsInitialized(const std::shared_ptr<Var>& var) {
  KernelRunner k("IsVariableInitialized");
  k.Attr("dtype", var->dtype());
  auto out = k.Run({Ref(var)});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() && out->at(0).scalar<bool>();
}

TEST(VariableTest, AssignThenRead) {
  ResourceMgr mgr;
  auto var = RunVariable(&mgr, "v");
  ASSERT_NE(var, nullptr);
  EXPECT_FALSE(IsInitialized(var));
  auto out = RunUpdate("Assign", var, AsTensor<float>({1, 2}));
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<float>({1, 2}));
  EXPECT_TRUE(IsInitialized(var));

  KernelRunner read("Identity");
  read.Attr("T", DT_FLOAT);
  auto value = read.Run({Ref(RunVariable(&mgr, "v"))});
  ASSERT_TRUE(value.ok()) << value.status();
  ExpectTensorEqual(value->at(0), AsTensor<float>({1, 2}));
}

TEST(VariableTest, SharedAcrossKernelsThroughOneResourceMgr) {
  ResourceMgr mgr;
  auto a = RunVariable(&mgr, "v");
  auto b = RunVariable(&mgr, "v");
  EXPECT_EQ(a, b);
  auto c = RunVariable(&mgr, "other_node", PartialShape({2}), "v");
  EXPECT_EQ(a, c);
  auto d = RunVariable(&mgr, "v", PartialShape({2}), "", "elsewhere");
  EXPECT_NE(a, d);
  ASSERT_TRUE(RunUpdate("Assign", a, AsTensor<float>({3, 4})).ok());
  ExpectTensorEqual(test::ReadVar(c.get()), AsTensor<float>({3, 4}));
  EXPECT_FALSE(IsInitialized(d));
}

TEST(VariableTest, DtypeConflictIsInvalid) {
  ResourceMgr mgr;
  RunVariable(&mgr, "v");
  KernelRunner k("VariableV2", "v");
  k.set_resource_mgr(&mgr);
  k.Attr("shape", PartialShape({2})).Attr("dtype", DT_INT32);
  EXPECT_EQ(k.Run({}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(VariableTest, CleanupDropsTheContainer) {
  ResourceMgr mgr;
  KernelRunner k("VariableV2", "v");
  k.set_resource_mgr(&mgr);
  k.Attr("shape", PartialShape({2})).Attr("dtype", DT_FLOAT);
  auto first = k.RunRaw({});
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(RunUpdate("Assign", first->at(0).ref, AsTensor<float>({1, 2})).ok());
  mgr.Cleanup(ResourceMgr::kDefaultContainer);
  auto second = k.RunRaw({});
  ASSERT_TRUE(second.ok());
  EXPECT_NE(first->at(0).ref, second->at(0).ref);
  EXPECT_FALSE(IsInitialized(second->at(0).ref));
}

TEST(AssignTest, ShapeValidation) {
  ResourceMgr mgr;
  auto var = RunVariable(&mgr, "v", PartialShape({2}));
  // Against the declared shape.
  auto out = RunUpdate("Assign", var, AsTensor<float>({1, 2, 3}));
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("[2]"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("[3]"), std::string::npos) << out.status();
  EXPECT_FALSE(IsInitialized(var));

  // Against the current value (a variable of unknown declared shape).
  auto loose = RunVariable(&mgr, "loose", PartialShape());
  ASSERT_TRUE(RunUpdate("Assign", loose, AsTensor<float>({1, 2})).ok());
  out = RunUpdate("Assign", loose, AsTensor<float>({1}));
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("[2]"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("[1]"), std::string::npos) << out.status();

  // validate_shape=false replaces the shape.
  out = RunUpdate("Assign", var, AsTensor<float>({1, 2, 3}), /*validate=*/false);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<float>({1, 2, 3}));
}

TEST(AssignTest, DtypeMismatchAndNonRefInputAreInvalid) {
  auto var = test::MakeVar(DT_FLOAT);
  EXPECT_EQ(RunUpdate("Assign", var, AsTensor<int32_t>({1})).status().code(),
            absl::StatusCode::kInvalidArgument);
  KernelRunner k("Assign");
  k.Attr("T", DT_FLOAT);
  EXPECT_EQ(k.Run({Value(AsScalar<float>(1)), Value(AsScalar<float>(2))}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AssignAddSubTest, Updates) {
  auto var = test::MakeVar(DT_FLOAT, AsTensor<float>({1, 2}));
  auto out = RunUpdate("AssignAdd", var, AsTensor<float>({10, 20}));
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<float>({11, 22}));
  out = RunUpdate("AssignSub", var, AsTensor<float>({1, 1}));
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<float>({10, 21}));
  out = RunUpdate("AssignMul", var, AsTensor<float>({0.5, 2}));
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<float>({5, 42}));

  auto ints = test::MakeVar(DT_INT64, AsScalar<int64_t>(5));
  out = RunUpdate("AssignAdd", ints, AsScalar<int64_t>(-7));
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsScalar<int64_t>(-2));

  EXPECT_EQ(RunUpdate("AssignAdd", var, AsTensor<float>({1})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunUpdate("AssignMul", var, AsTensor<float>({1})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

absl::StatusOr<std::vector<Tensor>> RunCountUpTo(const std::shared_ptr<Var>& var, int64_t limit) {
  KernelRunner k("CountUpTo");
  k.Attr("T", var->dtype()).Attr("limit", limit).Input("v");
  return k.Run({Ref(var)});
}

// TensorFlow's CountUpTo: the value before each increment, then OUT_OF_RANGE at the
// limit with the variable left there.
TEST(CountUpToTest, CountsToTheLimit) {
  for (DataType dtype : {DT_INT32, DT_INT64}) {
    auto var = dtype == DT_INT32 ? test::MakeVar(dtype, AsScalar<int32_t>(0))
                                 : test::MakeVar(dtype, AsScalar<int64_t>(0));
    for (int64_t expected = 0; expected < 3; ++expected) {
      auto out = RunCountUpTo(var, 3);
      ASSERT_TRUE(out.ok()) << out.status();
      if (dtype == DT_INT32) {
        ExpectTensorEqual(out->at(0), AsScalar<int32_t>(static_cast<int32_t>(expected)));
      } else {
        ExpectTensorEqual(out->at(0), AsScalar<int64_t>(expected));
      }
    }
    auto done = RunCountUpTo(var, 3);
    ASSERT_EQ(done.status().code(), absl::StatusCode::kOutOfRange) << done.status();
    EXPECT_EQ(done.status().message(), "Reached limit of 3");
    if (dtype == DT_INT64) ExpectTensorEqual(test::ReadVar(var.get()), AsScalar<int64_t>(3));
  }
}

TEST(CountUpToTest, BadVariablesAreNamed) {
  auto uninitialized = test::MakeVar(DT_INT64);
  EXPECT_EQ(RunCountUpTo(uninitialized, 3).status().code(), absl::StatusCode::kFailedPrecondition);
  auto vector = test::MakeVar(DT_INT64, AsTensor<int64_t>({1, 2}));
  auto not_scalar = RunCountUpTo(vector, 3);
  EXPECT_EQ(not_scalar.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(not_scalar.status().message().find("scalar"), std::string::npos) << not_scalar.status();
}

TEST(AssignAddSubTest, UninitializedFailsNamingTheVariable) {
  auto var = test::MakeVar(DT_FLOAT);
  auto out = RunUpdate("AssignAdd", var, AsTensor<float>({1}));
  ASSERT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(out.status().message(), "Attempting to use uninitialized value v");
  EXPECT_EQ(RunUpdate("AssignSub", var, AsTensor<float>({1})).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(AssignAddSubTest, CopyOnWriteKeepsEarlierReads) {
  Tensor initial = AsTensor<float>({1, 2});
  auto var = test::MakeVar(DT_FLOAT, initial);
  KernelRunner read("Identity");
  read.Attr("T", DT_FLOAT);
  auto before = read.Run({Ref(var)});
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(RunUpdate("AssignAdd", var, AsTensor<float>({5, 5})).ok());
  ExpectTensorEqual(before->at(0), AsTensor<float>({1, 2}));
  ExpectTensorEqual(initial, AsTensor<float>({1, 2}));
  ExpectTensorEqual(test::ReadVar(var.get()), AsTensor<float>({6, 7}));
}

TEST(ReportUninitializedVariablesTest, ListsFalseFlags) {
  KernelRunner k("ReportUninitializedVariables");
  k.Attr("N", 3).Attr("var_names", std::vector<std::string>{"a", "b", "c"});
  auto out = k.Run(
      {Value(AsScalar<bool>(false)), Value(AsScalar<bool>(true)), Value(AsScalar<bool>(false))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<std::string>({"a", "c"}));

  KernelRunner none("ReportUninitializedVariables");
  none.Attr("N", 0).Attr("var_names", std::vector<std::string>{});
  out = none.Run({});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<std::string>({}));

  KernelRunner bad("ReportUninitializedVariables");
  bad.Attr("N", 1).Attr("var_names", std::vector<std::string>{"a", "b"});
  EXPECT_EQ(bad.Init().code(), absl::StatusCode::kInvalidArgument);
}

// As TensorFlow's scatter_ops_test: rows updated in place, repeated indices all
// applied, out-of-range indices and mismatched updates refused with the variable named.
TEST(ScatterTest, UpdateAddSubRows) {
  ResourceMgr mgr;
  auto var = RunVariable(&mgr, "table", PartialShape({3, 2}));
  ASSERT_NE(var, nullptr);
  ASSERT_TRUE(
      RunUpdate("Assign", var, AsTensor<float>({1, 1, 2, 2, 3, 3}, TensorShape({3, 2}))).ok());
  auto scatter = [&](const std::string& op, const Tensor& indices, const Tensor& updates) {
    KernelRunner k(op);
    k.Attr("T", DT_FLOAT).Attr("Tindices", indices.dtype()).Input("table").Input("i").Input("u");
    return k.Run({Ref(var), Value(indices), Value(updates)});
  };
  auto added = scatter("ScatterAdd", AsTensor<int32_t>({0, 2, 0}),
                       AsTensor<float>({10, 10, 20, 20, 30, 30}, TensorShape({3, 2})));
  ASSERT_TRUE(added.ok()) << added.status();
  ExpectTensorEqual(added->at(0), AsTensor<float>({41, 41, 2, 2, 23, 23}, TensorShape({3, 2})));
  auto subbed = scatter("ScatterSub", AsTensor<int64_t>({1}), AsTensor<float>({1, 2}, {1, 2}));
  ASSERT_TRUE(subbed.ok()) << subbed.status();
  auto updated = scatter("ScatterUpdate", AsTensor<int64_t>({2}), AsTensor<float>({7, 8}, {1, 2}));
  ASSERT_TRUE(updated.ok()) << updated.status();
  ExpectTensorEqual(updated->at(0), AsTensor<float>({41, 41, 1, 0, 7, 8}, TensorShape({3, 2})));

  auto out_of_range =
      scatter("ScatterAdd", AsTensor<int32_t>({3}), AsTensor<float>({1, 1}, {1, 2}));
  EXPECT_EQ(out_of_range.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out_of_range.status().message().find("indices[0] = 3 is not in [0, 3)"),
            std::string::npos)
      << out_of_range.status();
  auto mismatched = scatter("ScatterAdd", AsTensor<int32_t>({0}), AsTensor<float>({1, 1, 1}));
  EXPECT_EQ(mismatched.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mismatched.status().message().find("table"), std::string::npos) << mismatched.status();
  // Nothing changed by the refused updates.
  auto read = scatter("ScatterAdd", AsTensor<int32_t>({}), AsTensor<float>({}, {0, 2}));
  ASSERT_TRUE(read.ok()) << read.status();
  ExpectTensorEqual(read->at(0), AsTensor<float>({41, 41, 1, 0, 7, 8}, TensorShape({3, 2})));

  auto fresh = RunVariable(&mgr, "fresh", PartialShape({2}));
  KernelRunner k("ScatterAdd");
  k.Attr("T", DT_FLOAT).Attr("Tindices", DT_INT32).Input("fresh").Input("i").Input("u");
  EXPECT_EQ(k.Run({Ref(fresh), Value(AsTensor<int32_t>({0})), Value(AsTensor<float>({1}))})
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace overseer

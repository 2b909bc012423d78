// The op registry: schema parsing, the built-in registry's contents and coverage, argument
// binding and its errors, OpCall, and node-prefixed errors from infer_meta.
#include "ir/op_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "ir/op_schemas.h"
#include "tests/ir/shape_test_util.h"

namespace kiln::ir {
namespace {

using ::testing::HasSubstr;

// ---------------------------------------------------------------- parse_schema

TEST(ParseSchema, ReadsParamsDefaultsAndKeywordOnly) {
  OpSchema schema =
      parse_schema("sum(Tensor self, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor");
  EXPECT_EQ(schema.name, "sum");
  ASSERT_EQ(schema.params.size(), 4u);
  EXPECT_EQ(schema.params[0].name, "self");
  EXPECT_EQ(schema.params[0].type, ParamType::tensor);
  EXPECT_FALSE(schema.params[0].default_value.has_value());
  EXPECT_EQ(schema.params[1].type, ParamType::optional_int_list);
  EXPECT_EQ(schema.params[1].type_text, "int[]?");
  EXPECT_TRUE(schema.params[1].default_value->is_none());
  EXPECT_EQ(*schema.params[2].default_value, Argument(false));
  EXPECT_FALSE(schema.params[2].kwarg_only);
  EXPECT_TRUE(schema.params[3].kwarg_only);
  EXPECT_EQ(schema.params[3].type, ParamType::optional_scalar_type);
  EXPECT_EQ(schema.returns, OpSchema::Returns::tensor);
  EXPECT_EQ(schema.find_param("keepdim"), &schema.params[2]);
  EXPECT_EQ(schema.find_param("axis"), nullptr);
}

TEST(ParseSchema, ReadsEveryKindOfDefault) {
  OpSchema schema = parse_schema(
      "f(Tensor(a!) self, float eps=1e-05, float momentum=0.1, float correction=1, int[] padding=[0], "
      "int[] stride=[], str mode=\"none\", ScalarType dtype=i64, bool flag=True, Scalar alpha=1, "
      "Scalar slope=0.01, int[] pair=[1, 2]) -> Tensor");
  EXPECT_TRUE(schema.params[0].mutated);
  EXPECT_EQ(schema.params[0].type, ParamType::tensor);
  EXPECT_EQ(*schema.params[1].default_value, Argument(1e-05));
  EXPECT_EQ(*schema.params[2].default_value, Argument(0.1));
  // An int default of a float parameter is stored as a float.
  EXPECT_EQ(*schema.params[3].default_value, Argument(1.0));
  EXPECT_EQ(*schema.params[4].default_value, Argument::ints({0}));
  EXPECT_EQ(*schema.params[5].default_value, Argument::ints({}));
  EXPECT_EQ(*schema.params[6].default_value, Argument("none"));
  EXPECT_EQ(*schema.params[7].default_value, Argument(DType::i64));
  EXPECT_EQ(*schema.params[8].default_value, Argument(true));
  EXPECT_EQ(*schema.params[9].default_value, Argument(1));
  EXPECT_EQ(*schema.params[10].default_value, Argument(0.01));
  EXPECT_EQ(*schema.params[11].default_value, Argument::ints({1, 2}));
}

TEST(ParseSchema, ReadsReturns) {
  EXPECT_EQ(parse_schema("a(Tensor self) -> (Tensor, Tensor)").returns, OpSchema::Returns::tuple);
  EXPECT_EQ(parse_schema("a(Tensor self) -> (Tensor, Tensor, Tensor)").num_returns, 3);
  EXPECT_EQ(parse_schema("a(Tensor self) -> Tensor[]").returns, OpSchema::Returns::tensor_list);
  EXPECT_EQ(parse_schema("a() -> Tensor").params.size(), 0u);
}

TEST(ParseSchema, RejectsMalformedSchemasAsInternalErrors) {
  EXPECT_THROW(parse_schema("add Tensor self"), InternalError);
  EXPECT_THROW(parse_schema("add(Tensor self) Tensor"), InternalError);
  EXPECT_THROW(parse_schema("add(Tensorr self) -> Tensor"), InternalError);
  EXPECT_THROW(parse_schema("add(Tensor self, Tensor self) -> Tensor"), InternalError);
  EXPECT_THROW(parse_schema("add(bool flag=3) -> Tensor"), InternalError);
  EXPECT_THROW(parse_schema("add(Tensor self) -> int"), InternalError);
}

// ---------------------------------------------------------------- the registry

TEST(OpRegistry, EveryDeclaredOpIsRegisteredWithItsInplaceVariant) {
  const OpRegistry& registry = OpRegistry::global();
  size_t expected_count = 0;
  for (const OpDeclaration& declaration : op_declarations()) {
    std::string name = parse_schema(declaration.schema).name;
    const OpInfo* op = registry.find(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_TRUE(bool(op->infer)) << name << " has no shape rule";
    EXPECT_EQ(op->summary, declaration.summary);
    ++expected_count;
    if (std::string_view(declaration.flags).find("inplace") != std::string_view::npos) {
      const OpInfo* inplace = registry.find(name + "_");
      ASSERT_NE(inplace, nullptr) << name << "_";
      EXPECT_EQ(inplace->inplace_of, name);
      EXPECT_TRUE(inplace->schema.params[0].mutated);
      EXPECT_TRUE(bool(inplace->infer));
      EXPECT_TRUE(inplace->has_tag("inplace"));
      EXPECT_TRUE(inplace->has_tag("mutation"));
      EXPECT_EQ(inplace->schema.params.size(), op->schema.params.size());
      ++expected_count;
    }
  }
  EXPECT_EQ(registry.all().size(), expected_count);
}

TEST(OpRegistry, AllIsSortedByName) {
  std::vector<const OpInfo*> ops = OpRegistry::global().all();
  ASSERT_GT(ops.size(), 100u);
  for (size_t i = 1; i < ops.size(); ++i) EXPECT_LT(ops[i - 1]->name(), ops[i]->name());
}

TEST(OpRegistry, FlagsBecomeFieldsAndTags) {
  const OpRegistry& registry = OpRegistry::global();
  EXPECT_TRUE(registry.get("linear").composite);
  EXPECT_FALSE(registry.get("add").composite);
  EXPECT_TRUE(registry.get("gelu_").composite);
  EXPECT_TRUE(registry.get("reshape").is_view);
  EXPECT_TRUE(registry.get("reshape").has_tag("view"));
  EXPECT_TRUE(registry.get("sum").has_tag("reduction"));
  EXPECT_TRUE(registry.get("rand").has_tag("random"));
  EXPECT_TRUE(registry.get("exp").has_tag("pointwise"));
  EXPECT_FALSE(registry.get("add").is_inplace());
  EXPECT_FALSE(registry.get("add").has_tag("inplace"));
  EXPECT_FALSE(registry.get("add").has_tag("mutation"));
}

TEST(OpRegistry, InplaceVariantSchema) {
  const OpInfo& add_ = OpRegistry::global().get("add_");
  EXPECT_TRUE(add_.is_inplace());
  EXPECT_EQ(add_.schema.text, "add_(Tensor(a!) self, Scalar|Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_EQ(add_.schema.params[0].type, ParamType::tensor);
  EXPECT_TRUE(add_.schema.params[2].kwarg_only);
  EXPECT_EQ(OpRegistry::global().get("relu_").inplace_of, "relu");
  // Ops without the flag get no variant.
  EXPECT_EQ(OpRegistry::global().find("logical_not_"), nullptr);
  EXPECT_EQ(OpRegistry::global().find("sum_"), nullptr);
}

TEST(OpRegistry, DeclaredMutations) {
  const OpRegistry& registry = OpRegistry::global();
  const OpInfo& index_put_ = registry.get("index_put_");
  EXPECT_EQ(index_put_.inplace_of, "index_put");
  EXPECT_TRUE(index_put_.has_tag("mutation"));
  for (const char* name : {"copy_", "fill_"}) {
    const OpInfo& op = registry.get(name);
    EXPECT_FALSE(op.is_inplace()) << name;
    EXPECT_TRUE(op.has_tag("mutation")) << name;
    EXPECT_TRUE(op.schema.params[0].mutated) << name;
  }
}

TEST(OpRegistry, UnknownOpSuggestsTheClosestName) {
  const OpRegistry& registry = OpRegistry::global();
  EXPECT_EQ(registry.find("matmull"), nullptr);
  try {
    registry.get("matmull");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("unknown op 'matmull'; did you mean 'matmul'?"));
  }
  try {
    registry.get("Softmax");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("did you mean 'softmax'?"));
  }
  try {
    registry.get("frobnicate_everything");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "unknown op 'frobnicate_everything'");
  }
}

TEST(OpRegistry, AddRejectsDuplicates) {
  OpRegistry registry;
  OpInfo info;
  info.schema = parse_schema("foo(Tensor self) -> Tensor");
  info.infer = [](const OpCall& call) { return NodeMeta{{call.tensor(0)}, false}; };
  registry.add(info);
  EXPECT_THROW(registry.add(info), InternalError);
  EXPECT_NE(registry.find("foo"), nullptr);
}

TEST(OpRegistry, GlobalIsBuiltOnceAcrossThreads) {
  std::vector<const OpRegistry*> seen(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) threads.emplace_back([&seen, i] { seen[i] = &OpRegistry::global(); });
  for (std::thread& thread : threads) thread.join();
  for (const OpRegistry* registry : seen) EXPECT_EQ(registry, &OpRegistry::global());
}

// ---------------------------------------------------------------- bind_arguments

class BindTest : public shape_test::ShapeTest {
 protected:
  const OpSchema& schema(const char* name) { return OpRegistry::global().get(name).schema; }
  std::string bind_error(const char* op, std::vector<Argument> args, Kwargs kwargs = {}) {
    try {
      bind_arguments(schema(op), args, kwargs);
    } catch (const Error& error) {
      return error.what();
    }
    ADD_FAILURE() << "expected a binding error";
    return "";
  }
};

TEST_F(BindTest, PositionalKeywordsAndDefaults) {
  Node* x = input(DType::f32, {2, 3});
  std::vector<Argument> bound = bind_arguments(schema("sum"), {x, Argument::ints({1})}, {{"dtype", DType::f64}});
  ASSERT_EQ(bound.size(), 4u);
  EXPECT_EQ(bound[0], Argument(x));
  EXPECT_EQ(bound[1], Argument::ints({1}));
  EXPECT_EQ(bound[2], Argument(false));
  EXPECT_EQ(bound[3], Argument(DType::f64));
  bound = bind_arguments(schema("sum"), {}, {{"keepdim", true}, {"self", x}});
  EXPECT_EQ(bound[0], Argument(x));
  EXPECT_TRUE(bound[1].is_none());
  EXPECT_EQ(bound[2], Argument(true));
}

TEST_F(BindTest, ConvertsAndAcceptsCompatibleKinds) {
  Node* x = input(DType::f32, {2, 3});
  // An int for a float parameter becomes a float.
  std::vector<Argument> bound = bind_arguments(schema("layer_norm"), {x, Argument::ints({3})}, {{"eps", 1}});
  EXPECT_TRUE(bound[4].is_float());
  EXPECT_EQ(bound[4].floating(), 1.0);
  // A constant SymInt is an int.
  bound = bind_arguments(schema("transpose"), {x, Argument(SymInt(0)), 1}, {});
  EXPECT_TRUE(bound[1].is_int());
  // A Python number where Scalar|Tensor is declared.
  bound = bind_arguments(schema("add"), {x, 2.5}, {});
  EXPECT_TRUE(bound[1].is_float());
  // int[] accepts a single int (kept as given; accessors read it as a one-element list).
  bound = bind_arguments(schema("sum"), {x, 1}, {});
  EXPECT_EQ(bound[1].int_list(), std::vector<int64_t>{1});
  // A dtype by name.
  bound = bind_arguments(schema("cast"), {x, "float16"}, {});
  EXPECT_EQ(bound[1], Argument(DType::f16));
  // SymInt[] takes symbols and ints.
  bound = bind_arguments(schema("reshape"), {x, syms({s0, -1})}, {});
  EXPECT_EQ(bound[1].symint_list(), (std::vector<SymInt>{s0, SymInt(-1)}));
}

TEST_F(BindTest, TooManyPositionalArguments) {
  Node* x = input(DType::f32, {2});
  EXPECT_THAT(bind_error("relu", {x, x}), HasSubstr("expected at most 1 positional argument (self), but got 2"));
}

TEST_F(BindTest, KeywordOnlyCannotBeGivenPositionally) {
  Node* x = input(DType::f32, {2});
  std::string message = bind_error("add", {x, x, 2});
  EXPECT_THAT(message, HasSubstr("expected at most 2 positional arguments (self, other), but got 3"));
  EXPECT_THAT(message, HasSubstr("'alpha' and later parameters are keyword-only"));
}

TEST_F(BindTest, MissingRequiredArgument) {
  Node* x = input(DType::f32, {2});
  EXPECT_THAT(bind_error("add", {x}), HasSubstr("missing required argument 'other' (position 2)"));
  EXPECT_THAT(bind_error("cast", {x}), HasSubstr("missing required argument 'dtype'"));
}

TEST_F(BindTest, UnknownKeywordSuggestsTheParameter) {
  Node* x = input(DType::f32, {2});
  EXPECT_THAT(bind_error("add", {x, x}, {{"alpah", 2}}),
              HasSubstr("unknown keyword argument 'alpah'; did you mean 'alpha'?"));
}

TEST_F(BindTest, DuplicateArguments) {
  Node* x = input(DType::f32, {2});
  EXPECT_THAT(bind_error("add", {x, x}, {{"other", x}}),
              HasSubstr("argument 'other' given both positionally (position 2) and as a keyword"));
  EXPECT_THAT(bind_error("add", {x, x}, {{"alpha", 2}, {"alpha", 3}}),
              HasSubstr("keyword argument 'alpha' given twice"));
}

TEST_F(BindTest, WrongKindNamesTheParameter) {
  Node* x = input(DType::f32, {2});
  EXPECT_THAT(bind_error("sum", {x, "a"}), HasSubstr("argument 'dim' (position 2) must be int[]?, not str (\"a\")"));
  EXPECT_THAT(bind_error("relu", {3}), HasSubstr("argument 'self' (position 1) must be Tensor, not int (3)"));
  EXPECT_THAT(bind_error("sum", {x, Argument(std::vector<Argument>{0, 1.5})}),
              HasSubstr("must be int[]?, not list whose element 1 is float (1.5)"));
  // Bools are not ints, and ints are not bools (as in PyTorch's argument parser).
  EXPECT_THAT(bind_error("transpose", {x, true, 0}), HasSubstr("argument 'dim0' (position 2) must be int, not bool"));
  EXPECT_THAT(bind_error("sum", {x, 0, 1}), HasSubstr("argument 'keepdim' (position 3) must be bool, not int"));
  // A symbolic value where a plain int is required.
  EXPECT_THAT(bind_error("transpose", {x, Argument(s0), 0}), HasSubstr("must be int, not SymInt (s0)"));
  EXPECT_THAT(bind_error("sum", {x}, {{"dtype", 3}}), HasSubstr("argument 'dtype' must be ScalarType?, not int (3)"));
  EXPECT_THAT(bind_error("cast", {x, "float17"}), HasSubstr("not an unknown dtype name \"float17\""));
}

// ---------------------------------------------------------------- OpCall and infer_meta

TEST_F(BindTest, OpCallAccessorsAndPrefix) {
  Node* x = input(DType::f32, {2, 3});
  const OpInfo& op = OpRegistry::global().get("slice");
  OpCall call(op, bind_arguments(op.schema, {x, 1, Argument(s0)}, {}), nullptr, "slice_7");
  EXPECT_EQ(call.tensor(0).shape, (SymShape{2, 3}));
  EXPECT_EQ(call.int_arg(1), 1);
  EXPECT_EQ(call.sym(2), s0);
  EXPECT_TRUE(call.is_none(3));
  EXPECT_TRUE(call.is_tensor(0));
  EXPECT_EQ(call.prefix(), "node %slice_7 (slice): ");
  try {
    call.fail("bad ", 42);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "node %slice_7 (slice): bad 42");
  }
  OpCall anonymous(op, bind_arguments(op.schema, {x}, {}));
  EXPECT_EQ(anonymous.prefix(), "slice: ");
}

TEST_F(BindTest, ErrorsFromNodesNameTheNodeAndOp) {
  Node* x = input(DType::f32, {2, 3});
  EXPECT_THAT(error("sum", {x, "a"}), HasSubstr("node %sum (sum): argument 'dim'"));
  EXPECT_THAT(error("add", {x, input(DType::f32, {4}, "y")}),
              HasSubstr("node %add (add): The size of tensor a (3) must match the size of tensor b (4) at "
                        "non-singleton dimension 1"));
  // A failed call leaves no node behind.
  EXPECT_EQ(graph.find("add"), nullptr);
}

TEST_F(BindTest, UnknownTargetFromTheGraph) {
  Node* x = input(DType::f32, {2});
  EXPECT_THROW(call("reluu", {x}), Error);
}

TEST_F(BindTest, TupleValuedArgumentNeedsGetitem) {
  Node* x = input(DType::f32, {4, 3});
  Node* pair = call("var_mean", {x, 0});
  EXPECT_THAT(error("relu", {pair}), HasSubstr("argument 'self' is %var_mean of tuple type (f32[3], f32[3]); "
                                               "select an element with getitem"));
}

TEST_F(BindTest, TensorsMustShareADevice) {
  Node* x = input(DType::f32, {2});
  Node* y = graph.create_placeholder("y", TensorMeta::contiguous(DType::f32, {2}, Device::cuda(0)));
  EXPECT_THAT(error("add", {x, y}), HasSubstr("expected all tensors to be on the same device, but found at least two "
                                              "devices, cpu (%x) and cuda:0 (%y)"));
  // A zero-dim CPU tensor may join a CUDA op.
  Node* scalar = input(DType::f32, {}, "scalar");
  TensorMeta result = meta("add", {y, scalar});
  EXPECT_EQ(result.device, Device::cuda(0));
}

TEST_F(BindTest, InferMetaOfAnExistingNode) {
  Node* x = input(DType::i32, {2, 3});
  Node* node = graph.create_node(OpKind::call_function, "sum", {x, 1}, {{"keepdim", true}}, "", {});
  NodeMeta inferred = infer_meta(*node);
  ASSERT_EQ(inferred.values.size(), 1u);
  EXPECT_EQ(inferred.type_string(), "i64[2, 1]");
  EXPECT_EQ(OpCall::of(*node).bool_arg(2), true);
}

}  // namespace
}  // namespace kiln::ir

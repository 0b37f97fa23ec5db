// KernelAdapter on small shell adapters: the declaration read where it is
// made (the adapter then stopped), a failed hello a usage error naming the
// option with the adapter's stderr, a kernel call answered and its reply
// checked, a refusal thrown as its KernelError kind, and a request over
// the protocol's line limit refused before any adapter starts.
#include "harness/adapter/kernel_adapter.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness/io/json_reader.h"

namespace sdpa {
namespace {

const char* kHello =
    R"({"type":"hello","version":1,"name":"sh","ops":["aten.neg.default"],"dtypes":["f32"],)"
    R"("numerics":{"f32":{"storage":"f32","accumulation":"f32"}}})";

// The scripts this process wrote, removed when it exits (an adapter runs
// its script after script() returns).
struct Scripts {
  std::vector<std::string> paths;
  ~Scripts() {
    for (const auto& p : paths) std::remove(p.c_str());
  }
};

// A script that answers the hello, then `reply` (with the request's id 1) to every request.
AdapterConfig script(const std::string& name, const std::string& body) {
  static Scripts written;
  const std::string path = testing::TempDir() + "/kernel_adapter_" + name + "_" + std::to_string(getpid()) + ".sh";
  written.paths.push_back(path);
  std::ofstream(path) << "#!/bin/sh\n" << body;
  chmod(path.c_str(), 0755);
  AdapterConfig c;
  c.command = path;
  c.argv = {path};
  c.start_timeout_s = 10;
  c.timeout_s = 10;
  return c;
}

AdapterConfig answering(const std::string& name, const std::string& reply) {
  return script(name, std::string("read hello\necho '") + kHello + "'\nwhile read request; do echo '" + reply +
                          "'; done\n");
}

struct Neg {
  Graph g;
  RunContext ctx;
  Tensor x{DType::f32, {2}};
  std::unique_ptr<KernelArgs> args;
  explicit Neg(int64_t n = 2) : x(DType::f32, {n}) {
    ValueRef in = g.placeholder("x", {DType::f32, {SymExpr(n)}});
    g.outputs = {g.call("aten.neg.default", {in}, {}, {{DType::f32, {SymExpr(n)}}})};
    args = std::make_unique<KernelArgs>(g.nodes[1], ctx);
    args->args = {&x};
  }
};

TEST(KernelAdapter, ReadsTheDeclarationWhereItIsMadeThenComputesInItsOwnStart) {
  auto adapter = std::make_shared<KernelAdapter>(
      answering("neg", R"({"type":"result","id":1,"outputs":[{"dtype":"f32","shape":[2],"data":[-1.5,"-inf"]}]})"),
      "adapter", "t", Options{}, "option 'kernels' of target t");
  EXPECT_EQ(adapter->starts(), 1);
  EXPECT_EQ(adapter->declaration().name, "sh");
  EXPECT_EQ(adapter->declaration().ops, (std::vector<std::string>{"aten.neg.default"}));
  KernelSet k = adapter_kernel_set(adapter, "adapter", adapter->declaration().ops, nullptr);
  EXPECT_EQ(k.ops(), (std::vector<std::string>{"aten.neg.default"}));
  Neg n;
  std::vector<Tensor> out = (*k.find("aten.neg.default"))(*n.args);
  EXPECT_EQ(adapter->starts(), 2);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data, (std::vector<double>{-1.5, -INFINITY}));
  // The second request has id 2: the script's fixed id 1 is another request's.
  try {
    adapter->call(*n.args);
    ADD_FAILURE() << "a reply to another request was taken";
  } catch (const KernelFault& e) {
    EXPECT_EQ(e.verdict, Verdict::unexpected_error);
    EXPECT_NE(std::string(e.what()).find("kernel set adapter: %neg (aten.neg.default): adapter `"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("reply.id: the reply to request 2 names request 1"), std::string::npos)
        << e.what();
  }
}

TEST(KernelAdapter, ARefusalIsTheKernelErrorItNames) {
  KernelAdapter adapter(answering("refuse", R"({"type":"error","id":1,"error":"fatal","message":"no neg"})"),
                        "adapter", "t", Options{}, "here");
  Neg n;
  try {
    adapter.call(*n.args);
    ADD_FAILURE() << "no refusal";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.kind, KernelError::Kind::fatal);
    EXPECT_STREQ(e.what(), "no neg");
  }
}

TEST(KernelAdapter, AFailedHelloIsAUsageErrorWithTheAdaptersWords) {
  try {
    KernelAdapter(script("dies", "read hello\necho 'no torch here' >&2\nexit 2\n"), "adapter", "t", Options{},
                  "option 'kernels' of target t");
    ADD_FAILURE() << "an adapter that exits at its hello was taken";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("option 'kernels' of target t: the kernel adapter `", 0), 0u) << what;
    EXPECT_NE(what.find("` at its start: exited with status 2; its stderr ends: no torch here"), std::string::npos)
        << what;
  }
  try {
    KernelAdapter(script("pass", "read hello\necho '{\"type\":\"hello\",\"version\":1}'\n"), "adapter", "t",
                  Options{}, "here");
    ADD_FAILURE() << "a pass adapter's hello was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("answered a malformed reply: hello.ops"), std::string::npos) << e.what();
  }
}

TEST(KernelAdapter, ARequestOverTheLineLimitIsRefusedBeforeTheAdapterStarts) {
  KernelAdapter adapter(answering("large", "{}"), "adapter", "t", Options{}, "here");
  Neg n(1 << 20);  // a million elements: more than 16 MiB written as JSON
  for (size_t i = 0; i < n.x.data.size(); ++i) n.x.data[i] = 1.0 / 3.0 + static_cast<double>(i);
  try {
    adapter.call(*n.args);
    ADD_FAILURE() << "no refusal";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.kind, KernelError::Kind::unsupported);
    EXPECT_NE(std::string(e.what()).find("over the protocol's line limit of 16777216"), std::string::npos) << e.what();
  }
  EXPECT_EQ(adapter.starts(), 1);  // the hello where it was made, no other
}

}  // namespace
}  // namespace sdpa

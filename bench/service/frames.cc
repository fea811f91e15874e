// The requests of the service benchmark (issue 13), in two uses:
//
//   frames write DIR
//     writes DIR/<case>.bin, one gRPC frame per case (a 0 byte, the message
//     length as 4 bytes big-endian, the serialized request): what h2load
//     sends with -d, so a load generator nobody here wrote drives the floor
//     and sampler-server with exactly the same bytes; and DIR/cases.tsv,
//     "case<TAB>method path<TAB>request bytes<TAB>small|large".
//   frames compare --a HOST:PORT --b HOST:PORT [--small_only]
//     sends every case to both servers and compares the answers' sizes
//     (all messages of a stream together): the floor must answer with as
//     many bytes as sampler-server, or the benchmark's ratios compare
//     different work. Exact for fixed-width values; categorical indices
//     are varints, so within 10% there, and streams within 1% (their
//     chunk boundaries may differ). Exit 1 on a mismatch or a failed call.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "sampler/v1/sampler.grpc.pb.h"

ABSL_FLAG(std::string, a, "", "first server (host:port)");
ABSL_FLAG(std::string, b, "", "second server (host:port)");
ABSL_FLAG(bool, small_only, false, "compare only the small cases");

namespace {

namespace v1 = ::sampler::v1;
using Stub = v1::SamplerService::Stub;

// Sends the case's request to a server; the answer's bytes, or -1.
using Call = std::function<int64_t(Stub&)>;

struct Case {
  std::string name;
  std::string method;  // the RPC's name within sampler.v1.SamplerService
  bool small = true;
  double tolerance = 0;  // relative difference allowed in `compare`
  std::shared_ptr<google::protobuf::Message> request;
  Call call;
};

template <typename Request, typename Response>
Call Unary(std::shared_ptr<Request> request,
           grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                        Response*)) {
  return [request, method](Stub& stub) -> int64_t {
    grpc::ClientContext ctx;
    Response response;
    grpc::Status s = (stub.*method)(&ctx, *request, &response);
    if (!s.ok()) {
      std::fprintf(stderr, "  %s\n", s.error_message().c_str());
      return -1;
    }
    return static_cast<int64_t>(response.ByteSizeLong());
  };
}

v1::SampleGammaRequest GammaRequest(int64_t count, v1::Precision precision) {
  v1::SampleGammaRequest r;
  v1::GammaGroup* g = r.mutable_groups()->add_groups();
  g->set_shape(1.5);
  g->set_count(count);
  r.set_precision(precision);
  r.set_seed(7);
  return r;
}

Case GammaCase(std::string name, int64_t count, v1::Precision precision) {
  auto request =
      std::make_shared<v1::SampleGammaRequest>(GammaRequest(count, precision));
  return {std::move(name), "SampleGamma",
          count <= 65536,  0,
          request,         Unary(request, &Stub::SampleGamma)};
}

Case GammaStreamCase(std::string name, int64_t count) {
  auto request = std::make_shared<v1::SampleGammaStreamRequest>();
  *request->mutable_request() = GammaRequest(count, v1::PRECISION_FLOAT32);
  Call call = [request](Stub& stub) -> int64_t {
    grpc::ClientContext ctx;
    auto reader = stub.SampleGammaStream(&ctx, *request);
    v1::SampleGammaStreamResponse message;
    int64_t bytes = 0;
    while (reader->Read(&message)) bytes += message.ByteSizeLong();
    grpc::Status s = reader->Finish();
    if (!s.ok()) {
      std::fprintf(stderr, "  %s\n", s.error_message().c_str());
      return -1;
    }
    return bytes;
  };
  return {std::move(name), "SampleGammaStream",
          count <= 65536,  0.01,
          request,         call};
}

Case CategoricalCase(std::string name, int64_t rows, int64_t categories) {
  auto request = std::make_shared<v1::SampleCategoricalRequest>();
  request->set_categories(categories);
  auto* values = request->mutable_values()->mutable_f32()->mutable_values();
  values->Reserve(static_cast<int>(rows * categories));
  for (int64_t i = 0; i < rows * categories; ++i) {
    values->Add(1.0f + static_cast<float>(i % 7));  // unequal weights
  }
  request->set_precision(v1::PRECISION_FLOAT32);
  request->set_seed(7);
  return {std::move(name),
          "SampleCategorical",
          rows * categories <= 65536,
          0.10,
          request,
          Unary(request, &Stub::SampleCategorical)};
}

Case BoardsCase(std::string name, int32_t side, int64_t count) {
  auto request = std::make_shared<v1::SampleBoardsRequest>();
  request->set_rows(side);
  request->set_cols(side);
  request->add_stones(side);
  request->add_stones(side);
  request->set_count(count);
  request->set_seed(7);
  return {std::move(name),
          "SampleBoards",
          true,
          0,
          request,
          Unary(request, &Stub::SampleBoards)};
}

Case DirichletCase(std::string name, int64_t rows, int64_t dimension) {
  auto request = std::make_shared<v1::SampleDirichletRequest>();
  auto* c = request->mutable_concentrations()->mutable_f32()->mutable_values();
  for (int64_t i = 0; i < rows * dimension; ++i) c->Add(0.5f);
  request->set_dimension(dimension);
  request->set_precision(v1::PRECISION_FLOAT32);
  request->set_seed(7);
  return {std::move(name),
          "SampleDirichlet",
          true,
          0,
          request,
          Unary(request, &Stub::SampleDirichlet)};
}

Case EnumerateCase(std::string name, int problems, int points) {
  auto request = std::make_shared<v1::EnumerateRequest>();
  for (int p = 0; p < problems; ++p) {
    v1::EnumerateProblem* problem = request->add_problems();
    for (int t = 0; t < 2; ++t) {
      v1::Pmf* term = problem->add_terms();
      auto* v = term->mutable_probabilities()->mutable_f64()->mutable_values();
      for (int i = 0; i < points; ++i) v->Add(1.0 / points);
    }
  }
  request->set_precision(v1::PRECISION_FLOAT64);
  return {std::move(name),
          "Enumerate",
          true,
          0,
          request,
          Unary(request, &Stub::Enumerate)};
}

std::vector<Case> Cases() {
  return {
      GammaCase("gamma_256_f32", 256, v1::PRECISION_FLOAT32),
      GammaCase("gamma_4096_f64", 4096, v1::PRECISION_FLOAT64),
      GammaCase("gamma_10m_f32", 10'000'000, v1::PRECISION_FLOAT32),
      GammaStreamCase("gamma_stream_1m_f32", 1'000'000),
      GammaStreamCase("gamma_stream_10m_f32", 10'000'000),
      CategoricalCase("categorical_64x128_f32", 64, 128),
      CategoricalCase("categorical_4096x1024_f32", 4096, 1024),
      BoardsCase("boards_19x19_256", 19, 256),
      DirichletCase("dirichlet_64x16_f32", 64, 16),
      EnumerateCase("enumerate_4x64_f64", 4, 64),
  };
}

int Write(const std::string& dir) {
  std::ofstream tsv(dir + "/cases.tsv");
  for (const Case& c : Cases()) {
    const std::string body = c.request->SerializeAsString();
    const uint32_t n = static_cast<uint32_t>(body.size());
    const char prefix[5] = {0, static_cast<char>(n >> 24),
                            static_cast<char>(n >> 16),
                            static_cast<char>(n >> 8), static_cast<char>(n)};
    std::ofstream frame(dir + "/" + c.name + ".bin", std::ios::binary);
    frame.write(prefix, 5);
    frame.write(body.data(), static_cast<std::streamsize>(body.size()));
    tsv << c.name << "\t/sampler.v1.SamplerService/" << c.method << "\t"
        << body.size() << "\t" << (c.small ? "small" : "large") << "\n";
    if (!frame || !tsv) {
      std::fprintf(stderr, "frames: cannot write into %s\n", dir.c_str());
      return 1;
    }
  }
  return 0;
}

std::unique_ptr<Stub> Connect(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  return v1::SamplerService::NewStub(grpc::CreateCustomChannel(
      target, grpc::InsecureChannelCredentials(), args));
}

int Compare(const std::string& a, const std::string& b, bool small_only) {
  auto stub_a = Connect(a);
  auto stub_b = Connect(b);
  int failures = 0;
  for (const Case& c : Cases()) {
    if (small_only && !c.small) continue;
    const int64_t bytes_a = c.call(*stub_a);
    const int64_t bytes_b = c.call(*stub_b);
    const double diff =
        std::abs(static_cast<double>(bytes_a - bytes_b)) /
        static_cast<double>(std::max<int64_t>(std::max(bytes_a, bytes_b), 1));
    const bool ok = bytes_a >= 0 && bytes_b >= 0 && diff <= c.tolerance;
    std::printf("%-28s %12lld %12lld  %s\n", c.name.c_str(),
                static_cast<long long>(bytes_a),
                static_cast<long long>(bytes_b), ok ? "ok" : "MISMATCH");
    failures += ok ? 0 : 1;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() == 3 && std::string(rest[1]) == "write") {
    return Write(rest[2]);
  }
  if (rest.size() == 2 && std::string(rest[1]) == "compare" &&
      !absl::GetFlag(FLAGS_a).empty() && !absl::GetFlag(FLAGS_b).empty()) {
    return Compare(absl::GetFlag(FLAGS_a), absl::GetFlag(FLAGS_b),
                   absl::GetFlag(FLAGS_small_only));
  }
  std::fprintf(stderr,
               "usage: frames write DIR\n"
               "       frames compare --a HOST:PORT --b HOST:PORT "
               "[--small_only]\n");
  return 2;
}

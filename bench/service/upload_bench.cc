// What one large categorical upload (issue 13 item 3: 4,096 rows of 1,024
// float32 weights, 16 MB) costs the server between gRPC handing it the
// body and the job being queued: the body parsed as any message (the
// packed weights grown slice by slice) or with their storage reserved
// first (server/wire_request.h), then validated into a job
// (ParseCategorical, reading the weights in place). The body arrives as
// gRPC receives it, in slices of one HTTP/2 frame (16 KiB). Each
// repetition parses into a fresh message that is freed after, as a call's
// is. For direction only; the end-to-end figures come from floor.sh and
// small_rounds.sh.
//
//   upload_bench [rows (4096)] [categories (1024)] [repetitions (20)]
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "sampler/v1/sampler.pb.h"
#include "server/request_limits.h"
#include "server/request_parse.h"
#include "server/wire_request.h"

namespace {

namespace v1 = ::sampler::v1;
using Clock = std::chrono::steady_clock;

// The median over `repetitions` calls of `fn`, in milliseconds.
template <typename Fn>
double MedianMs(int repetitions, Fn fn) {
  fn();  // warm
  std::vector<double> ms;
  for (int i = 0; i < repetitions; ++i) {
    const Clock::time_point start = Clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rows = argc > 1 ? std::atoi(argv[1]) : 4096;
  const int categories = argc > 2 ? std::atoi(argv[2]) : 1024;
  const int repetitions = argc > 3 ? std::atoi(argv[3]) : 20;
  v1::SampleCategoricalRequest request;
  request.set_categories(categories);
  auto* values = request.mutable_values()->mutable_f32()->mutable_values();
  for (int i = 0; i < rows * categories; ++i) {
    values->Add(1.0f + static_cast<float>(i % 7));  // as frames.cc's case
  }
  request.set_precision(v1::PRECISION_FLOAT32);
  request.set_seed(7);
  const std::string bytes = request.SerializeAsString();
  constexpr size_t kFrame = 16 << 10;
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += kFrame) {
    slices.emplace_back(bytes.data() + at, std::min(kFrame, bytes.size() - at));
  }
  const grpc::ByteBuffer body(slices.data(), slices.size());

  auto parse = [&](bool reserved) {
    auto parsed = std::make_shared<v1::SampleCategoricalRequest>();
    const absl::Status status =
        reserved
            ? sampler::server::ParseRequestBody(body, parsed.get())
            : sampler::server::ParseRequestBody(
                  body, static_cast<google::protobuf::Message*>(parsed.get()));
    if (!status.ok() ||
        parsed->values().f32().values_size() != values->size()) {
      std::fprintf(stderr, "upload_bench: parse failed\n");
      std::exit(1);
    }
    return parsed;
  };
  const double grown = MedianMs(repetitions, [&] { parse(false); });
  const double reserved = MedianMs(repetitions, [&] { parse(true); });
  const sampler::server::RequestLimits limits;
  const double validated = MedianMs(repetitions, [&] {
    auto job = sampler::server::ParseCategorical(
        parse(true), limits, [] { return uint64_t{7}; }, /*streamed=*/false);
    if (!job.ok()) {
      std::fprintf(stderr, "upload_bench: %s\n",
                   std::string(job.status().message()).c_str());
      std::exit(1);
    }
  });
  std::printf("upload: %d x %d float32 weights, %.1f MB in %zu slices\n", rows,
              categories, bytes.size() / 1e6, slices.size());
  std::printf("parse, weights grown:       %8.3f ms\n", grown);
  std::printf("parse, weights reserved:    %8.3f ms\n", reserved);
  std::printf("parse reserved + validate:  %8.3f ms (validation %.3f ms)\n",
              validated, validated - reserved);
  return 0;
}

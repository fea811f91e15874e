// What sending one large answer costs the server before the transport
// (issue 13 item 4): gRPC's typed path serializes the response (a copy of
// every value into gRPC's buffer), the raw path (server/wire_answer.h)
// writes the header and borrows the values. Prints both per answer and
// their ratio; for direction only (the end-to-end figures come from
// floor.sh). Also what binding the answer's memory costs, every value then
// written as a kernel would: filled with zeros first (Resize, as before)
// or not (server/response_bind.h), and into memory already touched.
//
//   wire_bench [samples (10000000)] [repetitions (20)]
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/proto_utils.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "sampler/v1/sampler.pb.h"
#include "server/response_bind.h"
#include "server/wire_answer.h"

namespace {

namespace v1 = ::sampler::v1;
using Clock = std::chrono::steady_clock;

template <typename Fn>
double SecondsPer(int repetitions, Fn fn) {
  fn();  // warm: first touch of the pages
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < repetitions; ++i) fn();
  return std::chrono::duration<double>(Clock::now() - start).count() /
         repetitions;
}

}  // namespace

int main(int argc, char** argv) {
  const int samples = argc > 1 ? std::atoi(argv[1]) : 10'000'000;
  const int repetitions = argc > 2 ? std::atoi(argv[2]) : 20;
  auto answer = std::make_shared<v1::SampleGammaResponse>();
  auto* values = answer->mutable_samples()->mutable_f32()->mutable_values();
  values->Resize(samples, 0.0f);
  for (int i = 0; i < samples; ++i) values->Set(i, 0.25f * i);
  answer->set_seed(12345);
  const double bytes = static_cast<double>(answer->ByteSizeLong());
  const double typed = SecondsPer(repetitions, [&] {
    grpc::ByteBuffer wire;
    bool own = false;
    (void)grpc::SerializationTraits<v1::SampleGammaResponse>::Serialize(
        *answer, &wire, &own);
  });
  const double raw = SecondsPer(repetitions, [&] {
    grpc::ByteBuffer wire = sampler::server::AnswerToWire(answer);
  });
  std::printf("answer: %d float32 samples, %.1f MB\n", samples, bytes / 1e6);
  std::printf("typed (protobuf serializes): %10.3f ms  %8.0f MB/s\n",
              typed * 1e3, bytes / typed / 1e6);
  std::printf("raw (values borrowed):       %10.3f ms  %8.0f MB/s\n", raw * 1e3,
              bytes / raw / 1e6);
  std::printf("typed / raw: %.0fx\n", typed / raw);

  // A fresh response each time, as each call has: its memory comes from
  // the allocator as a call's does.
  auto write_all = [samples](float* out) {
    for (int i = 0; i < samples; ++i) out[i] = 0.25f * i;
  };
  const double filled = SecondsPer(repetitions, [&] {
    v1::SampleGammaResponse response;
    auto* v = response.mutable_samples()->mutable_f32()->mutable_values();
    v->Resize(samples, 0.0f);
    write_all(v->mutable_data());
  });
  const double unfilled = SecondsPer(repetitions, [&] {
    v1::SampleGammaResponse response;
    write_all(
        sampler::server::BindReals<float>(samples, response.mutable_samples())
            .data());
  });
  // The same response bound again keeps its memory: no page is touched for
  // the first time, which is what a fresh answer's memory costs beyond the
  // writes (glibc maps an allocation this large afresh each time).
  v1::SampleGammaResponse reused;
  const double warm = SecondsPer(repetitions, [&] {
    write_all(
        sampler::server::BindReals<float>(samples, reused.mutable_samples())
            .data());
  });
  std::printf("bind + write, zero-filled first: %8.3f ms\n", filled * 1e3);
  std::printf("bind + write, not filled:        %8.3f ms\n", unfilled * 1e3);
  std::printf("bind + write, memory reused:     %8.3f ms\n", warm * 1e3);
  return 0;
}

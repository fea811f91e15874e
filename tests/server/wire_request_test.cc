// The raw methods' request bodies parsed (server/wire_request.h): any
// message as protobuf parses it, bad bodies named by their type, and the
// categorical requests' large bodies with their weights' storage reserved
// from the wire first, parsed into the very message protobuf parses
// whatever the body holds.
#include "server/wire_request.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace sampler::server {
namespace {

TEST(WireRequest, ParsesValidBodiesAndNamesTheTypeOfBadOnes) {
  v1::SampleGammaRequest sent;
  sent.mutable_elements()->mutable_shape()->mutable_f32()->add_values(2.5f);
  sent.set_seed(3);
  const std::string bytes = sent.SerializeAsString();
  // One slice, and the same bytes over two slices.
  grpc::Slice whole(bytes);
  grpc::Slice halves[] = {grpc::Slice(bytes.data(), 3),
                          grpc::Slice(bytes.data() + 3, bytes.size() - 3)};
  for (const grpc::ByteBuffer& body :
       {grpc::ByteBuffer(&whole, 1), grpc::ByteBuffer(halves, 2)}) {
    v1::SampleGammaRequest got;
    ASSERT_TRUE(ParseRequestBody(body, &got).ok());
    EXPECT_EQ(got.SerializeAsString(), bytes);
  }
  const std::string garbage("\x0a\xff\xff\xff\x0f garbage", 14);
  grpc::Slice bad(garbage);
  v1::SampleGammaRequest got;
  const absl::Status status = ParseRequestBody(grpc::ByteBuffer(&bad, 1), &got);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), BadBodyMessage("sampler.v1.SampleGammaRequest"));
}

// `bytes` as gRPC may hand them over: in one slice, or in slices of
// `slice_size` (an HTTP/2 frame's 16 KiB, or odd sizes that split varints).
grpc::ByteBuffer Body(const std::string& bytes, size_t slice_size) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += slice_size) {
    slices.emplace_back(bytes.data() + at,
                        std::min(slice_size, bytes.size() - at));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// A categorical request whose weights alone pass kPresizeFromBytes.
v1::SampleCategoricalRequest Large(bool float64, int values = 40'000) {
  v1::SampleCategoricalRequest r;
  r.set_categories(8);
  r.set_draws(3);
  r.set_seed(11);
  for (int i = 0; i < values; ++i) {
    if (float64) {
      r.mutable_values()->mutable_f64()->add_values(0.5 + i % 5);
    } else {
      r.mutable_values()->mutable_f32()->add_values(0.5f + i % 5);
    }
  }
  return r;
}

// Parses `bytes` as protobuf does and through ParseRequestBody, in one
// slice and in several sizes of slices: the same outcome, the same message.
template <typename Request>
void ExpectParsedAsProtobufDoes(const std::string& bytes) {
  ASSERT_GE(bytes.size(), kPresizeFromBytes);
  Request want;
  const bool valid = want.ParseFromString(bytes);
  for (size_t slice_size : {bytes.size(), size_t{16} << 10, size_t{7}}) {
    SCOPED_TRACE(slice_size);
    Request got;
    const absl::Status status = ParseRequestBody(Body(bytes, slice_size), &got);
    ASSERT_EQ(status.ok(), valid) << status;
    if (valid) {
      EXPECT_EQ(got.SerializeAsString(), want.SerializeAsString());
    } else {
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_EQ(status.message(),
                BadBodyMessage(Request::descriptor()->full_name()));
    }
  }
}

TEST(WireRequest, ReservesALargeUploadsWeightsExactly) {
  for (bool float64 : {false, true}) {
    SCOPED_TRACE(float64);
    const v1::SampleCategoricalRequest sent = Large(float64);
    const std::string bytes = sent.SerializeAsString();
    ExpectParsedAsProtobufDoes<v1::SampleCategoricalRequest>(bytes);
    v1::SampleCategoricalRequest got;
    ASSERT_TRUE(ParseRequestBody(Body(bytes, 16 << 10), &got).ok());
    // One allocation of the weights' size: no growth, no slack.
    if (float64) {
      EXPECT_EQ(got.values().f64().values().Capacity(), 40'000);
    } else {
      EXPECT_EQ(got.values().f32().values().Capacity(), 40'000);
    }

    v1::SampleCategoricalStreamRequest stream;
    *stream.mutable_request() = sent;
    stream.set_max_rows_per_chunk(100);
    const std::string stream_bytes = stream.SerializeAsString();
    ExpectParsedAsProtobufDoes<v1::SampleCategoricalStreamRequest>(
        stream_bytes);
    v1::SampleCategoricalStreamRequest got_stream;
    ASSERT_TRUE(
        ParseRequestBody(Body(stream_bytes, 16 << 10), &got_stream).ok());
    const v1::Reals& reals = got_stream.request().values();
    EXPECT_EQ(float64 ? reals.f64().values().Capacity()
                      : reals.f32().values().Capacity(),
              40'000);
  }
}

// Bodies no client library writes but protobuf accepts: fields repeated
// (sub-messages merge, packed runs append, the oneof's last list wins),
// unknown fields, a known field with another wire type; and bodies it
// refuses (cut short, a length past the end).
TEST(WireRequest, LargeBodiesOfEveryShapeParseAsProtobufDoes) {
  const std::string f32 = Large(false).SerializeAsString();
  const std::string f64 = Large(true).SerializeAsString();
  v1::SampleCategoricalRequest small_f32;
  small_f32.mutable_values()->mutable_f32()->add_values(2.0f);
  const std::string more = small_f32.SerializeAsString();
  v1::SampleCategoricalRequest empty_reals;
  empty_reals.mutable_values();
  const std::string empty = empty_reals.SerializeAsString();
  // Field 2 (values) as a varint, field 99 as fixed64 and as bytes.
  const std::string odd(
      "\x10\x05\x99\x06\x01\x02\x03\x04\x05\x06\x07\x08"
      "\x9a\x06\x02xy",
      17);
  const std::vector<std::string> valid = {
      f32 + f64,   f64 + f32,        f32 + more,      more + f32,
      f32 + empty, f64 + more + f64, odd + f32 + odd, f32 + f32};
  for (const std::string& bytes : valid) {
    ExpectParsedAsProtobufDoes<v1::SampleCategoricalRequest>(bytes);
    v1::SampleCategoricalRequest check;
    ASSERT_TRUE(check.ParseFromString(bytes));
  }
  const std::vector<std::string> invalid = {
      f32.substr(0, f32.size() - 3), f32 + std::string("\x12\xff\x7f", 3),
      f32 + std::string("\x0b", 1)};  // a group's start
  for (const std::string& bytes : invalid) {
    ExpectParsedAsProtobufDoes<v1::SampleCategoricalRequest>(bytes);
    v1::SampleCategoricalRequest check;
    ASSERT_FALSE(check.ParseFromString(bytes));
  }
}

// Arbitrary bytes where the walk reads (the fields before and around the
// weights' length), and bodies cut anywhere past the presize size: never
// a crash, never another outcome than protobuf's.
TEST(WireRequest, MangledLargeBodiesParseAsProtobufDoes) {
  v1::SampleCategoricalStreamRequest stream;
  *stream.mutable_request() = Large(false, 20'000);
  stream.set_max_rows_per_chunk(3);
  const std::string bytes = stream.SerializeAsString();
  std::mt19937 rng(13);
  for (int trial = 0; trial < 300; ++trial) {
    std::string mangled = bytes;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      // Mostly the first bytes (tags, lengths), sometimes anywhere.
      const size_t at = rng() % 4 == 0 ? rng() % mangled.size() : rng() % 24;
      mangled[at] = static_cast<char>(rng());
    }
    if (rng() % 3 == 0) {
      mangled.resize(kPresizeFromBytes +
                     rng() % (mangled.size() - kPresizeFromBytes));
    }
    SCOPED_TRACE(trial);
    ExpectParsedAsProtobufDoes<v1::SampleCategoricalStreamRequest>(mangled);
  }
}

}  // namespace
}  // namespace sampler::server

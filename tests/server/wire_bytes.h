// Tests only: the bytes a grpc::ByteBuffer holds, its slices joined.
#ifndef SAMPLER_TESTS_SERVER_WIRE_BYTES_H_
#define SAMPLER_TESTS_SERVER_WIRE_BYTES_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sampler::server {

inline std::string Bytes(const grpc::ByteBuffer& wire) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(wire.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

}  // namespace sampler::server

#endif  // SAMPLER_TESTS_SERVER_WIRE_BYTES_H_

// Request bodies parsed by raw handlers; see wire_request.h.
#include "server/wire_request.h"

#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/slice.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"

namespace sampler::server {
namespace {

// Merges `body` into `request` whose weights' storage is reserved, with the
// outcome of protobuf's parse of the body into a fresh message: parsed to
// the end, no tag 0 or end-group tag stopping it early
// (ConsumedEntireMessage). Through a CodedInputStream: the bounded merge
// from a stream may back up more than the last slice gRPC's reader handed
// out, which the reader does not allow (an assertion; a mangled body found
// it).
bool MergeReserved(const grpc::ByteBuffer& body,
                   google::protobuf::Message* request) {
  grpc::Slice single;
  if (body.TrySingleSlice(&single).ok()) {
    google::protobuf::io::CodedInputStream coded(
        single.begin(), static_cast<int>(single.size()));
    return request->MergeFromCodedStream(&coded) &&
           coded.ConsumedEntireMessage();
  }
  // The reader walks the buffer's slices; it needs a mutable buffer, and a
  // copy of one only adds references to its slices.
  grpc::ByteBuffer slices(body);
  grpc::ProtoBufferReader reader(&slices);
  if (!reader.status().ok()) return false;
  google::protobuf::io::CodedInputStream coded(&reader);
  return request->MergeFromCodedStream(&coded) && coded.ConsumedEntireMessage();
}

// A body's bytes across its slices, read forward: just enough of the wire
// format to find the length of the packed weights (FindPackedWeights).
class WireCursor {
 public:
  explicit WireCursor(const grpc::ByteBuffer& body) : size_(body.Length()) {
    (void)body.Dump(&slices_);
  }

  uint64_t position() const { return position_; }

  bool Varint(uint64_t* value) {
    *value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t byte = 0;
      if (!Byte(&byte)) return false;
      *value |= uint64_t{byte & 0x7fu} << shift;
      if (byte < 0x80) return true;
    }
    return false;
  }

  bool Skip(uint64_t n) {
    if (n > size_ - position_) return false;
    position_ += n;
    while (n > 0) {
      const size_t here = slices_[index_].size() - offset_;
      if (n < here) {
        offset_ += n;
        return true;
      }
      n -= here;
      ++index_;
      offset_ = 0;
    }
    return true;
  }

 private:
  bool Byte(uint8_t* byte) {
    while (index_ < slices_.size() && offset_ == slices_[index_].size()) {
      ++index_;
      offset_ = 0;
    }
    if (index_ == slices_.size()) return false;
    *byte = slices_[index_].begin()[offset_++];
    ++position_;
    return true;
  }

  std::vector<grpc::Slice> slices_;
  const uint64_t size_;
  uint64_t position_ = 0;
  size_t index_ = 0;   // the slice being read
  size_t offset_ = 0;  // within it
};

// Walks one message's fields up to `end`, calling `on_bytes(field,
// field_end)` at each length-delimited one (it may read into it; the walk
// skips what it leaves). False on anything these request messages cannot
// hold well-formed (groups, a length past the message's end): the parse
// then judges the body as it would have anyway.
template <typename OnBytes>
bool WalkMessage(WireCursor& in, uint64_t end, OnBytes on_bytes) {
  while (in.position() < end) {
    uint64_t tag = 0;
    uint64_t value = 0;
    if (!in.Varint(&tag) || in.position() > end) return false;
    switch (tag & 7) {
      case 0:  // varint
        if (!in.Varint(&value)) return false;
        break;
      case 1:  // fixed64
        if (!in.Skip(8)) return false;
        break;
      case 5:  // fixed32
        if (!in.Skip(4)) return false;
        break;
      case 2: {  // length-delimited
        if (!in.Varint(&value) || in.position() > end ||
            value > end - in.position()) {
          return false;
        }
        const uint64_t field_end = in.position() + value;
        if (!on_bytes(tag >> 3, field_end) || in.position() > field_end ||
            !in.Skip(field_end - in.position())) {
          return false;
        }
        break;
      }
      default:
        return false;
    }
  }
  return in.position() == end;
}

// Which list a Reals message ends with (its oneof's field number: f32 or
// f64; 0 none) and the bytes of packed values it will hold: parsing
// appends each packed run to the list, and a switch to the other list
// drops what came before, as the scan does.
struct PackedWeights {
  uint64_t list = 0;
  uint64_t bytes = 0;
};

bool ScanReals(WireCursor& in, uint64_t end, PackedWeights* found) {
  return WalkMessage(in, end, [&](uint64_t field, uint64_t list_end) {
    if (field != v1::Reals::kF32FieldNumber &&
        field != v1::Reals::kF64FieldNumber) {
      return true;
    }
    if (found->list != field) *found = PackedWeights{field, 0};
    return WalkMessage(in, list_end,
                       [&](uint64_t list_field, uint64_t packed_end) {
                         // The packed values, read by the walk's skip.
                         if (list_field == v1::FloatList::kValuesFieldNumber) {
                           found->bytes += packed_end - in.position();
                         }
                         return true;
                       });
  });
}

// The Reals message at `path` (field numbers from the request down to it)
// scanned; every occurrence of a field on the path merges into the one
// before, as parsing does.
bool FindPackedWeights(WireCursor& in, uint64_t end,
                       absl::Span<const uint64_t> path, PackedWeights* found) {
  if (path.empty()) return ScanReals(in, end, found);
  return WalkMessage(in, end, [&](uint64_t field, uint64_t field_end) {
    return field != path[0] ||
           FindPackedWeights(in, field_end, path.subspan(1), found);
  });
}

// ParseRequestBody with the weights' storage reserved first (wire_request.h):
// `reals` makes the Reals message at `path` in `request`, called only when
// the body holds packed weights there (so it sets nothing the parse would
// not set).
template <typename Request, typename RealsOf>
absl::Status ParseWithWeightsReserved(const grpc::ByteBuffer& body,
                                      Request* request,
                                      absl::Span<const uint64_t> path,
                                      RealsOf reals) {
  if (body.Length() < kPresizeFromBytes) {
    return ParseRequestBody(body,
                            static_cast<google::protobuf::Message*>(request));
  }
  WireCursor in(body);
  PackedWeights found;
  if (!FindPackedWeights(in, body.Length(), path, &found) || found.bytes == 0 ||
      found.bytes > uint64_t{std::numeric_limits<int>::max()}) {
    return ParseRequestBody(body,
                            static_cast<google::protobuf::Message*>(request));
  }
  request->Clear();
  const int bytes = static_cast<int>(found.bytes);
  if (found.list == v1::Reals::kF32FieldNumber) {
    reals(request)->mutable_f32()->mutable_values()->Reserve(
        bytes / static_cast<int>(sizeof(float)));
  } else {
    reals(request)->mutable_f64()->mutable_values()->Reserve(
        bytes / static_cast<int>(sizeof(double)));
  }
  if (MergeReserved(body, request)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      BadBodyMessage(request->GetDescriptor()->full_name()));
}

}  // namespace

std::string BadBodyMessage(absl::string_view request_type) {
  return absl::StrCat("the request body is not a valid ", request_type,
                      " message (protobuf parsing failed)");
}

absl::Status ParseRequestBody(const grpc::ByteBuffer& body,
                              google::protobuf::Message* request) {
  bool parsed = false;
  grpc::Slice single;
  if (body.TrySingleSlice(&single).ok()) {
    parsed = request->ParseFromArray(single.begin(),
                                     static_cast<int>(single.size()));
  } else {
    // The reader walks the buffer's slices; it needs a mutable buffer, and
    // a copy of one only adds references to its slices.
    grpc::ByteBuffer slices(body);
    grpc::ProtoBufferReader reader(&slices);
    parsed = reader.status().ok() && request->ParseFromZeroCopyStream(&reader);
  }
  if (parsed) return absl::OkStatus();
  return absl::InvalidArgumentError(
      BadBodyMessage(request->GetDescriptor()->full_name()));
}

absl::Status ParseRequestBody(const grpc::ByteBuffer& body,
                              v1::SampleCategoricalRequest* request) {
  static constexpr uint64_t kValues[] = {
      v1::SampleCategoricalRequest::kValuesFieldNumber};
  return ParseWithWeightsReserved(
      body, request, kValues,
      [](v1::SampleCategoricalRequest* r) { return r->mutable_values(); });
}

absl::Status ParseRequestBody(const grpc::ByteBuffer& body,
                              v1::SampleCategoricalStreamRequest* request) {
  static constexpr uint64_t kValues[] = {
      v1::SampleCategoricalStreamRequest::kRequestFieldNumber,
      v1::SampleCategoricalRequest::kValuesFieldNumber};
  return ParseWithWeightsReserved(
      body, request, kValues, [](v1::SampleCategoricalStreamRequest* r) {
        return r->mutable_request()->mutable_values();
      });
}

}  // namespace sampler::server

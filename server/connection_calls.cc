#include "server/connection_calls.h"

#include <functional>

namespace sampler::server {

ConnectionCalls::Shard& ConnectionCalls::ShardOf(const std::string& peer) {
  return shards_[std::hash<std::string>{}(peer) % kShards];
}

const ConnectionCalls::Shard& ConnectionCalls::ShardOf(
    const std::string& peer) const {
  return shards_[std::hash<std::string>{}(peer) % kShards];
}

ConnectionCalls::Entered ConnectionCalls::Enter(const std::string& peer) {
  Shard& shard = ShardOf(peer);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto& entry = *shard.calls.try_emplace(peer, 0).first;
  ++entry.second;
  Entered entered;
  entered.ticket.shard_ = &shard;
  entered.ticket.entry_ = &entry;
  entered.calls = entry.second;
  return entered;
}

void ConnectionCalls::Leave(const Ticket& ticket) {
  if (ticket.shard_ == nullptr) return;  // a ticket of no call
  std::lock_guard<std::mutex> lock(ticket.shard_->mu);
  if (--ticket.entry_->second > 0) return;
  ticket.shard_->calls.erase(ticket.shard_->calls.find(ticket.entry_->first));
}

int ConnectionCalls::Calls(const std::string& peer) const {
  const Shard& shard = ShardOf(peer);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.calls.find(peer);
  return it == shard.calls.end() ? 0 : it->second;
}

size_t ConnectionCalls::Connections() const {
  size_t n = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    n += shard.calls.size();
  }
  return n;
}

}  // namespace sampler::server

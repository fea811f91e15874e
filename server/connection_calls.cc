#include "server/connection_calls.h"

#include <algorithm>

namespace sampler::server {

ConnectionCalls::Shard& ConnectionCalls::ShardOf(const std::string& peer) {
  return shards_[std::hash<std::string>{}(peer) % kShards];
}

const ConnectionCalls::Shard& ConnectionCalls::ShardOf(
    const std::string& peer) const {
  return shards_[std::hash<std::string>{}(peer) % kShards];
}

void ConnectionCalls::SweepLocked(Shard& shard, Clock::time_point now) {
  for (auto it = shard.calls.begin(); it != shard.calls.end();) {
    if (it->second.in_server == 0 && now >= it->second.multiplexed_until) {
      it = shard.calls.erase(it);
    } else {
      ++it;
    }
  }
  shard.sweep_at = std::max(kMinSweepSize, 2 * shard.calls.size());
}

ConnectionCalls::Entered ConnectionCalls::Enter(const std::string& peer) {
  Shard& shard = ShardOf(peer);
  std::lock_guard<std::mutex> lock(shard.mu);
  if (shard.calls.size() >= shard.sweep_at) SweepLocked(shard, now_());
  auto& entry = *shard.calls.try_emplace(peer).first;
  Calls& calls = entry.second;
  ++calls.in_server;
  Entered entered;
  entered.ticket.shard_ = &shard;
  entered.ticket.entry_ = &entry;
  entered.calls = calls.in_server;
  if (calls.in_server >= 2) {
    calls.multiplexed_until = now_() + window_;
  } else if (calls.multiplexed_until == Clock::time_point{}) {
    entered.lone = true;
  } else if (now_() >= calls.multiplexed_until) {
    calls.multiplexed_until = Clock::time_point{};  // forgotten at Leave
    entered.lone = true;
  }
  return entered;
}

void ConnectionCalls::Leave(const Ticket& ticket) {
  if (ticket.shard_ == nullptr) return;  // a ticket of no call
  Shard& shard = *ticket.shard_;
  std::lock_guard<std::mutex> lock(shard.mu);
  Calls& calls = ticket.entry_->second;
  if (--calls.in_server > 0) return;
  // A connection that never multiplexed is forgotten at once; one that did
  // is kept for its window (swept later).
  if (calls.multiplexed_until == Clock::time_point{}) {
    shard.calls.erase(shard.calls.find(ticket.entry_->first));
  }
}

int ConnectionCalls::InServer(const std::string& peer) const {
  const Shard& shard = ShardOf(peer);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.calls.find(peer);
  return it == shard.calls.end() ? 0 : it->second.in_server;
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

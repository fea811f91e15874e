// Names the calling thread (Linux: /proc/PID/task/TID/comm, at most 15
// characters), so that a profile of the running server from /proc can tell
// its threads apart (bench/service/server_probe.py groups CPU time and
// context switches by these names: gRPC names its own threads; ours would
// otherwise all inherit the process's name, as the CUDA driver's do).
#ifndef SAMPLER_SERVER_THREAD_NAME_H_
#define SAMPLER_SERVER_THREAD_NAME_H_

#include <pthread.h>

namespace sampler::server {

// `name`: 15 characters at most (longer is cut, as the kernel would).
inline void NameThisThread(const char* name) {
  char cut[16] = {};
  for (int i = 0; i < 15 && name[i] != '\0'; ++i) cut[i] = name[i];
  pthread_setname_np(pthread_self(), cut);
}

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_THREAD_NAME_H_

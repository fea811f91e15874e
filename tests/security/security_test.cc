// Security tests: the real sampler-server as a child process with TLS,
// mutual TLS and bearer tokens, called over real gRPC on 127.0.0.1 with
// certificates made at test time by the openssl CLI (make_certs.sh).
//
// What they prove, suite by suite (each suite runs one server):
//   TlsTest: a client trusting the test CA gets answers (by IP and by host
//     name, the certificate's names are checked); a plaintext client, a
//     client trusting an unrelated CA and a client expecting another server
//     name are refused; refused handshakes leave the server serving.
//   MutualTlsTest: a client certificate from the test CA is accepted; no
//     client certificate, or one from an unrelated CA, is refused, as is a
//     plaintext client.
//   TokenTest (plaintext port): every method of sampler.v1.SamplerService
//     (taken from the descriptor, so a method added later is covered) answers
//     UNAUTHENTICATED without a token, with a wrong one, with a malformed
//     header or two headers, and is served with either token of the file,
//     before its request is parsed; health and reflection need no token;
//     refusals are counted in sampler_requests_total; no token reaches the
//     server's log or an error message.
//   CliTest (mutual TLS and a token together): samplerctl and
//     sampler-loadgen with --tls_ca_file, --tls_cert_file, --tls_key_file,
//     --tls_server_name and --token_file are served; without the token they
//     get UNAUTHENTICATED, except `samplerctl health`; without TLS flags
//     they are refused.
//   StartupTest: a missing, unreadable or malformed certificate, key, CA or
//     token file, a key of another certificate, an expired certificate, a
//     certificate without a key and a client CA without TLS stop the server
//     at once with exit code 1 and a message naming the flag;
//     --reflection=false turns reflection off.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/common/grpc_util.h"
#include "google/protobuf/descriptor.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "sampler/v1/sampler.grpc.pb.h"
#include "sampler/v1/sampler.pb.h"
#include "tests/integration/metrics_scrape.h"
#include "tests/integration/server_process.h"

namespace sampler::testing {
namespace {

namespace v1 = ::sampler::v1;
using ::grpc::StatusCode;
using ::sampler::client::ChannelSecurity;
using ::sampler::client::MakeChannel;

// A refused handshake fails at once; the deadline only keeps a broken
// server from hanging the test.
constexpr absl::Duration kCallTimeout = absl::Seconds(10);
constexpr char kToken1[] = "first-token-0123456789abcdef";
constexpr char kToken2[] = "second-token-fedcba9876543210";
constexpr char kWrongToken[] = "wrong-token-not-in-the-file";

std::string Env(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}
std::string ServerBinary() {
  return Env("SAMPLER_SERVER_BIN", SAMPLER_SERVER_BIN);
}

// ------------------------------------------------------------ the files --

// The certificates (make_certs.sh) and token files, made once in a fresh
// temporary directory that is removed at the end.
class Files : public ::testing::Environment {
 public:
  static std::string Path(const std::string& name) {
    return (dir_ / name).string();
  }

  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "sampler-security-XXXXXX")
            .string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr) << "mkdtemp " << pattern;
    dir_ = pattern;
    const std::string command =
        absl::StrCat("OPENSSL='", SAMPLER_OPENSSL, "' sh '", SAMPLER_MAKE_CERTS,
                     "' '", dir_.string(), "' 2>&1");
    const int status = std::system(command.c_str());
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << command << " failed (is the openssl CLI installed?)";
    Write("tokens", absl::StrCat("\n  ", kToken1, "  \r\n\n", kToken2, "\n"));
    Write("token1", absl::StrCat(kToken1, "\n"));
    Write("token2", kToken2);
    Write("wrong-token", kWrongToken);
    Write("empty-tokens", "\n   \n");
    Write("bad-tokens", absl::StrCat(kToken1, "\nhas a space\n"));
  }

  void TearDown() override {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }

 private:
  static void Write(const std::string& name, const std::string& text) {
    std::ofstream(Path(name), std::ios::binary) << text;
  }

  static std::filesystem::path dir_;
};
std::filesystem::path Files::dir_;

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  EXPECT_FALSE(text.empty()) << path;
  return text;
}

// ------------------------------------------------------------- plumbing --

// Without `metrics`, the metrics endpoint is off (its flag here comes after
// ServerProcess's): stopping the exposer adds some 2 s to each exit.
std::unique_ptr<ServerProcess> StartServer(std::vector<std::string> flags,
                                           bool metrics = false) {
  flags.push_back("--backend=cpu");
  flags.push_back("--worker_threads=1");
  if (!metrics) flags.push_back("--metrics_listen=");
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start(ServerBinary(), flags);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

void StopServer(std::unique_ptr<ServerProcess>& server) {
  if (server == nullptr) return;
  EXPECT_EQ(server->Stop(absl::Seconds(10)), 0) << server->Stderr();
  server.reset();
}

std::vector<std::string> TlsFlags() {
  return {"--tls_cert_file=" + Files::Path("server.pem"),
          "--tls_key_file=" + Files::Path("server.key")};
}
std::vector<std::string> MutualTlsFlags() {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--tls_client_ca_file=" + Files::Path("ca.pem"));
  return flags;
}

// A client's security: TLS trusting `ca` ("": plaintext), with the client
// certificate `cert` ("": none).
ChannelSecurity Client(const std::string& ca, const std::string& cert = "",
                       const std::string& token = "") {
  ChannelSecurity security;
  if (!ca.empty()) {
    security.tls = true;
    security.root_certs_pem = ReadFileOrDie(Files::Path(ca + ".pem"));
  }
  if (!cert.empty()) {
    security.cert_chain_pem = ReadFileOrDie(Files::Path(cert + ".pem"));
    security.private_key_pem = ReadFileOrDie(Files::Path(cert + ".key"));
  }
  security.token = token;
  return security;
}

// A fresh connection per channel, so that one test's handshake is not
// another's.
int g_channel = 0;
std::shared_ptr<grpc::Channel> Channel(const std::string& target,
                                       const ChannelSecurity& security) {
  return MakeChannel(target, ++g_channel, security);
}

void SetDeadline(grpc::ClientContext& context) {
  context.set_deadline(absl::ToChronoTime(absl::Now() + kCallTimeout));
}

std::string Describe(const grpc::Status& status) {
  return absl::StrCat(status.error_code(), ": ", status.error_message());
}

grpc::Status ServerInfo(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = v1::SamplerService::NewStub(channel);
  grpc::ClientContext context;
  SetDeadline(context);
  v1::GetServerInfoResponse response;
  grpc::Status status =
      stub->GetServerInfo(&context, v1::GetServerInfoRequest(), &response);
  if (status.ok() && response.version().empty()) {
    return grpc::Status(StatusCode::DATA_LOSS, "no version in the answer");
  }
  return status;
}

grpc::Status Health(const std::shared_ptr<grpc::Channel>& channel,
                    const std::string& service = "") {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  SetDeadline(context);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  if (status.ok() &&
      response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return grpc::Status(StatusCode::FAILED_PRECONDITION, "not SERVING");
  }
  return status;
}

// Calls `method` ("/package.Service/Method") with one message of raw bytes
// and the given metadata, whatever its streaming kind (a server stream
// that ends with an error before any message reads as that error).
grpc::Status RawCall(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
    const std::string& bytes,
    const std::vector<std::pair<std::string, std::string>>& metadata = {}) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  SetDeadline(context);
  for (const auto& [key, value] : metadata) context.AddMetadata(key, value);
  grpc::CompletionQueue cq;
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1);
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&context, method, request, &cq);
  call->StartCall();
  grpc::ByteBuffer response;
  grpc::Status status;
  call->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  cq.Next(&tag, &ok);  // the deadline bounds it
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return status;
}

// Every method of sampler.v1.SamplerService, from its descriptor.
std::vector<std::string> SamplerMethods() {
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          v1::SamplerService::service_full_name());
  EXPECT_NE(service, nullptr);
  if (service == nullptr) return {};
  std::vector<std::string> methods;
  for (int i = 0; i < service->method_count(); ++i) {
    methods.push_back(absl::StrCat("/", service->full_name(), "/",
                                   service->method(i)->name()));
  }
  return methods;
}

// grpc.reflection.v1alpha list_services ("*"), sent as one message.
grpc::Status Reflection(const std::shared_ptr<grpc::Channel>& channel) {
  return RawCall(channel,
                 "/grpc.reflection.v1alpha.ServerReflection/"
                 "ServerReflectionInfo",
                 std::string("\x3a\x01*", 3));
}

// A transport-level refusal: the call never reached a handler.
void ExpectRefused(const grpc::Status& status, const std::string& what) {
  EXPECT_EQ(status.error_code(), StatusCode::UNAVAILABLE)
      << what << ": " << Describe(status);
}

// ------------------------------------------------------------------ TLS --

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = StartServer(TlsFlags()); }
  static void TearDownTestSuite() { StopServer(server_); }
  void SetUp() override { ASSERT_NE(server_, nullptr); }
  static std::string ByName() {
    return absl::StrCat("localhost:", server_->port());
  }
  static std::unique_ptr<ServerProcess> server_;
};
std::unique_ptr<ServerProcess> TlsTest::server_;

TEST_F(TlsTest, ClientTrustingTheCaIsServed) {
  // By IP (the certificate's IP SAN) and by name (its DNS SAN).
  for (const std::string& target : {server_->address(), ByName()}) {
    auto channel = Channel(target, Client("ca"));
    EXPECT_TRUE(ServerInfo(channel).ok()) << target;
    EXPECT_TRUE(Health(channel).ok()) << target;
  }
  // A client certificate is not asked for, but does no harm.
  EXPECT_TRUE(
      ServerInfo(Channel(server_->address(), Client("ca", "client"))).ok());
}

TEST_F(TlsTest, ServerNameOverrideIsChecked) {
  ChannelSecurity security = Client("ca");
  security.server_name = "localhost";
  EXPECT_TRUE(ServerInfo(Channel(server_->address(), security)).ok());
  security.server_name = "sampler.example.com";  // not in the certificate
  ExpectRefused(ServerInfo(Channel(server_->address(), security)),
                "a server name the certificate does not carry");
}

TEST_F(TlsTest, PlaintextClientIsRefused) {
  auto channel = Channel(server_->address(), Client(""));
  ExpectRefused(ServerInfo(channel), "plaintext GetServerInfo");
  ExpectRefused(Health(channel), "plaintext health");
}

TEST_F(TlsTest, ClientTrustingAnotherCaIsRefused) {
  auto channel = Channel(server_->address(), Client("other-ca"));
  ExpectRefused(ServerInfo(channel), "client trusting another CA");
  ExpectRefused(Health(channel), "client trusting another CA, health");
}

TEST_F(TlsTest, RefusedHandshakesLeaveTheServerServing) {
  for (int i = 0; i < 3; ++i) {
    ExpectRefused(ServerInfo(Channel(server_->address(), Client(""))),
                  "plaintext");
    ExpectRefused(ServerInfo(Channel(server_->address(), Client("other-ca"))),
                  "another CA");
  }
  EXPECT_TRUE(ServerInfo(Channel(server_->address(), Client("ca"))).ok());
}

// ----------------------------------------------------------- mutual TLS --

class MutualTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = StartServer(MutualTlsFlags()); }
  static void TearDownTestSuite() { StopServer(server_); }
  void SetUp() override { ASSERT_NE(server_, nullptr); }
  static std::unique_ptr<ServerProcess> server_;
};
std::unique_ptr<ServerProcess> MutualTlsTest::server_;

TEST_F(MutualTlsTest, ClientCertificateFromTheCaIsServed) {
  auto channel = Channel(server_->address(), Client("ca", "client"));
  EXPECT_TRUE(ServerInfo(channel).ok());
  EXPECT_TRUE(Health(channel).ok());
}

TEST_F(MutualTlsTest, ClientWithoutCertificateIsRefused) {
  auto channel = Channel(server_->address(), Client("ca"));
  ExpectRefused(ServerInfo(channel), "no client certificate");
  ExpectRefused(Health(channel), "no client certificate, health");
}

TEST_F(MutualTlsTest, ClientCertificateFromAnotherCaIsRefused) {
  auto channel = Channel(server_->address(), Client("ca", "other-client"));
  ExpectRefused(ServerInfo(channel), "client certificate of another CA");
  ExpectRefused(Health(channel), "client certificate of another CA, health");
}

TEST_F(MutualTlsTest, PlaintextAndWrongCaClientsAreRefused) {
  ExpectRefused(ServerInfo(Channel(server_->address(), Client(""))),
                "plaintext");
  ExpectRefused(
      ServerInfo(Channel(server_->address(), Client("other-ca", "client"))),
      "client trusting another CA");
  EXPECT_TRUE(
      ServerInfo(Channel(server_->address(), Client("ca", "client"))).ok());
}

// --------------------------------------------------------------- tokens --

class TokenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = StartServer({"--auth_token_file=" + Files::Path("tokens")},
                          /*metrics=*/true);
  }
  static void TearDownTestSuite() {
    if (server_ != nullptr) {
      // Whatever the tests sent, no token reached the log.
      const std::string log = server_->Stderr();
      for (const char* token : {kToken1, kToken2, kWrongToken}) {
        EXPECT_FALSE(absl::StrContains(log, token)) << "token in the log";
      }
    }
    StopServer(server_);
  }
  void SetUp() override { ASSERT_NE(server_, nullptr); }
  static std::shared_ptr<grpc::Channel> Plain() {
    return Channel(server_->address(), Client(""));
  }
  static std::unique_ptr<ServerProcess> server_;
};
std::unique_ptr<ServerProcess> TokenTest::server_;

TEST_F(TokenTest, EveryMethodNeedsAToken) {
  const std::vector<std::string> methods = SamplerMethods();
  ASSERT_GE(methods.size(), 9u);
  const std::vector<
      std::pair<std::string, std::vector<std::pair<std::string, std::string>>>>
      refused = {
          {"no token", {}},
          {"wrong token",
           {{"authorization", absl::StrCat("Bearer ", kWrongToken)}}},
          {"empty token", {{"authorization", "Bearer "}}},
          {"another scheme",
           {{"authorization", absl::StrCat("Basic ", kToken1)}}},
          {"token without scheme", {{"authorization", kToken1}}},
          {"a prefix of a token",
           {{"authorization",
             absl::StrCat("Bearer ", std::string(kToken1).substr(0, 10))}}},
          {"two headers",
           {{"authorization", absl::StrCat("Bearer ", kToken1)},
            {"authorization", absl::StrCat("Bearer ", kToken2)}}},
      };
  auto channel = Plain();
  for (const std::string& method : methods) {
    for (const auto& [what, metadata] : refused) {
      const grpc::Status status = RawCall(channel, method, "", metadata);
      EXPECT_EQ(status.error_code(), StatusCode::UNAUTHENTICATED)
          << method << ", " << what << ": " << Describe(status);
      EXPECT_FALSE(absl::StrContains(status.error_message(), kToken1) ||
                   absl::StrContains(status.error_message(), kWrongToken))
          << "an error message repeats the token";
    }
    // Either token of the file, the scheme in any case: served. An empty
    // request is invalid for most methods: the token was checked first.
    for (const std::string& header :
         {absl::StrCat("Bearer ", kToken1), absl::StrCat("bearer ", kToken2),
          absl::StrCat("BEARER  ", kToken1, " ")}) {
      const grpc::Status status =
          RawCall(channel, method, "", {{"authorization", header}});
      EXPECT_TRUE(status.ok() ||
                  status.error_code() == StatusCode::INVALID_ARGUMENT)
          << method << " with a right token: " << Describe(status);
    }
  }
}

TEST_F(TokenTest, ClientLibrarySendsTheToken) {
  EXPECT_EQ(ServerInfo(Plain()).error_code(), StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ServerInfo(Channel(server_->address(), Client("", "", kWrongToken)))
                .error_code(),
            StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(
      ServerInfo(Channel(server_->address(), Client("", "", kToken2))).ok());
}

TEST_F(TokenTest, HealthAndReflectionNeedNoToken) {
  auto channel = Plain();
  EXPECT_TRUE(Health(channel).ok());
  EXPECT_TRUE(Health(channel, "sampler.v1.SamplerService").ok());
  const grpc::Status reflection = Reflection(channel);
  EXPECT_TRUE(reflection.ok()) << Describe(reflection);
}

TEST_F(TokenTest, RefusalsAreCounted) {
  const std::string series =
      "sampler_requests_total{code=\"UNAUTHENTICATED\",method="
      "\"GetServerInfo\"}";
  absl::StatusOr<std::string> before =
      HttpGet(server_->metrics_port(), "/metrics");
  ASSERT_TRUE(before.ok()) << before.status();
  const double count = MetricsText(*before).ValueOr0(series);
  EXPECT_EQ(ServerInfo(Plain()).error_code(), StatusCode::UNAUTHENTICATED);
  absl::StatusOr<std::string> after =
      HttpGet(server_->metrics_port(), "/metrics");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(MetricsText(*after).ValueOr0(series), count + 1) << *after;
}

// ----------------------------------------- the command-line tools' flags --

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs argv through the shell, bounded by coreutils' timeout.
CommandResult RunCommand(const std::vector<std::string>& argv) {
  std::vector<std::string> quoted;
  for (const std::string& a : argv) quoted.push_back("'" + a + "'");
  const std::string command =
      absl::StrCat("timeout -k 5 60 ", absl::StrJoin(quoted, " "), " 2>&1");
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) {
    result.output.append(buf, n);
  }
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<std::string> flags = MutualTlsFlags();
    flags.push_back("--auth_token_file=" + Files::Path("tokens"));
    server_ = StartServer(flags);
  }
  static void TearDownTestSuite() { StopServer(server_); }
  void SetUp() override { ASSERT_NE(server_, nullptr); }

  // The target by IP, the certificate checked against "localhost".
  static std::vector<std::string> Secure(bool token = true) {
    std::vector<std::string> flags = {
        "--target=" + server_->address(),
        "--tls_ca_file=" + Files::Path("ca.pem"),
        "--tls_cert_file=" + Files::Path("client.pem"),
        "--tls_key_file=" + Files::Path("client.key"),
        "--tls_server_name=localhost"};
    if (token) flags.push_back("--token_file=" + Files::Path("token1"));
    return flags;
  }
  static CommandResult Ctl(std::vector<std::string> args,
                           const std::vector<std::string>& flags) {
    args.insert(args.begin(), Env("SAMPLERCTL_BIN", SAMPLERCTL_BIN));
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--timeout=10s");
    return RunCommand(args);
  }
  static std::unique_ptr<ServerProcess> server_;
};
std::unique_ptr<ServerProcess> CliTest::server_;

TEST_F(CliTest, SamplerctlWithEveryFlagIsServed) {
  CommandResult info = Ctl({"info"}, Secure());
  EXPECT_EQ(info.exit_code, 0) << info.output;
  EXPECT_TRUE(absl::StrContains(info.output, "version")) << info.output;
  CommandResult gamma =
      Ctl({"gamma", "--shape=2", "--count=1000", "--seed=7"}, Secure());
  EXPECT_EQ(gamma.exit_code, 0) << gamma.output;
  CommandResult stream = Ctl(
      {"boards", "--stream", "--rows=5", "--cols=5", "--stones=3,3"}, Secure());
  EXPECT_EQ(stream.exit_code, 0) << stream.output;
  CommandResult health = Ctl({"health"}, Secure());
  EXPECT_EQ(health.exit_code, 0) << health.output;
}

TEST_F(CliTest, SamplerctlWithoutTokenIsUnauthenticatedButHealthWorks) {
  CommandResult info = Ctl({"info"}, Secure(/*token=*/false));
  EXPECT_EQ(info.exit_code, 1) << info.output;
  EXPECT_TRUE(absl::StrContains(info.output, "UNAUTHENTICATED")) << info.output;
  std::vector<std::string> wrong = Secure(false);
  wrong.push_back("--token_file=" + Files::Path("wrong-token"));
  CommandResult wrong_info = Ctl({"info"}, wrong);
  EXPECT_EQ(wrong_info.exit_code, 1) << wrong_info.output;
  EXPECT_TRUE(absl::StrContains(wrong_info.output, "UNAUTHENTICATED"))
      << wrong_info.output;
  EXPECT_FALSE(absl::StrContains(wrong_info.output, kWrongToken));
  CommandResult health =
      Ctl({"health", "--service=sampler.v1.SamplerService"}, Secure(false));
  EXPECT_EQ(health.exit_code, 0) << health.output;
}

TEST_F(CliTest, SamplerctlWithoutTlsFlagsIsRefused) {
  CommandResult plain =
      Ctl({"health"}, {"--target=" + server_->address(),
                       "--token_file=" + Files::Path("token1")});
  EXPECT_EQ(plain.exit_code, 1) << plain.output;
  EXPECT_TRUE(absl::StrContains(plain.output, "UNAVAILABLE")) << plain.output;
  // TLS, but no client certificate.
  CommandResult no_cert =
      Ctl({"health"}, {"--target=" + server_->address(),
                       "--tls_ca_file=" + Files::Path("ca.pem"),
                       "--tls_server_name=localhost"});
  EXPECT_EQ(no_cert.exit_code, 1) << no_cert.output;
}

TEST_F(CliTest, SamplerctlFlagErrorsAreUsageErrors) {
  CommandResult missing =
      Ctl({"info"}, {"--target=" + server_->address(),
                     "--tls_ca_file=" + Files::Path("no-such-file.pem")});
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_TRUE(absl::StrContains(missing.output, "--tls_ca_file"))
      << missing.output;
  CommandResult half =
      Ctl({"info"}, {"--target=" + server_->address(),
                     "--tls_cert_file=" + Files::Path("client.pem")});
  EXPECT_EQ(half.exit_code, 2) << half.output;
  CommandResult no_token =
      Ctl({"info"}, {"--target=" + server_->address(),
                     "--token_file=" + Files::Path("empty-tokens")});
  EXPECT_EQ(no_token.exit_code, 2) << no_token.output;
  EXPECT_TRUE(absl::StrContains(no_token.output, "--token_file"))
      << no_token.output;
}

TEST_F(CliTest, LoadgenWithEveryFlagIsServed) {
  std::vector<std::string> args = {Env("LOADGEN_BIN", LOADGEN_BIN),
                                   "--rpc=gamma",
                                   "--requests=20",
                                   "--concurrency=2",
                                   "--channels=2",
                                   "--progress=false",
                                   "--connect_timeout=10s"};
  std::vector<std::string> flags = Secure();
  args.insert(args.end(), flags.begin(), flags.end());
  CommandResult ok = RunCommand(args);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_TRUE(absl::StrContains(ok.output, "20 ok")) << ok.output;

  // Connected (TLS is right) but every call refused for want of a token.
  args.erase(args.end() - 1);
  CommandResult unauthenticated = RunCommand(args);
  EXPECT_EQ(unauthenticated.exit_code, 1) << unauthenticated.output;
  EXPECT_TRUE(absl::StrContains(unauthenticated.output, "UNAUTHENTICATED"))
      << unauthenticated.output;
}

// -------------------------------------------------------------- startup --

// Starts a server that should refuse to start; returns its output.
std::string StartupFailure(const std::vector<std::string>& flags) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start(ServerBinary(), flags, absl::Seconds(20));
  if (server.ok()) {
    ADD_FAILURE() << "started with " << absl::StrJoin(flags, " ");
    (*server)->Stop(absl::Seconds(10));
    return "";
  }
  return std::string(server.status().message());
}

TEST(StartupTest, BadSecurityFilesStopTheServer) {
  const std::string cert = "--tls_cert_file=" + Files::Path("server.pem");
  const std::string key = "--tls_key_file=" + Files::Path("server.key");
  const std::string missing = Files::Path("no-such-file");
  struct Case {
    std::vector<std::string> flags;
    std::string flag_named;
  };
  const std::vector<Case> cases = {
      {{cert}, "--tls_key_file"},
      {{key}, "--tls_cert_file"},
      {{"--tls_cert_file=" + missing, key}, "--tls_cert_file"},
      {{"--tls_cert_file=" + Files::Path("garbage.pem"), key},
       "--tls_cert_file"},
      {{cert, "--tls_key_file=" + missing}, "--tls_key_file"},
      {{cert, "--tls_key_file=" + Files::Path("garbage.pem")},
       "--tls_key_file"},
      // The client's key with the server's certificate.
      {{cert, "--tls_key_file=" + Files::Path("client.key")}, "--tls_key_file"},
      {{"--tls_cert_file=" + Files::Path("expired.pem"), key},
       "--tls_cert_file"},
      {{cert, key, "--tls_client_ca_file=" + missing}, "--tls_client_ca_file"},
      {{cert, key, "--tls_client_ca_file=" + Files::Path("garbage.pem")},
       "--tls_client_ca_file"},
      {{"--tls_client_ca_file=" + Files::Path("ca.pem")},
       "--tls_client_ca_file"},
      {{"--auth_token_file=" + missing}, "--auth_token_file"},
      {{"--auth_token_file=" + Files::Path("empty-tokens")},
       "--auth_token_file"},
      {{"--auth_token_file=" + Files::Path("bad-tokens")}, "--auth_token_file"},
  };
  for (const Case& c : cases) {
    const std::string output = StartupFailure(c.flags);
    EXPECT_TRUE(absl::StrContains(output, "exited with 1")) << output;
    EXPECT_TRUE(absl::StrContains(output, c.flag_named))
        << "no mention of " << c.flag_named << ":\n"
        << output;
    EXPECT_FALSE(absl::StrContains(output, kToken1)) << output;
  }
}

TEST(StartupTest, ReflectionCanBeTurnedOff) {
  std::unique_ptr<ServerProcess> on = StartServer({});
  ASSERT_NE(on, nullptr);
  EXPECT_TRUE(Reflection(Channel(on->address(), Client(""))).ok());
  StopServer(on);
  std::unique_ptr<ServerProcess> off = StartServer({"--reflection=false"});
  ASSERT_NE(off, nullptr);
  {
    auto channel = Channel(off->address(), Client(""));
    EXPECT_EQ(Reflection(channel).error_code(), StatusCode::UNIMPLEMENTED);
    EXPECT_TRUE(Health(channel).ok());
    EXPECT_TRUE(ServerInfo(channel).ok());
  }
  StopServer(off);
}

}  // namespace
}  // namespace sampler::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new sampler::testing::Files);
  return RUN_ALL_TESTS();
}

#include "server/tls.h"

#include <grpcpp/security/server_credentials.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sampler/kernels/status_macros.h"

namespace sampler::server {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* x509) const { X509_free(x509); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

absl::StatusOr<std::string> ReadFlagFile(const char* flag,
                                         const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, ": cannot read ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": cannot read ", path));
  }
  return contents.str();
}

BioPtr MemoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// Every certificate of a PEM file, in order (none if it holds none).
std::vector<X509Ptr> ParseCertificates(const std::string& pem) {
  std::vector<X509Ptr> certs;
  BioPtr bio = MemoryBio(pem);
  while (bio != nullptr) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (cert == nullptr) break;
    certs.push_back(std::move(cert));
  }
  ERR_clear_error();  // the end of the file reads as an error
  return certs;
}

// Refuses to ask for a passphrase (OpenSSL would prompt on the terminal).
int NoPassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) {
  return -1;
}

absl::StatusOr<std::vector<X509Ptr>> ReadCertificates(const char* flag,
                                                      const std::string& path,
                                                      std::string* pem) {
  SAMPLER_ASSIGN_OR_RETURN(std::string text, ReadFlagFile(flag, path));
  std::vector<X509Ptr> certs = ParseCertificates(text);
  if (certs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": ", path,
                     " holds no PEM certificate (-----BEGIN "
                     "CERTIFICATE-----)"));
  }
  *pem = std::move(text);
  return certs;
}

}  // namespace

absl::StatusOr<ServerSecurity> ServerSecurityFromFiles(const TlsFiles& files) {
  ServerSecurity security;
  if (files.cert_file.empty() != files.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert_file and --tls_key_file go together: give both (TLS) or "
        "neither (plaintext)");
  }
  if (files.cert_file.empty()) {
    if (!files.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls_client_ca_file needs TLS: give --tls_cert_file and "
          "--tls_key_file too");
    }
    security.credentials = grpc::InsecureServerCredentials();
    security.description = "plaintext";
    return security;
  }

  std::string cert_pem;
  SAMPLER_ASSIGN_OR_RETURN(
      const std::vector<X509Ptr> chain,
      ReadCertificates("tls_cert_file", files.cert_file, &cert_pem));

  SAMPLER_ASSIGN_OR_RETURN(std::string key_pem,
                           ReadFlagFile("tls_key_file", files.key_file));
  KeyPtr key;
  if (BioPtr bio = MemoryBio(key_pem); bio != nullptr) {
    key.reset(
        PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr));
  }
  ERR_clear_error();
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_key_file: ", files.key_file,
                     " holds no unencrypted PEM private key"));
  }
  if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls_key_file: the key in ", files.key_file,
        " does not belong to the first certificate in --tls_cert_file ",
        files.cert_file));
  }
  if (X509_cmp_current_time(X509_get0_notAfter(chain.front().get())) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_cert_file: the certificate in ", files.cert_file,
                     " has expired"));
  }

  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  security.tls = true;
  security.description = "TLS";
  if (!files.client_ca_file.empty()) {
    std::string ca_pem;
    SAMPLER_ASSIGN_OR_RETURN(
        const std::vector<X509Ptr> cas,
        ReadCertificates("tls_client_ca_file", files.client_ca_file, &ca_pem));
    options.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    options.pem_root_certs = std::move(ca_pem);
    security.description = absl::StrCat(
        "mutual TLS (client certificates required, verified against ",
        cas.size(), cas.size() == 1 ? " CA)" : " CAs)");
  }
  options.pem_key_cert_pairs.push_back(
      {std::move(key_pem), std::move(cert_pem)});
  security.credentials = grpc::SslServerCredentials(options);
  return security;
}

}  // namespace sampler::server

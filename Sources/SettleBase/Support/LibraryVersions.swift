import CCurl
import COpenSSL

/// The C libraries this target links, as loaded at run time (a distribution may update them
/// under settle), for `settle --version`.
package enum LibraryVersions {
    package static var curl: String { settle_curl_version_info().pointee.version.map { String(cString: $0) } ?? "?" }
    package static var openSSL: String { String(cString: OpenSSL_version(Int32(OPENSSL_VERSION))) }
}

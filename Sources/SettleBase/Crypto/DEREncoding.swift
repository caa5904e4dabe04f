/// OpenSSL's `i2d_*` encoders, called the one way that needs no OpenSSL-owned buffer: "if *out
/// is NULL … returns the length", so measure first, then encode into our own bytes (nothing to
/// release with `OPENSSL_free`, a macro Swift cannot call). https://docs.openssl.org/3.0/man3/d2i_X509/
enum DEREncoding {
    /// The bytes `encode` writes, or nil when it cannot measure or writes another length.
    /// `encode` is one `i2d_*` call: given nil it returns the length, given a cursor it writes.
    static func bytes(_ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8]? {
        let length = encode(nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return encode(&cursor)
        }
        return written == length ? der : nil
    }
}

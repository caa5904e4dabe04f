extension Subprocess {
    /// Keeps the first `limit` bytes of a child's output and counts the rest as discarded.
    ///
    /// The rest must still be read (and is, by the caller): a child blocked on a full
    /// pipe would never exit, and would then be reported as a timeout it did not cause.
    package struct OutputCollector {
        package let limit: Int
        private(set) var bytes: [UInt8] = []
        private(set) var truncated = false

        package init(limit: Int) {
            self.limit = max(0, limit)
            bytes.reserveCapacity(min(self.limit, 64 * 1024))
        }

        package mutating func append(_ chunk: UnsafeRawBufferPointer) {
            let room = limit - bytes.count
            if chunk.count > room {
                truncated = true
            }
            bytes.append(contentsOf: chunk.prefix(max(0, room)))
        }

        /// The kept bytes as text, never more than `limit` bytes of UTF-8, and whether
        /// anything was cut. Invalid UTF-8 becomes U+FFFD; a character merely cut in half by
        /// the limit is dropped instead (it was valid, we cut it). As each U+FFFD takes 3
        /// bytes, repaired garbage can outgrow the limit, and is then cut again.
        package var textAndTruncation: (text: String, truncated: Bool) {
            let end = truncated ? Self.endOfCompleteUTF8(bytes) : bytes.count
            let text = String(decoding: bytes[..<end], as: UTF8.self)
            guard text.utf8.count > limit else { return (text, truncated) }
            var kept = String.UnicodeScalarView()
            var keptBytes = 0
            for scalar in text.unicodeScalars {
                keptBytes += UTF8.width(scalar)
                if keptBytes > limit { break }
                kept.append(scalar)
            }
            return (String(kept), true)
        }

        /// The length of `bytes` without a trailing, incomplete UTF-8 sequence.
        package static func endOfCompleteUTF8(_ bytes: [UInt8]) -> Int {
            var leadIndex = bytes.count - 1
            var continuationBytes = 0
            // A sequence is at most 4 bytes: a lead byte and up to 3 continuations (10xxxxxx).
            while leadIndex >= 0, continuationBytes < 3, bytes[leadIndex] & 0xC0 == 0x80 {
                leadIndex -= 1
                continuationBytes += 1
            }
            guard leadIndex >= 0 else { return bytes.count }
            let lead = bytes[leadIndex]
            let expected = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1
            return expected > continuationBytes + 1 ? leadIndex : bytes.count
        }
    }
}

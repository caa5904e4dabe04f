import Foundation
import Synchronization
import SettleBase

/// The `x5c` (leaf, intermediate) pairs a `SignedDataVerifier` has already checked
/// against its roots, so that a token signed by a known leaf costs one P-256 signature
/// check instead of two certificate parses and two P-384 ones (issue 11).
///
/// An entry records only what is true of the pair whatever the time: its extensions, its
/// names, its signatures up to a configured root, the CA flag and Apple's marker OIDs. The
/// one time-dependent check, validity at the token's `signedDate`, is kept per token: the
/// entry holds the span in which all three certificates are valid, and a token outside it
/// takes the full path, which refuses it with the precise reason.
///
/// Keyed by the certificates' DER bytes, so only a byte-identical pair hits. Bounded:
/// Apple rotates leaves a few times a year, so a handful of entries covers a daemon's life,
/// and a stream of distinct chains (an attacker's) can grow it no further than `capacity`.
package final class VerifiedChainCache: Sendable {
    package struct Key: Hashable {
        package let leaf: Data
        package let intermediate: Data
    }

    package struct Entry: Sendable {
        /// The leaf's public key, the one that signs tokens.
        package let leafKey: ES256PublicKey
        /// Where leaf, intermediate and root are all valid (inclusive).
        package let validity: ClosedRange<Date>
    }

    package static let defaultCapacity = 16

    package let capacity: Int
    private let entries = Mutex<[Key: Entry]>([:])

    package init(capacity: Int = VerifiedChainCache.defaultCapacity) {
        precondition(capacity > 0, "a chain cache needs room for one entry")
        self.capacity = capacity
    }

    package func entry(for key: Key) -> Entry? {
        entries.withLock { $0[key] }
    }

    package func insert(_ entry: Entry, for key: Key) {
        entries.withLock { entries in
            if entries[key] == nil, entries.count >= capacity, let victim = entries.keys.first {
                // Any entry will do: a legitimate chain that is evicted costs one full
                // verification the next time it is seen.
                entries[victim] = nil
            }
            entries[key] = entry
        }
    }

    package var count: Int { entries.withLock { $0.count } }
}

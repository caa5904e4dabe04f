import Foundation
import SettleBase

/// A bearer purchase token: the proof an app gets from a store's billing library and the key of
/// the store's purchase calls (Google Play, Huawei and ONE store issue one).
///
/// Whoever holds it can read, acknowledge and consume the purchase, so it is a bearer secret:
/// this type's description, debug description and mirror show only a fingerprint (the first
/// 12 hex digits of its SHA-256), which support can match against without learning the token.
/// Only `value` is the token, for building the request that needs it.
package struct PurchaseToken: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package let value: String

    /// Longer than any token a store issues (they are a few hundred characters at most) by a wide margin.
    package static let maxLength = 4096

    /// Nil for text that cannot be a token: empty, too long, or holding anything but printable
    /// ASCII without spaces (it goes into a URL path and must not change the path's meaning).
    package init?(_ value: String) {
        guard !value.isEmpty, value.utf8.count <= PurchaseToken.maxLength,
              value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        self.value = value
    }

    /// "token:" and 12 hex digits of SHA-256: stable, short, and no help to anyone wanting the token.
    package var fingerprint: String {
        "token:" + String(SHA256.hex(Data(value.utf8)).prefix(12))
    }

    package var description: String { fingerprint }
    package var debugDescription: String { "PurchaseToken(\(fingerprint))" }
    package var customMirror: Mirror { Mirror(self, children: ["fingerprint": fingerprint]) }
}

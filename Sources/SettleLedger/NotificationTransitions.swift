/// Where the notification transitions' constants live (they are the same for every engine).
package enum NotificationTransitions {
    /// Apple answers refund requests only within 12 hours (apple-protocol.md 4).
    package static let consumptionDeadlineSeconds: Int64 = 12 * 3600

    /// Order ids settle makes from Apple's notifications; a backend may not use them.
    package static let appleOrderIdPrefix = "apple-"

    package static func appleOrderId(_ transactionId: String) -> String { appleOrderIdPrefix + transactionId }
}

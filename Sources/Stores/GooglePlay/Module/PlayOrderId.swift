/// Order ids settle makes for Google Play purchases nobody enqueued (found through RTDN):
/// `play-` and Google's order id. Backends may not use the prefix.
package enum PlayOrderId {
    package static let prefix = "play-"
}

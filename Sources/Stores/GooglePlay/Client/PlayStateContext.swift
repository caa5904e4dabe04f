import SettleModel

/// What Google's answer said of a subscription on hold or in its grace period (the declined
/// renewal it keeps retrying, and until when the customer keeps access), learned while verifying
/// an order: the Google Play module writes it to the order's history, where `settle status ORDER`,
/// the console and the customer view read it. Google's words, never settle's guess.
package struct PlayStateContext: LearnedFact, Equatable {
    package var text: String

    package init(_ text: String) {
        self.text = text
    }
}

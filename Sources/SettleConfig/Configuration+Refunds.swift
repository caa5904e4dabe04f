import SettleBase

extension Configuration {
    /// `refunds`: when a customer's refund history (their refunds, revocations and chargebacks in
    /// the last 90 days, any store) flags them, and whether a flagged customer's next grant waits
    /// for a person. Absent: nobody is held; the overview flags customers from 3 refunds.
    package struct Refunds: Sendable, Equatable {
        /// `refunds.flag_after` when neither key is set.
        package static let defaultFlagAfter = 3
        /// The largest threshold either key takes: a number past it is a typo, not a policy.
        package static let maximum = 10_000

        /// `refunds.hold_after`: a verified order of a buyer with at least this many refunds goes to
        /// `needs_attention` (`repeat_refunder`) instead of the hook. Nil: never held.
        package var holdAfter: Int? = nil
        /// `refunds.flag_after`: from how many refunds a customer is listed on the overview and in
        /// `settle status`; `hold_after` when only that is set, else 3.
        package var flagAfter: Int = defaultFlagAfter

        /// `settle check-config`'s line.
        package var text: String {
            "refunds: customers flagged from \(flagAfter) refunds in 90 days; "
                + (holdAfter.map { "a grant waits for a person from \($0) (refunds.hold_after)" }
                    ?? "no grant held (refunds.hold_after unset)")
        }

        package init(holdAfter: Int? = nil, flagAfter: Int? = nil) {
            self.holdAfter = holdAfter
            self.flagAfter = flagAfter ?? holdAfter ?? Self.defaultFlagAfter
        }
    }
}

extension ConfigurationDecoder {
    /// `refunds`: both thresholds whole numbers from 1 to 10,000; `flag_after` never above
    /// `hold_after` (a customer held for their refunds is always among the flagged ones).
    package func decodeRefunds(_ object: ConfigObject) throws(ConfigError) -> Configuration.Refunds {
        var o = object
        let range = 1...Configuration.Refunds.maximum
        // Every problem at once: a wrong value never hides a mistyped key beside it.
        var problems: [String] = []
        func threshold(_ key: String) -> Int? {
            guard o.value(key) != nil else { return nil }
            do {
                return try o.integer(key, default: 0, range: range)
            } catch {
                problems.append(error.message)
                return nil
            }
        }
        let hold = threshold("hold_after")
        let flag = threshold("flag_after")
        if let unknown = o.unknownKeys() { problems.insert(unknown, at: 0) }
        if let hold, let flag, flag > hold {
            problems.append("\(o.name("flag_after")): \(flag) is over hold_after (\(hold)); "
                            + "a customer held for their refunds would not be listed as flagged")
        }
        guard problems.isEmpty else { throw ConfigError(problems.joined(separator: "\n")) }
        return Configuration.Refunds(holdAfter: hold, flagAfter: flag)
    }
}

import SettleBase
import SettleConfig

extension Configuration {
    /// Answers to `CONSUMPTION_REQUEST` (Send Consumption Information v2), opt-in.
    package struct ConsumptionConfiguration: Sendable, Equatable {
        /// Apple's refund preference values (ConsumptionRequest.refundPreference).
        package enum RefundPreference: String, Sendable, CaseIterable {
            case decline = "DECLINE"
            case grantFull = "GRANT_FULL"
            case grantProrated = "GRANT_PRORATED"
        }
        package var respond = false
        package var refundPreference: RefundPreference?
        package var sampleContentProvided = false
    }

    /// `consumption` as its decoder left it (`ConfigurationSection.consumption`); absent: every default.
    package var consumption: ConsumptionConfiguration {
        get { storeSetting(ConfigurationSection.consumptionKey) ?? ConsumptionConfiguration() }
        set { storeSettings[ConfigurationSection.consumptionKey] = newValue }
    }
}

extension ConfigurationSection {
    static let consumptionKey = "consumption"

    /// `consumption`: how refund requests are answered; alone it verifies no order.
    package static let consumption = ConfigurationSection(
        key: consumptionKey,
        decode: { (object, decoder) throws(ConfigError) in try decoder.decodeConsumption(object) },
        configuresStore: false)
}

extension ConfigurationDecoder {
    func decodeConsumption(_ object: ConfigObject) throws(ConfigError) -> Configuration.ConsumptionConfiguration {
        var o = object
        var consumption = Configuration.ConsumptionConfiguration()
        consumption.respond = try o.bool("respond", default: false)
        // Apple accepts consumption data only with the customer's consent; the operator states it.
        let consented = try o.bool("customer_consented", default: false)
        if consumption.respond && !consented {
            throw ConfigError("\(o.name("customer_consented")): must be true when respond is true (Apple requires the customer's consent)")
        }
        if let text = try o.string("refund_preference") {
            guard let preference = Configuration.ConsumptionConfiguration.RefundPreference(rawValue: text) else {
                let allowed = Configuration.ConsumptionConfiguration.RefundPreference.allCases.map { "\"\($0.rawValue)\"" }
                throw ConfigError("\(o.name("refund_preference")): \"\(text)\" is not one of \(allowed.joined(separator: ", "))")
            }
            consumption.refundPreference = preference
        }
        consumption.sampleContentProvided = try o.bool("sample_content_provided", default: false)
        try o.rejectUnknownKeys()
        return consumption
    }
}

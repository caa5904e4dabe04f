import SettleBase
import SettleConfig
import SettleEngine

/// Support's lookup of an Apple order id (the customer's receipt e-mail) through Look Up Order ID.
extension AppStoreModule {
    package static func isOrderId(_ text: String) -> Bool { AppleOrderLookup.isOrderId(text) }

    package static func orderLookup(_ configuration: Configuration, time: any TimeSource,
                                    pacer: Pacer) throws(ConfigError) -> (any StoreOrderLookup)? {
        try AppleOrderLookup.configured(configuration, time: time, pacer: pacer)
    }
}

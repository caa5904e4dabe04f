import SettleBase
import SettleConfig
import SettleEngine

/// Support's lookup of a Google order id (`GPA.…`, the customer's receipt e-mail) through `orders.get`.
extension GooglePlayModule {
    package static func isOrderId(_ text: String) -> Bool { GooglePlayOrderLookup.isOrderId(text) }

    package static func orderLookup(_ configuration: Configuration, time: any TimeSource,
                                    pacer: Pacer) throws(ConfigError) -> (any StoreOrderLookup)? {
        try GooglePlayOrderLookup.configured(configuration, time: time, pacer: pacer)
    }
}

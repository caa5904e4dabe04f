import SettleBase

/// The identifiers of the first two stores, which code outside their folders still names (issue
/// 33 takes the last of it away); their descriptors are their client targets', registered by
/// their modules like any store's.
extension Store {
    package static let appStore = Store(rawValue: "app_store")
    package static let googlePlay = Store(rawValue: "google_play")
}


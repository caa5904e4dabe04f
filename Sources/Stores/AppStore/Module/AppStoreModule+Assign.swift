import SettleModel
import SettleConfig
import SettleEngine

/// `settle assign` of an App Store purchase: once the pass has verified it as the user's, Apple
/// is asked to set the user's appAccountToken on it (Set App Account Token), so its renewals and
/// Apple's notifications of them bind by themselves.
extension AppStoreModule {
    /// The user's own token, when the binding gives users one (`user_id` with a UUID user id, or
    /// `uuid5`) and `server_api` is there to call. A token the order carries (`order`) is
    /// Apple's, not the user's: none.
    package static func tokenToSet(assigning order: Order, to user: String,
                                   _ configuration: Configuration) -> (token: String, notice: String)? {
        guard configuration.serverAPI != nil, [.userId, .uuid5].contains(configuration.userBinding.tokenSource) else { return nil }
        var assigned = order
        assigned.userId = user
        guard let token = configuration.userBinding.expectedToken(for: assigned) else { return nil }
        return (token, "once the purchase is verified as theirs, Apple is asked to set appAccountToken \(token) on it "
                       + "(Set App Account Token), so its renewals bind by themselves")
    }
}

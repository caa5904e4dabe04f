import Foundation
import SettleBase

/// One Cloud Pub/Sub push delivery of a Play notification: the body Pub/Sub POSTs.
/// https://cloud.google.com/pubsub/docs/push#receive_push
///
/// Any 2xx acknowledges it; Pub/Sub redelivers anything else and may deliver twice anyway, so
/// `messageId` is what a receiver stores once. `data` is kept as received (decoded from base64)
/// so a notification of a kind settle does not know yet survives in full.
package struct PubSubPush: Sendable, Equatable {
    package var messageId: String
    package var publishTime: String?
    /// `projects/{project}/subscriptions/{name}`.
    package var subscription: String?
    package var data: Data
    package var notification: DeveloperNotification

    /// Why a body is not a usable push. Raw values are fixed: safe as metric labels.
    package enum Problem: String, Error, Sendable {
        case notJSON = "not_json"
        case noMessage = "no_message"
        case noMessageId = "no_message_id"
        case dataNotBase64 = "data_not_base64"
        case dataNotJSON = "data_not_json"
        case notANotification = "not_a_notification"
        case missingPurchaseToken = "missing_purchase_token"
    }

    package init(messageId: String, publishTime: String?, subscription: String?, data: Data, notification: DeveloperNotification) {
        self.messageId = messageId
        self.publishTime = publishTime
        self.subscription = subscription
        self.data = data
        self.notification = notification
    }

    package init(body: Data) throws(Problem) {
        guard let json = try? JSONValue.parse(body) else { throw .notJSON }
        guard let message = json["message"], message.objectMembers != nil else { throw .noMessage }
        // Pub/Sub's JSON API names it `messageId`; some deliveries carry `message_id` as well.
        guard let id = (message["messageId"] ?? message["message_id"])?.looseString, !id.isEmpty else { throw .noMessageId }
        // Pub/Sub encodes `data` in standard base64 (with padding), not base64url.
        guard case let .string(encoded)? = message["data"], let data = Data(base64Encoded: encoded) else { throw .dataNotBase64 }
        guard let payload = try? JSONValue.parse(data) else { throw .dataNotJSON }
        let notification: DeveloperNotification
        do {
            notification = try DeveloperNotification(json: payload)
        } catch {
            throw error == .missingPurchaseToken ? .missingPurchaseToken : .notANotification
        }
        self.init(messageId: id, publishTime: (message["publishTime"] ?? message["publish_time"])?.looseString,
                  subscription: json["subscription"]?.looseString, data: data, notification: notification)
    }

    /// The body Pub/Sub would POST for `notification` (for the fake Google and tests).
    package static func body(messageId: String, notification: DeveloperNotification, publishTime: String = "2026-12-01T10:00:00.000Z",
                            subscription: String = "projects/settle-test/subscriptions/play-rtdn") -> Data {
        JSONValue.object([
            ("message", .object([("data", .string(notification.json.data.base64EncodedString())), ("messageId", .string(messageId)),
                                 ("publishTime", .string(publishTime)), ("attributes", .object([]))])),
            ("subscription", .string(subscription)),
        ]).data
    }
}

import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleGooglePlay

final class ServiceAccountKeyTests: XCTestCase {
    private func document(without field: String? = nil) -> JSONValue {
        let full = ServiceAccountKey.document(clientEmail: "a@p.iam.gserviceaccount.com", privateKeyId: "kid-1",
                                              privateKeyPEM: PlayTestKeys.serviceAccountPEM, tokenURI: "https://oauth2.googleapis.com/token")
        return .object(full.objectMembers!.filter { $0.0 != field })
    }

    func testParse_readsEmailKeyIdTokenURIAndTheRSAKey() throws {
        let key = try ServiceAccountKey(json: document().data)
        XCTAssertEqual(key.clientEmail, "a@p.iam.gserviceaccount.com")
        XCTAssertEqual(key.privateKeyId, "kid-1")
        XCTAssertEqual(key.tokenURI, "https://oauth2.googleapis.com/token")
        let signature = try key.privateKey.sign(Data("m".utf8))
        XCTAssertTrue(key.privateKey.publicKey.verify(signature: signature, message: Data("m".utf8)))
    }

    func testParse_whenARequiredFieldIsMissing_namesIt_andNeverShowsTheKey() {
        let pemLine = String(PlayTestKeys.serviceAccountPEM.split(separator: "\n")[1])
        for field in ["client_email", "private_key_id", "private_key"] {
            XCTAssertThrowsError(try ServiceAccountKey(json: document(without: field).data)) { error in
                XCTAssertTrue("\(error)".contains("\"\(field)\""), "\(error)")
                XCTAssertFalse("\(error)".contains(pemLine))
            }
        }
        XCTAssertEqual(try ServiceAccountKey(json: document(without: "token_uri").data).tokenURI, ServiceAccountKey.defaultTokenURI)
    }

    func testParse_whenThePrivateKeyIsBrokenOrTheFileIsAnOAuthClient_saysSoWithoutQuotingIt() {
        var members = document().objectMembers!
        let broken = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC-secret-part\n-----END PRIVATE KEY-----\n"
        members = members.map { $0.0 == "private_key" ? ($0.0, .string(broken)) : $0 }
        XCTAssertThrowsError(try ServiceAccountKey(json: JSONValue.object(members).data)) { error in
            XCTAssertTrue("\(error)".contains("\"private_key\" is unusable"), "\(error)")
            XCTAssertFalse("\(error)".contains("secret-part"))
        }
        XCTAssertThrowsError(try ServiceAccountKey(json: Data(#"{"installed":{"client_id":"x"},"type":"authorized_user"}"#.utf8))) { error in
            XCTAssertTrue("\(error)".contains("service_account"), "\(error)")
        }
    }

    func testDescriptionAndDump_showTheAccount_neverTheKey() throws {
        let key = try ServiceAccountKey(json: document().data)
        var dumped = ""
        dump(key, to: &dumped)
        let pemLine = String(PlayTestKeys.serviceAccountPEM.split(separator: "\n")[1])
        for text in ["\(key)", String(reflecting: key), dumped] {
            XCTAssertFalse(text.contains(pemLine))
            XCTAssertFalse(text.contains("PRIVATE KEY"))
        }
        XCTAssertEqual("\(key)", "service account a@p.iam.gserviceaccount.com (key kid-1)")
    }
}

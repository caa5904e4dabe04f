import Foundation
import SettleBase

/// An app receipt whose PKCS#7 signature chains to a configured receipt root: its ids were put
/// there by the App Store, not by whoever uploaded it.
package struct VerifiedAppReceipt: Sendable, Equatable {
    /// The payload, read from the bytes OpenSSL verified.
    package var receipt: AppReceipt
    /// Attribute 12, the time the certificates were checked at.
    package var creationDate: Date
    /// The signing certificate's subject, for logs.
    package var signer: String
}

/// Checks a legacy app receipt's PKCS#7 signature with OpenSSL against the configured receipt
/// roots (Apple Inc. Root CA in production), the way apple-protocol.md 3.7 describes.
///
/// Why this exists: without `receipt_api`, settle reads a receipt's ids locally and asks the App
/// Store Server API about them. Unchecked, anyone could sign a PKCS#7 listing a stranger's ids
/// and have that stranger's purchases looked up for them.
///
/// The certificates are checked at the receipt's creation date, not now: Apple's receipt-signing
/// leaf certificates live about two years and expire while receipts they signed stay in use
/// (three genuine receipts verify at their creation date and fail at "now"). The date is inside
/// the signed content, so only a key that chains to a configured root can choose it.
/// https://developer.apple.com/documentation/appstorereceipts/validating_receipts_on_the_device
package struct AppReceiptSignature: Sendable {
    package let rootCertificates: [X509Certificate]

    package init(rootCertificates: [X509Certificate]) {
        self.rootCertificates = rootCertificates
    }

    /// Verifies a base64 app receipt (as devices upload it).
    package func verify(base64: String) -> Result<VerifiedAppReceipt, ReceiptSignatureFailure> {
        Result { () throws(ReceiptSignatureFailure) in
            let der: Data
            let unverified: AppReceipt
            do throws(AppReceiptError) {
                der = try AppReceipt.der(base64: base64)
                unverified = try AppReceipt.parse(der: der)
            } catch {
                throw .unreadable(error)
            }
            let envelope = try SignedReceiptEnvelope(der: der)
            guard envelope.signerCount > 0 else { throw .unsigned }
            // Read before the signature is checked because the check needs it; the same value is
            // required of the verified content below, so an unsigned date cannot slip through.
            guard let text = unverified.creationDate else {
                throw .creationDateInvalid("the receipt has no creation date (attribute 12)")
            }
            guard let created = Self.date(rfc3339: text) else {
                throw .creationDateInvalid("the receipt's creation date is not RFC 3339")
            }
            let (content, signer) = try envelope.verifiedContent(roots: rootCertificates, at: created)
            let receipt: AppReceipt
            do throws(BERError) {
                receipt = try AppReceipt.decodePayload([UInt8](content)[...])
            } catch {
                throw .unreadable(.malformedPayload(error.description))
            }
            guard receipt.creationDate == text else {
                throw .signatureInvalid("the signed content's creation date differs from the one read")
            }
            return VerifiedAppReceipt(receipt: receipt, creationDate: created, signer: signer)
        }
    }

    package static func date(rfc3339 text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions.insert(.withFractionalSeconds)
        return formatter.date(from: text)
    }
}

/// A receipt's PKCS#7 envelope (SettleBase's `PKCS7SignedData`) held to Apple's receipt chain.
private struct SignedReceiptEnvelope {
    let signedData: PKCS7SignedData

    init(der: Data) throws(ReceiptSignatureFailure) {
        do throws(PKCS7Failure) {
            signedData = try PKCS7SignedData(der: der)
        } catch {
            throw .unreadable(.notSignedData(Self.reason(error)))
        }
    }

    /// SignerInfos in the signedData; -1 when it is not signedData.
    var signerCount: Int { signedData.signerCount }

    /// Checks every signer's certificate chain at `time` (Apple's receipt chain, nothing else),
    /// then the signatures over the content, and returns the content OpenSSL verified with the first signer's subject.
    func verifiedContent(roots: [X509Certificate], at time: Date) throws(ReceiptSignatureFailure) -> (Data, String) {
        let signers: [X509Certificate]
        do throws(PKCS7Failure) {
            signers = try signedData.signerCertificates()
        } catch {
            throw .signatureInvalid(Self.reason(error))
        }
        let carried = signedData.certificates
        for signer in signers {
            try checkChain(signer, carried: carried, roots: roots, at: time)
        }
        // The chains were checked above, at the creation date; this checks the content digest
        // and each signature.
        let content: Data
        do throws(PKCS7Failure) {
            content = try signedData.verifiedContent()
        } catch {
            throw .signatureInvalid(Self.reason(error))
        }
        return (content, signers[0].subjectSummary)
    }

    private static func reason(_ failure: PKCS7Failure) -> String {
        switch failure {
        case let .unreadable(text), let .signerCertificateMissing(text), let .signatureInvalid(text): text
        }
    }

    /// Most certificates named like the signer's issuer tried as its intermediate: a bound on
    /// the signature checks an uploaded receipt can make settle do.
    private static let maxIssuerCandidates = 4

    /// Apple's receipt chain exactly, the rules signed transactions are held to
    /// (`AppleCertificateChain`): the signer is a receipt-signing leaf (marker
    /// 1.2.840.113635.100.6.11.1, not a CA), issued by a WWDR intermediate the receipt carries
    /// (marker 1.2.840.113635.100.6.2.1), issued by a configured root; three certificates, no more.
    ///
    /// Why not any path to the root: Apple Root CA also anchors the WWDR intermediate that issues
    /// every developer's push, Pass Type and merchant certificates, whose keys developers hold.
    /// A generic path check (X509_verify_cert with any purpose) accepts a receipt one of them signed.
    private func checkChain(_ leaf: X509Certificate, carried: [X509Certificate], roots: [X509Certificate],
                            at time: Date) throws(ReceiptSignatureFailure) {
        let issuers = carried.filter { leaf.isNamed(issuedBy: $0) }
        let signerName = leaf.subjectSummary
        guard !issuers.isEmpty else {
            throw .chainInvalid("the signer \(signerName)'s issuer is not among the receipt's certificates")
        }
        var firstProblem: String?
        for intermediate in issuers.prefix(Self.maxIssuerCandidates) {
            switch AppleCertificateChain(leaf: leaf, intermediate: intermediate).verify(roots: roots, at: time) {
            case .success:
                return
            case let .failure(failure):
                firstProblem = firstProblem ?? failure.description
            }
        }
        throw .chainInvalid("the signer \(signerName) is not Apple's receipt chain under a configured receipt root at "
                            + "\(time.formatted(.iso8601)): \(firstProblem ?? "no usable issuer")")
    }
}

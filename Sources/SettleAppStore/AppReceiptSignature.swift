import COpenSSL
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

/// A parsed PKCS#7 `ContentInfo`; owns its `PKCS7*` and frees it in `deinit`.
private final class SignedReceiptEnvelope {
    let handle: UnsafeMutablePointer<PKCS7>

    init(der: Data) throws(ReceiptSignatureFailure) {
        let parsed = der.withUnsafeBytes { buffer -> UnsafeMutablePointer<PKCS7>? in
            var cursor = buffer.bindMemory(to: UInt8.self).baseAddress.map { UnsafePointer($0) }
            return d2i_PKCS7(nil, &cursor, buffer.count)
        }
        guard let parsed else {
            let reason = OpenSSLErrorQueue.drain().map { " (OpenSSL: \($0))" } ?? ""
            throw .unreadable(.notSignedData("OpenSSL cannot read the PKCS#7\(reason)"))
        }
        handle = parsed
    }

    deinit { PKCS7_free(handle) }

    /// SignerInfos in the signedData; -1 when it is not signedData.
    var signerCount: Int { Int(settle_PKCS7_signer_count(handle)) }

    /// Checks every signer's certificate chain at `time` (Apple's receipt chain, nothing else),
    /// then the signatures over the content, and returns the content OpenSSL verified with the first signer's subject.
    func verifiedContent(roots: [X509Certificate], at time: Date) throws(ReceiptSignatureFailure) -> (Data, String) {
        defer { OpenSSLErrorQueue.drain() }
        // flags 0: signer certificates are looked up among the receipt's own certificates.
        // https://docs.openssl.org/3.0/man3/PKCS7_verify/
        guard let signers = PKCS7_get0_signers(handle, nil, 0) else {
            let reason = OpenSSLErrorQueue.drain() ?? "no signer certificate"
            throw .signatureInvalid("the signer's certificate is not in the receipt (OpenSSL: \(reason))")
        }
        defer { settle_X509_stack_free(signers) }
        let count = settle_X509_stack_count(signers)
        guard count > 0, let first = settle_X509_stack_value(signers, 0) else {
            throw .signatureInvalid("the receipt names no signer certificate")
        }
        for index in 0..<count {
            guard let signer = settle_X509_stack_value(signers, index) else { continue }
            try checkChain(signer, roots: roots, at: time)
        }
        guard let out = BIO_new(BIO_s_mem()) else { throw .signatureInvalid("cannot allocate a memory BIO") }
        defer { BIO_free(out) }
        // PKCS7_NOVERIFY: the chains were checked above, at the creation date; this call checks
        // the content digest and each signature. PKCS7_BINARY: the content is DER, not MIME text.
        guard PKCS7_verify(handle, nil, nil, nil, out, PKCS7_NOVERIFY | PKCS7_BINARY) == 1 else {
            let reason = OpenSSLErrorQueue.drain() ?? "verification failed"
            throw .signatureInvalid("the signature does not verify over the receipt's content (OpenSSL: \(reason))")
        }
        return (Self.readAll(out), X509Certificate.summary(of: X509_get_subject_name(first)))
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
    private func checkChain(_ signer: OpaquePointer, roots: [X509Certificate], at time: Date) throws(ReceiptSignatureFailure) {
        let leaf = X509Certificate(sharing: signer)
        var issuers: [X509Certificate] = []
        if let carried = settle_PKCS7_certificates(handle) {
            for index in 0..<settle_X509_stack_count(carried) {
                guard let certificate = settle_X509_stack_value(carried, index) else { continue }
                let candidate = X509Certificate(sharing: certificate)
                if leaf.isNamed(issuedBy: candidate) { issuers.append(candidate) }
            }
        }
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

    private static func readAll(_ bio: OpaquePointer) -> Data {
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = BIO_read(bio, &chunk, Int32(chunk.count))
            guard count > 0 else { break }
            data.append(contentsOf: chunk[0..<Int(count)])
        }
        return data
    }
}

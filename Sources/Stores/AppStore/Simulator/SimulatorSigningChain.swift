import Foundation
import SettleBase

/// The signing chain of the local Apple simulator: the test PKI in Apple's shape that Apple's
/// own server libraries test with (root -> intermediate with OID 1.2.840.113635.100.6.2.1 ->
/// leaf with OID 1.2.840.113635.100.6.11.1, ECDSA P-256, valid 2023-01-05 to 2033-01-01).
///
/// Public test material, never a production trust anchor: settle trusts only the roots its
/// configuration names, and only the demo and the tests name this one.
package enum SimulatorSigningChain {
    package static let rootPEM = """
-----BEGIN CERTIFICATE-----
MIIBgjCCASmgAwIBAgIJALUc5ALiH5pbMAoGCCqGSM49BAMDMDYxCzAJBgNVBAYT
AlVTMRMwEQYDVQQIDApDYWxpZm9ybmlhMRIwEAYDVQQHDAlDdXBlcnRpbm8wHhcN
MjMwMTA1MjEzMDIyWhcNMzMwMTAyMjEzMDIyWjA2MQswCQYDVQQGEwJVUzETMBEG
A1UECAwKQ2FsaWZvcm5pYTESMBAGA1UEBwwJQ3VwZXJ0aW5vMFkwEwYHKoZIzj0C
AQYIKoZIzj0DAQcDQgAEc+/Bl+gospo6tf9Z7io5tdKdrlN1YdVnqEhEDXDShzdA
JPQijamXIMHf8xWWTa1zgoYTxOKpbuJtDplz1XriTaMgMB4wDAYDVR0TBAUwAwEB
/zAOBgNVHQ8BAf8EBAMCAQYwCgYIKoZIzj0EAwMDRwAwRAIgemWQXnMAdTad2JDJ
Wng9U4uBBL5mA7WI05H7oH7c6iQCIHiRqMjNfzUAyiu9h6rOU/K+iTR0I/3Y/NSW
sXHX+acc
-----END CERTIFICATE-----
"""

    package static let intermediatePEM = """
-----BEGIN CERTIFICATE-----
MIIBnzCCAUWgAwIBAgIBCzAKBggqhkjOPQQDAzA2MQswCQYDVQQGEwJVUzETMBEG
A1UECAwKQ2FsaWZvcm5pYTESMBAGA1UEBwwJQ3VwZXJ0aW5vMB4XDTIzMDEwNTIx
MzEwNVoXDTMzMDEwMTIxMzEwNVowRTELMAkGA1UEBhMCVVMxCzAJBgNVBAgMAkNB
MRIwEAYDVQQHDAlDdXBlcnRpbm8xFTATBgNVBAoMDEludGVybWVkaWF0ZTBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABBUN5V9rKjfRiMAIojEA0Av5Mp0oF+O0cL4g
zrTF178inUHugj7Et46NrkQ7hKgMVnjogq45Q1rMs+cMHVNILWqjNTAzMA8GA1Ud
EwQIMAYBAf8CAQAwDgYDVR0PAQH/BAQDAgEGMBAGCiqGSIb3Y2QGAgEEAgUAMAoG
CCqGSM49BAMDA0gAMEUCIQCmsIKYs41ullssHX4rVveUT0Z7Is5/hLK1lFPTtun3
hAIgc2+2RG5+gNcFVcs+XJeEl4GZ+ojl3ROOmll+ye7dynQ=
-----END CERTIFICATE-----
"""

    package static let leafPEM = """
-----BEGIN CERTIFICATE-----
MIIBoDCCAUagAwIBAgIBDDAKBggqhkjOPQQDAzBFMQswCQYDVQQGEwJVUzELMAkG
A1UECAwCQ0ExEjAQBgNVBAcMCUN1cGVydGlubzEVMBMGA1UECgwMSW50ZXJtZWRp
YXRlMB4XDTIzMDEwNTIxMzEzNFoXDTMzMDEwMTIxMzEzNFowPTELMAkGA1UEBhMC
VVMxCzAJBgNVBAgMAkNBMRIwEAYDVQQHDAlDdXBlcnRpbm8xDTALBgNVBAoMBExl
YWYwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAATitYHEaYVuc8g9AjTOwErMvGyP
ykPa+puvTI8hJTHZZDLGas2qX1+ErxgQTJgVXv76nmLhhRJH+j25AiAI8iGsoy8w
LTAJBgNVHRMEAjAAMA4GA1UdDwEB/wQEAwIHgDAQBgoqhkiG92NkBgsBBAIFADAK
BggqhkjOPQQDAwNIADBFAiBX4c+T0Fp5nJ5QRClRfu5PSByRvNPtuaTsk0vPB3WA
IAIhANgaauAj/YP9s0AkEhyJhxQO/6Q2zouZ+H1CIOehnMzQ
-----END CERTIFICATE-----
"""

    package static let leafKeyPEM = """
-----BEGIN EC PRIVATE KEY-----
MHcCAQEEID4h7a+2lJvajaw0RBeufb17snbjEkftGq2b5BuBgXGIoAoGCCqGSM49
AwEHoUQDQgAE4rWBxGmFbnPIPQI0zsBKzLxsj8pD2vqbr0yPISUx2WQyxmrNql9f
hK8YEEyYFV7++p5i4YUSR/o9uQIgCPIhrA==
-----END EC PRIVATE KEY-----
"""

    /// Signs `payload` as the App Store does: ES256 with the leaf key, `x5c` = [leaf, intermediate, root].
    package static func sign(_ payload: JSONValue) throws -> String {
        let chain = try [leafPEM, intermediatePEM, rootPEM].map { pem -> JSONValue in
            let der = try certificate(pem).der
            return .string(der.base64EncodedString())
        }
        let header = JSONValue.object([("alg", .string("ES256")), ("x5c", .array(chain))])
        return try CompactJWS.sign(header: header, payload: payload, key: try ES256PrivateKey(pem: leafKeyPEM))
    }

    /// The root as a certificate, for a verifier that should trust the simulator.
    package static func root() throws -> X509Certificate { try certificate(rootPEM) }

    package static func certificate(_ pem: String) throws -> X509Certificate {
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        guard let der = Data(base64Encoded: body) else { throw CryptoError("the simulator's certificate is not PEM") }
        return try X509Certificate(der: der)
    }
}

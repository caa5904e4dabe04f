import Foundation
import SettleBase

/// The signing chain of `settle simulator`'s Huawei: a stand-in root, an intermediate and a leaf
/// carrying Huawei's IAP signing extension (1.3.6.1.4.1.2011.2.415.1.1), ECDSA P-256, valid
/// 2020-01-01 to 2045-12-31, made with openssl for settle. Test material, never a trust anchor:
/// settle trusts only the roots `huawei.root_certificates` names, and only the demo and the
/// tests name this one.
package enum HuaweiSimulatorChain {
    package static let rootPEM = """
        -----BEGIN CERTIFICATE-----
        MIIB4jCCAYigAwIBAgICEAAwCgYIKoZIzj0EAwIwWDEhMB8GA1UEAwwYU2ltdWxh
        dGVkIENCRyBSb290IENBIEcyMSYwJAYDVQQKDB1zZXR0bGUgc2ltdWxhdG9yIChu
        b3QgSHVhd2VpKTELMAkGA1UEBhMCQ04wHhcNMjAwMTAxMDAwMDAwWhcNNDUxMjMx
        MDAwMDAwWjBYMSEwHwYDVQQDDBhTaW11bGF0ZWQgQ0JHIFJvb3QgQ0EgRzIxJjAk
        BgNVBAoMHXNldHRsZSBzaW11bGF0b3IgKG5vdCBIdWF3ZWkpMQswCQYDVQQGEwJD
        TjBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABIdPeCjHTVtV2ybD1tpzzi3ogcHb
        XY+CNqp+VYoRmJdj3it1FXy6ohC3SZ0SvKc5bOwyOODHG0M7WraSLcvQ2eujQjBA
        MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBSKNUQd
        ryUd0FUp5kATqfgDF4BOzDAKBggqhkjOPQQDAgNIADBFAiEArMxcs9IOIr8hfgW3
        CUtiknVu3d0PrQGkYFuU0NplrRICICfWaBPHIlKnyLa2hsHdacUEn0Xt+gsdtoFq
        fFBeBDrO
        -----END CERTIFICATE-----
        """

    package static let intermediatePEM = """
        -----BEGIN CERTIFICATE-----
        MIICEzCCAbmgAwIBAgICEAEwCgYIKoZIzj0EAwIwWDEhMB8GA1UEAwwYU2ltdWxh
        dGVkIENCRyBSb290IENBIEcyMSYwJAYDVQQKDB1zZXR0bGUgc2ltdWxhdG9yIChu
        b3QgSHVhd2VpKTELMAkGA1UEBhMCQ04wHhcNMjAwMTAxMDAwMDAwWhcNNDUxMjMx
        MDAwMDAwWjBlMS4wLAYDVQQDDCVTaW11bGF0ZWQgQ0JHIFJvb3QgQ0EgRzIgSW50
        ZXJtZWRpYXRlMSYwJAYDVQQKDB1zZXR0bGUgc2ltdWxhdG9yIChub3QgSHVhd2Vp
        KTELMAkGA1UEBhMCQ04wWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQKayjfGWkk
        Rr38WBWUoTaHiD2dBt0/YrKD6J62syXkK07c5Ry2Txhy2+/p9cMp1I2Tmp9tIAvk
        E1v36Q3Fd0WXo2YwZDASBgNVHRMBAf8ECDAGAQH/AgEAMA4GA1UdDwEB/wQEAwIB
        BjAdBgNVHQ4EFgQUyV4pvB/6pGlvxd1gbaWgDoI9LfYwHwYDVR0jBBgwFoAUijVE
        Ha8lHdBVKeZAE6n4AxeATswwCgYIKoZIzj0EAwIDSAAwRQIhAM+ECh3vFA1JEeke
        AO+KIiEA0Q1tog0ZL8MfzJ1i7TqrAiAMcbC6J0AqnD2rSry3C633MGmmIphaPdRj
        QLW4iJHx5g==
        -----END CERTIFICATE-----
        """

    package static let leafPEM = """
        -----BEGIN CERTIFICATE-----
        MIICLDCCAdKgAwIBAgICEAIwCgYIKoZIzj0EAwIwZTEuMCwGA1UEAwwlU2ltdWxh
        dGVkIENCRyBSb290IENBIEcyIEludGVybWVkaWF0ZTEmMCQGA1UECgwdc2V0dGxl
        IHNpbXVsYXRvciAobm90IEh1YXdlaSkxCzAJBgNVBAYTAkNOMB4XDTIwMDEwMTAw
        MDAwMFoXDTQ1MTIzMTAwMDAwMFowYzEsMCoGA1UEAwwjU2ltdWxhdGVkIENCRyBS
        b290IENBIEcyIElBUCBTaWduZXIxJjAkBgNVBAoMHXNldHRsZSBzaW11bGF0b3Ig
        KG5vdCBIdWF3ZWkpMQswCQYDVQQGEwJDTjBZMBMGByqGSM49AgEGCCqGSM49AwEH
        A0IABIzyfa5oHYmgCbnTwmwZy1kfpBvLpROFoaEFeu+VoCUTHhVrQTJSJM8adRcE
        Bl677zwJ6eZ2vBGGPTUXQlz2XpKjdDByMAwGA1UdEwEB/wQCMAAwDgYDVR0PAQH/
        BAQDAgeAMB0GA1UdDgQWBBSurPhZjH9PDePD6Og2klOjfUt1sDAfBgNVHSMEGDAW
        gBTJXim8H/qkaW/F3WBtpaAOgj0t9jASBgwrBgEEAY9bAoMfAQEEAgUAMAoGCCqG
        SM49BAMCA0gAMEUCIQCoIxje99jIN77bbirKmBYGLqc+ZLNEcKlH2l4hRxHCLAIg
        JLMAX4n8zpfknRiUVW4sYBYzIC/rI9z4WHV9uKa0pqU=
        -----END CERTIFICATE-----
        """

    package static let leafKeyPEM = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIHXXaVRJrI8nCvVc0CsRzRfcT6EwVSZDqgYmxFDMxQDkoAoGCCqGSM49
        AwEHoUQDQgAEjPJ9rmgdiaAJudPCbBnLWR+kG8ulE4WhoQV675WgJRMeFWtBMlIk
        zxp1FwQGXrvvPAnp5na8EYY9NRdCXPZekg==
        -----END EC PRIVATE KEY-----
        """

    /// The `x5c` header the simulator sends: leaf, intermediate, root, standard base64 DER.
    package static var x5c: [String] {
        [leafPEM, intermediatePEM, rootPEM].compactMap { pem in
            (try? X509Certificate.parse(pem: pem))?.first?.der.base64EncodedString()
        }
    }
}

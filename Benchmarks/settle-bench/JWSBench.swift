import Foundation
import SettleApp
import SettleBase
import SettleAppStore
import SettleAppStoreSimulator

/// StoreKit 2 JWS verification cost: settle against Apple's Python library on the same token,
/// offline, on the genuine Apple chain (P-384 certificates) and on a P-256 test chain.
struct JWSBench {
    struct Case {
        var name: String
        var token: String
        var rootPEMPath: String
        var verifier: () -> SignedDataVerifier
        var verify: (SignedDataVerifier, String) -> Bool
        /// For the Python library.
        var kind: String, bundleId: String, environment: String
    }

    let folder: BenchFolder
    let fixtures: String
    let cpuSeconds: Double

    func cases() throws -> [Case] {
        // The genuine renewal info Apple signed, checked at its signedDate (2023).
        let genuine = try String(contentsOfFile: fixtures + "/signed/apple-signed-renewal-info-sandbox.jws", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let appleRoot = try X509Certificate.load(path: fixtures + "/roots/AppleRootCA-G3.pem")
        // A transaction as the simulator signs it in a pass (P-256 leaf, intermediate, root).
        let transaction = SimulatedSignedTransaction(transactionId: "3000000001", productId: BenchOrders.productId,
                                                     bundleId: BenchOrders.bundleId)
        let p256 = try SimulatorSigningChain.sign(transaction.payload(signedAt: Int64(Date().timeIntervalSince1970 * 1000)))
        let p256Root = try SimulatorSigningChain.root()
        return [
            Case(name: "real Apple chain", token: genuine, rootPEMPath: fixtures + "/roots/AppleRootCA-G3.pem",
                 verifier: { SignedDataVerifier(rootCertificates: appleRoot, bundleId: "co.ringalarm", acceptSandbox: true) },
                 verify: { verifier, token in (try? verifier.verifySignedData(token, now: Date()).get()) != nil },
                 kind: "renewal", bundleId: "co.ringalarm", environment: "Sandbox"),
            Case(name: "P-256 test chain", token: p256, rootPEMPath: folder.path + "/AppleRootCA-G3.pem",
                 verifier: { SignedDataVerifier(rootCertificates: [p256Root], bundleId: BenchOrders.bundleId, acceptSandbox: false) },
                 verify: { verifier, token in (try? verifier.verifyTransaction(token, now: Date()).get()) != nil },
                 kind: "transaction", bundleId: BenchOrders.bundleId, environment: "Production"),
        ]
    }

    /// Verifications per CPU-second with one long-lived verifier (the daemon's case) and with
    /// a new verifier per token (every chain seen for the first time).
    func settleRates(_ bench: Case) throws -> (cached: Double, firstSight: Double) {
        let verifier = bench.verifier()
        guard bench.verify(verifier, bench.token) else { throw BenchError("settle refuses the \(bench.name) token") }
        func rate(_ body: () -> Bool) throws -> Double {
            var count = 0
            let start = ownCPUSeconds()
            var spent = 0.0
            while spent < cpuSeconds && count < 1_000_000 {
                for _ in 0..<20 { guard body() else { throw BenchError("verification failed mid-run") } }
                count += 20
                spent = ownCPUSeconds() - start
            }
            return Double(count) / spent
        }
        return (try rate { bench.verify(verifier, bench.token) }, try rate { bench.verify(bench.verifier(), bench.token) })
    }

    func pythonRate(_ bench: Case, script: String) throws -> Double {
        let tokenFile = folder.path + "/jws-\(bench.kind).txt", rootFile = folder.path + "/jws-\(bench.kind)-root.der"
        try folder.write("jws-\(bench.kind).txt", bench.token, mode: 0o644)
        guard let root = try X509Certificate.load(path: bench.rootPEMPath).first else { throw BenchError("no root") }
        try root.der.write(to: URL(fileURLWithPath: rootFile))
        let (status, output) = try ChildProcess.run(["/usr/bin/env", "python3", script, "--token", tokenFile, "--root", rootFile,
                                                     "--kind", bench.kind, "--bundle-id", bench.bundleId,
                                                     "--environment", bench.environment, "--seconds", String(cpuSeconds)],
                                                    timeout: 120)
        guard status == 0 else { throw BenchError("python JWS bench exited \(status): \(output.suffix(300))") }
        return try ChildProcess.lastJSON(output).double("per_cpu_second")
    }

    /// CPU per JWS when 32 threads share one verifier, as a pass's workers do, each token
    /// distinct (as the transactions in a pass are) and from the same chain.
    func concurrentCostMs(threads: Int = 32, perThread: Int = 200) throws -> (cpuMs: Double, wallMs: Double) {
        let verifier = SignedDataVerifier(rootCertificates: [try SimulatorSigningChain.root()], bundleId: BenchOrders.bundleId,
                                          acceptSandbox: false)
        let signedAt = Int64(Date().timeIntervalSince1970 * 1000)
        let tokens = try (0..<(threads * perThread)).map { index in
            try SimulatorSigningChain.sign(SimulatedSignedTransaction(transactionId: BenchOrders.transactionId(index),
                                                                      productId: BenchOrders.productId,
                                                                      bundleId: BenchOrders.bundleId).payload(signedAt: signedAt))
        }
        let failures = Atomic(0)
        let done = DispatchGroup()
        let cpuStart = ownCPUSeconds()
        let start = DispatchTime.now()
        for thread in 0..<threads {
            done.enter()
            Thread {
                for index in (thread * perThread)..<((thread + 1) * perThread)
                where (try? verifier.verifyTransaction(tokens[index], now: Date()).get()) == nil {
                    failures.add(1)
                }
                done.leave()
            }.start()
        }
        guard done.wait(timeout: .now() + 300) == .success else { throw BenchError("concurrent JWS run did not finish") }
        let wall = seconds(since: start), cpu = ownCPUSeconds() - cpuStart
        guard failures.value == 0 else { throw BenchError("\(failures.value) tokens failed to verify") }
        return (cpu * 1000 / Double(tokens.count), wall * 1000 / Double(perThread))
    }
}

/// A counter shared with worker threads.
final class Atomic: @unchecked Sendable {
    private let lock = NSLock()
    private var count: Int
    init(_ value: Int) { count = value }
    func add(_ amount: Int) { lock.withLock { count += amount } }
    var value: Int { lock.withLock { count } }
}

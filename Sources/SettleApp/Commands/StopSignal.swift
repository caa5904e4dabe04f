import Dispatch
import Glibc

/// How a foreground server (`settle simulator`, `settle web`) is stopped: it waits here until
/// SIGINT or SIGTERM arrives, then tears down in order.
enum StopSignal {
    static func wait() {
        let stop = DispatchSemaphore(value: 0)
        var sources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGINT, SIGTERM] {
            // Dispatch sees the signal only once its default action (death) is off.
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            sources.append(source)
        }
        stop.wait()
        sources.forEach { $0.cancel() }
    }
}

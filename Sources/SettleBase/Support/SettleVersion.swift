/// settle's release version: what `settle --version`, the manual page, the metrics'
/// `settle_build_info` and the Debian package (`scripts/package-deb` reads this line) say.
package enum SettleVersion {
    package static let number = "0.1.0"
}

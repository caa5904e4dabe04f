/// How a delivery hook that cannot be started (missing, not executable, a directory) is named in
/// an order's last error, so the verdict can tell a fault only an operator can fix from a
/// failure settle retries by itself.
package enum HookFault {
    package static let cannotStart = "hook could not start: "
}

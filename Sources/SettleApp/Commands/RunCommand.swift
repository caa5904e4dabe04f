
/// `settle run`: the daemon.
enum RunCommand {
    static let spec = ArgumentSpec(command: "run", options: [])

    static let help = """
    Usage: settle run [--config PATH]

    The daemon: reconciles due orders every schedule.interval_seconds until SIGTERM. One per
    ledger (a second exits 75). Signals: SIGTERM/SIGINT stop gracefully (in-flight work gets
    shutdown_grace_seconds), SIGHUP reloads the configuration (an invalid one is logged and
    the old one kept), SIGUSR1 runs a pass now. Speaks sd_notify (READY, STATUS, WATCHDOG,
    RELOADING, STOPPING) when $NOTIFY_SOCKET is set; logs to stderr.

    Exit: 0 stopped; 74 ledger I/O error, or the ledger file was replaced while running; 75 another
    settle run holds the ledger; 78 configuration error.
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let daemon = Daemon(configPath: context.configPath(parsed), environment: context.environment, log: context.log,
                            time: context.time)
        let code = daemon.run()
        // The command's name is the line's prefix already (SettleCommand): "settle run: stopped ...".
        if code != .success { throw CommandFailure(code, "stopped with an error (see the log above)") }
    }
}

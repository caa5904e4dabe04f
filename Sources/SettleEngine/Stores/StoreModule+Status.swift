/// Defaults of the hooks `settle status` and the console ask a module: a store that says
/// nothing shows no line of its own.
extension StoreModule {
    package static var verificationRateGroups: Set<String> { [] }
}

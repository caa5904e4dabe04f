import SettleLedger

extension StoreModule {
    /// A store that owes nothing outside its orders' settling has no side queue.
    package static var sideQueues: [SideQueue] { [] }
}

/// The migrations of refund history per customer (issue 37): the index that finds the orders a
/// buyer gave away by transfer (`support_actions_from_user`), so `TransactionalLedger.refundHistory`
/// reads a buyer's refunds through indexes alone.
extension LedgerSchema {
    package static let refundHistoryVersion = 21
}

extension PostgresLedgerSchema {
    package static let refundHistoryVersion = 19
}

/// Which users settle learned an `appTransactionId` is, from signed AppTransactions: the
/// ids of some purchases, each with every user it was linked to (normally one).
package typealias LinkedAppTransactions = [String: Set<String>]

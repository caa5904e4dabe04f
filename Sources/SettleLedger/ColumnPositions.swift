/// Where each column of a statement's rows stands, by name: an open-addressed table hashed by
/// each name's length and end bytes.
///
/// An order is decoded by about 40 lookups by name, two or three orders a transition; through a
/// `[String: Int]` each lookup ran SipHash (Swift's per-process seeded hash), about 1 % of a pass's
/// instructions. Column names come from the schema, not from outside, so a plain hash is enough.
struct ColumnPositions: Sendable {
    private let names: [String]
    /// Indexes into `names`, -1 where empty; a power of two at least twice the columns.
    private let slots: [Int32]

    /// The last column of a name wins, as it did when each row was a dictionary filled in order.
    init(_ names: [String]) {
        self.names = names
        var size = 8
        while size < 2 * names.count { size *= 2 }
        var slots = [Int32](repeating: -1, count: size)
        for (index, name) in names.enumerated() {
            var slot = ColumnPositions.hash(name) & (size - 1)
            while slots[slot] >= 0 && names[Int(slots[slot])] != name { slot = (slot + 1) & (size - 1) }
            slots[slot] = Int32(index)
        }
        self.slots = slots
    }

    func position(_ name: String) -> Int? {
        let mask = slots.count - 1
        var slot = ColumnPositions.hash(name) & mask
        while true {
            let index = Int(slots[slot])
            if index < 0 { return nil }
            if names[index] == name { return index }
            slot = (slot + 1) & mask
        }
    }

    /// The name's length and its first and last bytes: O(1) on a small string, where a loop over
    /// its bytes cost more than the lookup saved. Names that share them are told apart by `==`.
    private static func hash(_ name: String) -> Int {
        let bytes = name.utf8
        return bytes.count &* 131 &+ Int(bytes.first ?? 0) &* 31 &+ Int(bytes.last ?? 0)
    }
}

// The tests' store registration runs once, as the test process loads, before XCTest runs any
// test: every test then sees the same stores (the application's and the bogus one), whatever
// order the tests run in. The function is SettleTesting's (`registerTestStores`).
#include "CSettleTestStores.h"

extern void settle_register_test_stores(void);

__attribute__((constructor)) static void register_test_stores(void) {
    settle_register_test_stores();
}

// Registers the test stores (SettleTesting's TestStores) before any test runs.
#pragma once

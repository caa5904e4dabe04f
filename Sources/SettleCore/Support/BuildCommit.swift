import SettleBase
import SettleModel
import SettleConfig
import SettleAppStore
import SettleGooglePlay
import SettleLedger
import SettleDelivery
import SettleEngine
import SettleSimulator

/// Replaced with the commit id by the packaging scripts for the build (see BuildInfo.commit).
let buildCommit = "unknown (built from a source tree)"

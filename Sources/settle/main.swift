import Foundation
import SettleCore
import SettleBase
import SettleModel
import SettleConfig
import SettleAppStore
import SettleGooglePlay
import SettleLedger
import SettleDelivery
import SettleEngine
import SettleSimulator

exit(SettleCommand.run(CommandContext(arguments: Array(CommandLine.arguments.dropFirst()),
                                      environment: ProcessInfo.processInfo.environment)))

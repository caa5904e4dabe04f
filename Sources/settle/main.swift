import Foundation
import SettleCore
import SettleBase
import SettleModel

exit(SettleCommand.run(CommandContext(arguments: Array(CommandLine.arguments.dropFirst()),
                                      environment: ProcessInfo.processInfo.environment)))

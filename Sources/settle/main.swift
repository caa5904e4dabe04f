import Foundation
import SettleCore

exit(SettleCommand.run(CommandContext(arguments: Array(CommandLine.arguments.dropFirst()),
                                      environment: ProcessInfo.processInfo.environment)))

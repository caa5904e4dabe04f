import Foundation
import SettleApp

exit(SettleCommand.run(CommandContext(arguments: Array(CommandLine.arguments.dropFirst()),
                                      environment: ProcessInfo.processInfo.environment)))

import SettleModel

/// Shell completion scripts for commands and their options, generated from the command table
/// (`settle --generate-completion-script bash|zsh`); the packages install them.
enum Completions {
    static func script(shell: String, commands: [SettleCommand.Subcommand]) -> String? {
        switch shell {
        case "bash": return bash(commands)
        case "zsh": return zsh(commands)
        default: return nil
        }
    }

    static func options(_ command: SettleCommand.Subcommand) -> [String] {
        (command.options + ArgumentSpec.common).map(\.name) + ["--help"]
    }

    static func bash(_ commands: [SettleCommand.Subcommand]) -> String {
        var cases = ""
        for command in commands {
            cases += "        \(command.name)) opts=\"\(options(command).joined(separator: " "))\" ;;\n"
        }
        return """
        # bash completion for settle
        _settle() {
            local cur prev cmd opts i
            cur="${COMP_WORDS[COMP_CWORD]}"
            prev="${COMP_WORDS[COMP_CWORD-1]}"
            case "$prev" in
                -c|--config|--receipt-file|--signed-transaction-file|--purchase-token-file|--google-key|--script) COMPREPLY=($(compgen -f -- "$cur")); return ;;
                --store) COMPREPLY=($(compgen -W "\(Store.allCases.map(\.rawValue).joined(separator: " "))" -- "$cur")); return ;;
                --state) COMPREPLY=($(compgen -W "\(OrderState.allCases.map(\.rawValue).joined(separator: " "))" -- "$cur")); return ;;
                --as) COMPREPLY=($(compgen -W "\(Resolution.allCases.map(\.rawValue).joined(separator: " "))" -- "$cur")); return ;;
            esac
            cmd=""
            for ((i = 1; i < COMP_CWORD; i++)); do
                case "${COMP_WORDS[i]}" in
                    -c|--config) ((i++)) ;;
                    -*) ;;
                    *) cmd="${COMP_WORDS[i]}"; break ;;
                esac
            done
            case "$cmd" in
                "") opts="\(commands.map(\.name).joined(separator: " ")) --config --help --version" ;;
        \(cases)        *) opts="" ;;
            esac
            COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        }
        complete -F _settle settle
        """
    }

    static func zsh(_ commands: [SettleCommand.Subcommand]) -> String {
        var described = ""
        for command in commands {
            described += "        '\(command.name):\(command.summary.replacingOccurrences(of: "'", with: "'\\''"))'\n"
        }
        var cases = ""
        for command in commands {
            cases += "        \(command.name)) _arguments \(options(command).map { "'\($0)[]'" }.joined(separator: " ")) '*:argument:_files' ;;\n"
        }
        return """
        #compdef settle
        _settle() {
            local -a commands
            commands=(
        \(described)    )
            if (( CURRENT == 2 )); then
                _describe 'settle command' commands
                return
            fi
            case "$words[2]" in
        \(cases)    esac
        }
        _settle "$@"
        """
    }
}

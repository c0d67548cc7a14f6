package cmdline

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// completionCommand is `completion bash|zsh|fish`: a script that completes the program's
// commands and flags in that shell. bash and zsh ask the program itself for the names at
// each TAB (urfave/cli's --generate-bash-completion), so they follow its version; fish gets
// the whole tree at once.
func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: `Prints a script that completes commands and flags. Load it in your shell's start-up file:
   bash:  source <(shardctl completion bash)          (in ~/.bashrc)
   zsh:   source <(shardctl completion zsh)           (in ~/.zshrc, after compinit)
   fish:  shardctl completion fish > ~/.config/fish/completions/shardctl.fish
The same works for sharddaemon.`,
		Action: func(c *cli.Context) error {
			args, err := Positional(c, "bash|zsh|fish", 1)
			if err != nil {
				return err
			}
			name := c.App.Name
			switch args[0] {
			case "bash":
				_, err = fmt.Fprint(c.App.Writer, strings.ReplaceAll(bashCompletion, "PROG", name))
			case "zsh":
				_, err = fmt.Fprint(c.App.Writer, strings.ReplaceAll(zshCompletion, "PROG", name))
			case "fish":
				var script string
				if script, err = c.App.ToFishCompletion(); err == nil {
					_, err = fmt.Fprint(c.App.Writer, script)
				}
			default:
				return Usagef("unknown shell %q: bash, zsh or fish (see '%s --help')", Truncate(args[0], 40), helpName(c))
			}
			return err
		},
	}
}

// bashCompletion asks the program for the candidates of the word under the cursor.
const bashCompletion = `# bash completion for PROG: source <(PROG completion bash)
_PROG_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}"
  local words=("${COMP_WORDS[@]:0:COMP_CWORD}")
  local opts
  if [[ "$cur" == -* ]]; then
    opts=$("${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${words[@]}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _PROG_complete PROG
`

// zshCompletion does the same for zsh; it falls back to file names when the program
// proposes nothing (a flag's value).
const zshCompletion = `#compdef PROG
# zsh completion for PROG: source <(PROG completion zsh)
_PROG_complete() {
  local -a opts
  local cur=${words[CURRENT]}
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(${words[1,CURRENT-1]} $cur --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[1,CURRENT-1]} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ -n "${opts[1]}" ]]; then
    compadd -- "${opts[@]}"
  else
    _files
  fi
}
compdef _PROG_complete PROG
`

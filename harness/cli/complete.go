package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// lpModes are the values of --lp-mode.
var lpModes = []string{collectives.LPModeRCCLX, collectives.LPModeScaled}

// AddCompletions lets a shell complete the values of -d, -o, --engine and --lp-mode (through cobra's
// "completion bash|zsh|fish" command). --engine takes a comma list: each name completes after a comma.
func AddCompletions(cmd *cobra.Command, engineNames []string) {
	var dtypes, ops []string
	for _, d := range collectives.AllDTypes() {
		dtypes = append(dtypes, d.String())
	}
	for _, op := range collectives.AllOps() {
		ops = append(ops, op.String())
	}
	_ = cmd.RegisterFlagCompletionFunc("datatype", cobra.FixedCompletions(append(dtypes, "all"), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("op", cobra.FixedCompletions(append(ops, "all"), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("lp-mode", cobra.FixedCompletions(lpModes, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("engine", func(_ *cobra.Command, _ []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
		done := typed[:strings.LastIndex(typed, ",")+1]
		var out []cobra.Completion
		for _, n := range engineNames {
			out = append(out, done+n)
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
}

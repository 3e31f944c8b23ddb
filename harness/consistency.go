package harness

import (
	"fmt"
	"slices"

	"github.com/spf13/pflag"

	"github.com/rcclx-tests/rcclx-tests/engines"
	"github.com/rcclx-tests/rcclx-tests/harness/cli"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
)

// parseEnv is the process environment as the checks at parse time read it (none where the app has none).
func (a *app) parseEnv() func(string) string {
	if a.getenv == nil {
		return func(string) string { return "" }
	}
	return a.getenv
}

// checkAutoInList refuses an engine list where auto names an engine the list names too (--engine auto,host
// on a machine without a GPU would run the host engine twice and pool both runs as one).
func (a *app) checkAutoInList(fs *pflag.FlagSet, o *plan.Options) error {
	if len(o.Engines) < 2 || !slices.Contains(o.Engines, engines.Auto) {
		return nil
	}
	if picked, _ := a.readers(engines.Auto); len(picked) == 1 && slices.Contains(o.Engines, picked[0]) {
		return cli.BadValue(fs, "engine", fmt.Sprintf("names %s twice (auto is %s here)", picked[0], picked[0]))
	}
	return nil
}

package report

import (
	"fmt"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// TimeoutLine is the one line printed for a timeout; size is the row's size column, or -1 when unknown. It
// names the ranks that never arrived when the engine knows them, else the rank that gave up waiting.
func TimeoutLine(c *collectives.Collective, te *collectives.TimeoutError, size int64) string {
	if len(te.Processes) > 0 {
		return fmt.Sprintf("timeout: %s %s did not answer at %s size %d (process %d waited in %s) after %v",
			collectives.ProcessesWord(te.Processes), collectives.JoinRanks(te.Processes), c.Name, size, te.Rank,
			te.Phase, te.After)
	}
	if len(te.Missing) > 0 {
		return fmt.Sprintf("timeout: %s %s did not arrive at %s size %d (rank %d waited in phase %s) after %v",
			collectives.RanksWord(te.Missing), collectives.JoinRanks(te.Missing), c.Name, size, te.Rank, te.Phase,
			te.After)
	}
	return fmt.Sprintf("timeout: rank %d %s size %d phase %s after %v", te.Rank, c.Name, size, te.Phase, te.After)
}

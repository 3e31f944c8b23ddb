package plan

// Args are the binary and every flag value that shapes the run, as each process must agree on them: the
// engines index each other's buffers by their own sizes, and call counts must match.
type Args struct {
	Binary string
	Flags  [][2]string // display name ("-d/--datatype"), value
	// Switches are the RCCLX switches (the variables of collectives.PolicyFromEnv) set in this process's
	// environment: a collective whose algorithm differs between processes hangs or times out.
	Switches map[string]string
	Free     []string `json:"-"` // the per-process flags a user sets, as named in a refusal ("-J", "--csv")
}

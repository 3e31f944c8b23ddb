package results

// Facts is what a record states about its run, for the titles and labels of plots: the collective, its types
// and reductions (comma lists), the rank count, the engine, the library version code, the GPU model and -G.
// A field the record does not state is "".
type Facts struct {
	Collective, Types, Ops, Ranks, Engine, Library, GPU, Graph string
}

// FactsOf reads rec's facts the way the gate compares two sides.
func FactsOf(rec *Record) Facts {
	s, c := shapeOf([]*Record{rec})
	return Facts{Collective: s.collective, Types: s.types, Ops: s.ops, Ranks: s.ranks, Engine: c.engine,
		Library: c.library, GPU: c.gpu, Graph: c.graph}
}

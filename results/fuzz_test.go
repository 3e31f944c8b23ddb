package results

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the loaders: they must never panic,
// errors must be one line, and what they accept must marshal to JSON and
// survive compare and gate. Seeds: testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("size,time,inplace\n8,1.5,0\n8,1.5,1\n"))
	f.Add([]byte("# x\n 8 2 float sum -1 18.6 0.00 0.00 0 18.77 0.00 0.00 N/A\n"))
	f.Add([]byte("[\n{\"numCycle\":0, \"name\":\"AllReduce\", \"gpus\":2, \"size\":8, \"type\":\"float\", \"redop\":\"sum\", \"inPlace\":0, \"time\":1.500000, \"algBw\":0.000005, \"busBw\":0.000005, \"wrong\":\"N/A\"}\n]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := Parse("fuzz", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if _, err := json.Marshal(rec); err != nil {
			t.Fatalf("accepted record does not marshal: %v", err)
		}
		if err := Compare(io.Discard, []Run{{"a", rec}, {"b", rec}}, CompareOptions{}); err != nil {
			t.Fatalf("compare: %v", err)
		}
		rep, err := Gate([]*Record{rec}, []*Record{rec}, GateOptions{Threshold: 0.1, Metric: MetricBusBW})
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.Write(io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}

package simulator

import (
	"io"
	"os"
	"testing"

	"github.com/shardmesh/shardmesh/passivation"
)

// BenchmarkSimulatePassivation: what `shardctl sim passivation --strategy w-tinylfu` does
// with a trace — read it (gzip, parse) and replay it through Window-TinyLFU with hill
// climbing, 10 regions, 100 shards, 100,000 entities per region — reported as accesses per
// second, trace reading included. The trace is SHARDMESH_SIM_TRACE (LIRS format, plain or
// gzip); without it, loop.trace from the shared traces ten times over (one gzip stream of
// ten members, 5,055,000 accesses), when present.
func BenchmarkSimulatePassivation(b *testing.B) {
	path := os.Getenv("SHARDMESH_SIM_TRACE")
	repeat := 1
	if path == "" {
		path, repeat = "/work/shared/traces/loop.trace.gz", 10
	}
	if _, err := os.Stat(path); err != nil {
		b.Skipf("no trace (set SHARDMESH_SIM_TRACE): %v", err)
	}
	var accesses int64
	for range b.N {
		r, closeAll := openRepeated(b, path, repeat)
		trace, err := LoadTrace(r, LIRS)
		closeAll()
		if err != nil {
			b.Fatal(err)
		}
		st, err := RunTrace(Config{Settings: passivation.DefaultStrategy(), Regions: 10, Shards: 100}, trace)
		if err != nil {
			b.Fatal(err)
		}
		accesses += st.Accesses
	}
	b.ReportMetric(float64(accesses)/b.Elapsed().Seconds(), "accesses/s")
}

// openRepeated returns the file at path n times over, as one reader.
func openRepeated(b *testing.B, path string, n int) (io.Reader, func()) {
	var files []*os.File
	var readers []io.Reader
	for range n {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		files = append(files, f)
		readers = append(readers, f)
	}
	return io.MultiReader(readers...), func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
}

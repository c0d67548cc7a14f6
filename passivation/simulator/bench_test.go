package simulator

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/shardmesh/shardmesh/passivation"
)

// BenchmarkSimulatePassivation: what `shardctl sim passivation --strategy w-tinylfu` does
// with a trace — read it (gzip, parse) and replay it through Window-TinyLFU with hill
// climbing, 10 regions, 100 shards, 100,000 entities per region — reported as accesses per
// second, trace reading included. The trace is SHARDMESH_SIM_TRACE (LIRS format, plain or
// gzip); without it, loop.trace from the shared traces ten times over (one gzip stream of
// ten members, 5,055,000 accesses), when present, else a made-up trace of as many accesses
// (a loop over 10,000 ids with a skewed tail, as LIRS text).
func BenchmarkSimulatePassivation(b *testing.B) {
	path := os.Getenv("SHARDMESH_SIM_TRACE")
	repeat := 1
	if path == "" {
		path, repeat = "../../../shared/traces/loop.trace.gz", 10 // shared/ beside the repository
	}
	var made []byte
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("SHARDMESH_SIM_TRACE") != "" {
			b.Fatal(err)
		}
		made = madeUpTrace(5_055_000)
	}
	var accesses int64
	for range b.N {
		var trace *Trace
		var err error
		if made != nil {
			trace, err = LoadTrace(bytes.NewReader(made), LIRS)
		} else {
			r, closeAll := openRepeated(b, path, repeat)
			trace, err = LoadTrace(r, LIRS)
			closeAll()
		}
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

// madeUpTrace returns n accesses in LIRS format: a loop over 10,000 block ids, every
// fourth access to one of 1,000,000 others, skewed towards the small ones.
func madeUpTrace(n int) []byte {
	var b []byte
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		id := uint64(i % 10_000)
		if i%4 == 3 {
			id = 10_000 + uint64(rnd.ExpFloat64()*50_000)%1_000_000
		}
		b = strconv.AppendUint(b, id, 10)
		b = append(b, '\n')
	}
	return b
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

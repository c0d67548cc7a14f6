package workload

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"
)

// Result is one peer's -json output.
type Result struct {
	Peer       string    `json:"peer"`
	Module     string    `json:"module"`
	Runs       []float64 `json:"runs_msgs_per_s"`
	Median     float64   `json:"median_msgs_per_s"`
	Messages   int       `json:"messages"`
	Targets    int       `json:"targets"`
	PayloadLen int       `json:"payload_bytes"`
}

// Main parses the command line (-n, -runs, -json) and runs the workload with run, which
// returns messages processed per second; it prints the median and exits.
func Main(peer, module string, run func(Workload) (float64, error)) {
	n := flag.Int("n", 1_000_000, "messages per run")
	runs := flag.Int("runs", 3, "runs (the median is reported)")
	asJSON := flag.Bool("json", false, "print one JSON object instead of text")
	flag.Parse()
	if *n < 1000 || *runs < 1 {
		fmt.Fprintf(os.Stderr, "%s: -n must be at least 1000 and -runs at least 1\n", peer)
		os.Exit(2)
	}
	w := Workload{Messages: *n, Targets: 1000, Payload: make([]byte, PayloadSize), Window: Window}
	res := Result{Peer: peer, Module: module, Messages: w.Messages, Targets: w.Targets, PayloadLen: PayloadSize}
	for range *runs {
		rate, err := run(w)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", peer, err)
			os.Exit(1)
		}
		res.Runs = append(res.Runs, rate)
		time.Sleep(200 * time.Millisecond) // let the previous run's connections wind down
	}
	res.Median = median(res.Runs)
	if *asJSON {
		b, _ := json.Marshal(res)
		fmt.Println(string(b))
		return
	}
	fmt.Printf("%s remote tell: %.0f msgs/s (median of %.0f)\n", peer, res.Median, res.Runs)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

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
	Mode       string    `json:"mode"` // tell or ask
	Runs       []float64 `json:"runs_msgs_per_s,omitempty"`
	Median     float64   `json:"median_msgs_per_s,omitempty"`
	P50        float64   `json:"median_ask_p50_us,omitempty"` // ask: medians over the runs
	P99        float64   `json:"median_ask_p99_us,omitempty"`
	Messages   int       `json:"messages"`
	Targets    int       `json:"targets"`
	PayloadLen int       `json:"payload_bytes"`
}

// Main parses the command line (-mode, -n, -runs, -json) and runs the workload: tell
// returns messages processed per second; ask returns the latencies of sequential asks. It
// prints the medians over the runs and exits.
func Main(peer, module string, tell func(Workload) (float64, error), ask func(Workload) (Latencies, error)) {
	mode := flag.String("mode", "tell", "tell (one-way throughput) or ask (request/response latency)")
	n := flag.Int("n", 0, "messages per run (default 1,000,000 to tell, 20,000 to ask)")
	runs := flag.Int("runs", 3, "runs (the median is reported)")
	asJSON := flag.Bool("json", false, "print one JSON object instead of text")
	flag.Parse()
	if *n == 0 {
		*n = map[string]int{"tell": 1_000_000, "ask": 20_000}[*mode]
	}
	if (*mode != "tell" && *mode != "ask") || *n < 1000 || *runs < 1 {
		fmt.Fprintf(os.Stderr, "%s: -mode must be tell or ask, -n at least 1000 and -runs at least 1\n", peer)
		os.Exit(2)
	}
	w := Workload{Messages: *n, Targets: 1000, Payload: make([]byte, PayloadSize), Window: Window}
	res := Result{Peer: peer, Module: module, Mode: *mode, Messages: w.Messages, Targets: w.Targets, PayloadLen: PayloadSize}
	if *mode == "ask" {
		w.Targets, res.Targets, res.PayloadLen = AskTargets, AskTargets, AskPayloadSize
	}
	var p50s, p99s []float64
	for range *runs {
		var err error
		if *mode == "tell" {
			var rate float64
			if rate, err = tell(w); err == nil {
				res.Runs = append(res.Runs, rate)
			}
		} else {
			var l Latencies
			if l, err = ask(w); err == nil {
				p50s, p99s = append(p50s, l.Percentile(0.5)), append(p99s, l.Percentile(0.99))
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", peer, err)
			os.Exit(1)
		}
		time.Sleep(200 * time.Millisecond) // let the previous run's connections wind down
	}
	if *mode == "tell" {
		res.Median = median(res.Runs)
	} else {
		res.P50, res.P99 = median(p50s), median(p99s)
	}
	if *asJSON {
		b, _ := json.Marshal(res)
		fmt.Println(string(b))
		return
	}
	if *mode == "tell" {
		fmt.Printf("%s remote tell: %.0f msgs/s (median of %.0f)\n", peer, res.Median, res.Runs)
		return
	}
	fmt.Printf("%s remote ask: p50 %.1f µs, p99 %.1f µs (medians of %d runs)\n", peer, res.P50, res.P99, *runs)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

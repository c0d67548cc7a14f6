package main

import (
	"math"
	"strings"
	"testing"
)

func TestCounterApply(t *testing.T) {
	for _, c := range []struct {
		n    int64
		msg  string
		want int64
		err  string
	}{
		{0, "inc", 1, ""},
		{5, "dec 2", 3, ""},
		{5, " get ", 5, ""},
		{math.MaxInt64 - 1, "inc", math.MaxInt64, ""},
		{math.MaxInt64, "inc", math.MaxInt64, "past the range"},
		{math.MinInt64, "dec", math.MinInt64, "past the range"},
		{-1, "dec 9223372036854775807", math.MinInt64, ""},
		{0, "dec -9223372036854775808", 0, "cannot be negated"},
		{0, "inc 99999999999999999999", 0, "not a 64-bit integer"},
		{0, "frobnicate", 0, `unknown command "frobnicate"`},
		{0, "get 3", 0, "unknown command"},
	} {
		ct := &counter{n: c.n}
		got, err := ct.apply(c.msg)
		if c.err == "" && (err != nil || got != c.want) || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || got != c.n) {
			t.Errorf("%d %q: %d, %v; want %d, %q", c.n, c.msg, got, err, c.want, c.err)
		}
	}
}

func TestCounterCodecRefusesUnknownCommands(t *testing.T) {
	for msg, ok := range map[string]bool{"inc": true, "dec 3": true, "get": true, journalStop: true, "frobnicate": false, "inc x": false, "inc-after 5s": true, "inc-after soon": false, "inc-after -1s": false} {
		if _, err := (counterCodec{}).Unmarshal([]byte(msg)); (err == nil) != ok {
			t.Errorf("%q: %v", msg, err)
		}
	}
}

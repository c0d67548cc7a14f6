package simulator

import (
	"bytes"
	"compress/gzip"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadTrace(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		in     string
		want   []string
	}{
		{"lirs with markers, blank lines and CRLF", LIRS, "1\r\n2\r\n*\r\n\r\n3\r\n1\n", []string{"1", "2", "3", "1"}},
		{"arc expands runs", ARC, "10 3 0 0\n\n7 1 0 0\n100 0 0 0\n", []string{"10", "11", "12", "7"}},
		{"simple keeps any text", Simple, "user-1\n\n  user 2 \nuser-1\n", []string{"user-1", "user 2", "user-1"}},
	}
	for _, tc := range tests {
		for _, compressed := range []bool{false, true} {
			in := []byte(tc.in)
			if compressed {
				in = gzipped(t, tc.in)
			}
			got, err := ReadTrace(bytes.NewReader(in), tc.format)
			if err != nil {
				t.Fatalf("%s (gzip %v): %v", tc.name, compressed, err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("%s (gzip %v): %q, want %q", tc.name, compressed, got, tc.want)
			}
		}
	}
}

func TestReadTraceRejectsBadInput(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		in     []byte
		want   string
	}{
		{"arc read as lirs", LIRS, []byte("1\n10 3 0 0\n"), `line 2: "10 3 0 0" is not a LIRS block id`},
		{"arc without a count", ARC, []byte("10\n"), `line 1: "10" is not an ARC line`},
		{"arc count not a number", ARC, []byte("10 x 0 0\n"), `line 1: ARC count "x"`},
		{"arc start not a number", ARC, []byte("a 1 0 0\n"), `line 1: ARC start "a"`},
		{"truncated gzip", Simple, gzipped(t, strings.Repeat("12345\n", 10000))[:100], "unexpected EOF"},
	}
	for _, tc := range tests {
		_, err := ReadTrace(bytes.NewReader(tc.in), tc.format)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range []Format{LIRS, ARC, Simple} {
		if got, err := ParseFormat(strings.ToUpper(f.String())); err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %v, %v", f, got, err)
		}
	}
	if _, err := ParseFormat("csv"); err == nil || !strings.Contains(err.Error(), "want lirs, arc or simple") {
		t.Errorf("ParseFormat(csv) = %v", err)
	}
}

// LoadTrace reads what ReadTrace reads, as dense indexes: the same accesses in order, each
// distinct id once, numbered by first access.
func TestLoadTraceMatchesReadTrace(t *testing.T) {
	in := "5\n3\n5\n*\n18446744073709551615\n3\n0\n"
	trace, err := LoadTrace(bytes.NewReader(gzipped(t, in)), LIRS)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"5", "3", "18446744073709551615", "0"}; !slices.Equal(trace.IDs, want) {
		t.Fatalf("ids %q, want %q", trace.IDs, want)
	}
	if want := []uint32{0, 1, 0, 2, 1, 3}; !slices.Equal(trace.Accesses, want) {
		t.Fatalf("accesses %v, want %v", trace.Accesses, want)
	}
	if _, err := LoadTrace(strings.NewReader("18446744073709551616\n"), LIRS); err == nil || !strings.Contains(err.Error(), "not a LIRS block id") {
		t.Fatalf("a block id above 2^64-1: %v", err)
	}
}

var errTooLong = errors.New("too long")

// FuzzLoadTrace: for any input, LoadTrace and ReadTrace agree (the same accesses or both an
// error), and every LIRS id LoadTrace accepts is what strconv.ParseUint accepts.
func FuzzLoadTrace(f *testing.F) {
	for _, s := range []string{"1\n2\n*\n1\n", "10 3 0 0\n7 1 0 0\n", "user-1\n user 2 \n", "99999999999999999999\n", "+1\n", "-0\n", "", "\r\n\r\n"} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, in []byte, format uint8) {
		fm := Format(format%3 + 1) // LIRS, ARC or Simple
		n := 0
		if err := ScanTrace(bytes.NewReader(in), fm, func(string) error {
			if n++; n > 100_000 {
				return errTooLong
			}
			return nil
		}); errors.Is(err, errTooLong) {
			t.Skip("an ARC run of more than 100,000 accesses: slow, not more telling")
		}
		ids, rerr := ReadTrace(bytes.NewReader(in), fm)
		trace, lerr := LoadTrace(bytes.NewReader(in), fm)
		if (rerr == nil) != (lerr == nil) {
			t.Fatalf("ReadTrace error %v, LoadTrace error %v", rerr, lerr)
		}
		if rerr != nil {
			if rerr.Error() != lerr.Error() {
				t.Fatalf("ReadTrace error %q, LoadTrace error %q", rerr, lerr)
			}
			return
		}
		if len(ids) != len(trace.Accesses) {
			t.Fatalf("%d accesses read, %d loaded", len(ids), len(trace.Accesses))
		}
		for k, id := range ids {
			if got := trace.IDs[trace.Accesses[k]]; got != id {
				t.Fatalf("access %d: %q loaded, %q read", k, got, id)
			}
			if fm == LIRS {
				if _, err := strconv.ParseUint(id, 10, 64); err != nil {
					t.Fatalf("LIRS id %q accepted: %v", id, err)
				}
			}
		}
	})
}

package simulator

import (
	"bytes"
	"compress/gzip"
	"slices"
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
